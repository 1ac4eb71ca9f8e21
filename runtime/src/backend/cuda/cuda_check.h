// Errors from the CUDA runtime as exceptions a user can act on: what was
// being done, and CUDA's name and text for what went wrong.
#pragma once

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "loupe/rt/errors.h"

namespace loupe::rt::backend::cuda {

inline std::string cuda_error_text(cudaError_t e) {
  return fmt::format("{} ({})", cudaGetErrorString(e), cudaGetErrorName(e));
}

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw RuntimeError(fmt::format("CUDA error in {}: {}", what, cuda_error_text(e)));
}

}  // namespace loupe::rt::backend::cuda
