// Matrix products through cuBLAS, loaded at run time (backend/dynamic_library.h).
// Row-major C = op(A) op(B) is column-major Cᵀ = op(B)ᵀ op(A)ᵀ: the
// operands swap places and keep their leading dimensions.
//
// f32 products are exact FP32 by default, so that the CPU device's
// tolerances hold; LOUPE_CUDA_TF32=1 allows TF32 tensor cores (10-bit
// mantissas: relative errors near 1e-3). f16 and bf16 products accumulate
// in f32.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "exec/kernel_spec.h"

namespace loupe::rt::backend::cuda {

class CublasMatmul {
 public:
  // Loads cuBLAS and creates a handle on the current device. Throws
  // RuntimeError when cuBLAS cannot be loaded.
  CublasMatmul();
  ~CublasMatmul();
  CublasMatmul(const CublasMatmul&) = delete;
  CublasMatmul& operator=(const CublasMatmul&) = delete;

  // Queues k over buffers a, b, c on `stream` (the device must be current).
  void run(const exec::MatmulKernel& k, const std::vector<void*>& buffers, cudaStream_t stream);
  bool tf32() const { return tf32_; }

  struct Api;

 private:
  Api* api_;
  void* handle_ = nullptr;
  bool tf32_ = false;
};

}  // namespace loupe::rt::backend::cuda
