// The CUDA backend's entry points (cuda_backend.h) in a build with the
// CUDA toolkit.
#include "backend/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <mutex>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_device.h"

namespace loupe::rt::backend::cuda {

int device_count(std::string* why) {
  static std::once_flag once;
  static int count = 0;
  static std::string reason;
  std::call_once(once, [] {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaSuccess && n > 0) {
      count = n;
      return;
    }
    int driver = 0;
    cudaDriverGetVersion(&driver);
    if (driver == 0) reason = "no NVIDIA driver is installed (libcuda.so.1 was not found)";
    else if (e == cudaSuccess || e == cudaErrorNoDevice) reason = "the NVIDIA driver sees no GPU";
    else reason = fmt::format("cudaGetDeviceCount failed: {}", cuda_error_text(e));
    cudaGetLastError();
  });
  if (why) *why = reason;
  return count;
}

std::shared_ptr<void> allocate_page_locked(size_t bytes) {
  if (device_count(nullptr) == 0) return nullptr;
  void* p = nullptr;
  if (cudaHostAlloc(&p, std::max<size_t>(bytes, 1), cudaHostAllocPortable) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return std::shared_ptr<void>(p, [](void* q) { cudaFreeHost(q); });
}

exec::DeviceImpl* create_device(int index, uint32_t trace_id) { return new CudaDevice(index, trace_id); }

}  // namespace loupe::rt::backend::cuda
