#include "cupti/buffer_pool.h"

#include <cstdlib>

namespace loupe::prof::cupti {

BufferPool::~BufferPool() {
  for (uint8_t* b : kept_) std::free(b);
}

uint8_t* BufferPool::take() {
  {
    std::lock_guard lock(mu_);
    if (!kept_.empty()) {
      uint8_t* b = kept_.back();
      kept_.pop_back();
      return b;
    }
  }
  auto* b = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  if (b != nullptr) {
    std::lock_guard lock(mu_);
    ++allocated_;
  }
  return b;
}

void BufferPool::give_back(uint8_t* buffer) {
  if (buffer == nullptr) return;
  {
    std::lock_guard lock(mu_);
    if (reuse_ && kept_.size() < kKept) {
      kept_.push_back(buffer);
      return;
    }
    ++freed_;
  }
  std::free(buffer);
}

uint64_t BufferPool::allocated() const {
  std::lock_guard lock(mu_);
  return allocated_;
}

uint64_t BufferPool::live() const {
  std::lock_guard lock(mu_);
  return allocated_ - freed_;
}

}  // namespace loupe::prof::cupti
