#include "backend/cpu/kernels.h"

#include <type_traits>

extern "C" void openblas_set_num_threads(int);

namespace loupe::rt::backend::cpu {

void init_kernels() {
  // One BLAS thread per call: a stream's worker is the device's execution
  // unit, and concurrent streams must not oversubscribe the cores.
  static bool once = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)once;
}

void run_kernel(const exec::KernelSpec& spec, const std::vector<void*>& buffers) {
  std::visit(
      [&](const auto& k) {
        using K = std::decay_t<decltype(k)>;
        if constexpr (std::is_same_v<K, exec::FusedKernel>) run_fused(k, buffers);
        else if constexpr (std::is_same_v<K, exec::MatmulKernel>) run_matmul(k, buffers);
        else if constexpr (std::is_same_v<K, exec::GatherKernel>) run_gather(k, buffers);
        else if constexpr (std::is_same_v<K, exec::ScatterAddKernel>) run_scatter_add(k, buffers);
        else if constexpr (std::is_same_v<K, exec::ConcatKernel>) run_concat(k, buffers);
        else if constexpr (std::is_same_v<K, exec::PadKernel>) run_pad(k, buffers);
        else if constexpr (std::is_same_v<K, exec::AttentionKernel>) run_attention(k, buffers);
        else if constexpr (std::is_same_v<K, exec::AttentionBwdKernel>) run_attention_bwd(k, buffers);
      },
      spec.body);
}

}  // namespace loupe::rt::backend::cpu
