// The CUDA backend of a build without the CUDA toolkit: no devices, and a
// reason. default_device() then picks the CPU device.
#include <fmt/format.h>

#include "backend/cuda/cuda_backend.h"
#include "loupe/rt/errors.h"

namespace loupe::rt::backend::cuda {

namespace {
constexpr const char* kWhy =
    "this build of loupe has no CUDA backend (the CUDA toolkit was not found when it was configured)";
}

int device_count(std::string* why) {
  if (why) *why = kWhy;
  return 0;
}

std::shared_ptr<void> allocate_page_locked(size_t) { return nullptr; }

exec::DeviceImpl* create_device(int index, uint32_t) {
  throw RuntimeError(fmt::format("device cuda:{} is not available: {}", index, kWhy));
}

}  // namespace loupe::rt::backend::cuda
