#include "backend/cpu/kernels.h"

#include <algorithm>
#include <cstdlib>
#include <thread>
#include <type_traits>

#include "backend/cpu/blas.h"

namespace loupe::rt::backend::cpu {

void init_kernels() {
  // Matrix products use every core, as XLA's CPU backend does: the compute
  // stream is the device, and a device's kernels run on all of it.
  // LOUPE_CPU_BLAS_THREADS=N sets another count (1: each product on its
  // stream's worker alone).
  static bool once = [] {
    const char* env = std::getenv("LOUPE_CPU_BLAS_THREADS");
    const int asked = env ? std::atoi(env) : 0;
    blas().set_num_threads(asked > 0 ? asked : std::max(int(std::thread::hardware_concurrency()), 1));
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
