#include "backend/cuda/kernel_plan.h"

#include <type_traits>

namespace loupe::rt::backend::cuda {

KernelPlan plan_gather(const exec::GatherKernel& k);
KernelPlan plan_scatter_add(const exec::ScatterAddKernel& k);
KernelPlan plan_concat(const exec::ConcatKernel& k);
KernelPlan plan_pad(const exec::PadKernel& k);
KernelPlan plan_attention(const exec::AttentionKernel& k);
KernelPlan plan_attention_bwd(const exec::AttentionBwdKernel& k);

KernelPlan plan_kernel(const exec::KernelSpec& spec) {
  return std::visit(
      [](const auto& k) -> KernelPlan {
        using K = std::decay_t<decltype(k)>;
        if constexpr (std::is_same_v<K, exec::FusedKernel>) return plan_fused(k);
        else if constexpr (std::is_same_v<K, exec::MatmulKernel>) return KernelPlan{.buffers = 3};  // cuBLAS
        else if constexpr (std::is_same_v<K, exec::GatherKernel>) return plan_gather(k);
        else if constexpr (std::is_same_v<K, exec::ScatterAddKernel>) return plan_scatter_add(k);
        else if constexpr (std::is_same_v<K, exec::ConcatKernel>) return plan_concat(k);
        else if constexpr (std::is_same_v<K, exec::PadKernel>) return plan_pad(k);
        else if constexpr (std::is_same_v<K, exec::AttentionKernel>) return plan_attention(k);
        else return plan_attention_bwd(k);
      },
      spec.body);
}

}  // namespace loupe::rt::backend::cuda
