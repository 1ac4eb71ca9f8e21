// Memory of a GPU: what its caching allocator reserves segments from
// (cudaMalloc), and page-locked host memory for staging copies.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "memory/device_memory.h"

namespace loupe::rt::backend::cuda {

// Segments straight from cudaMalloc on one device; nullptr when the device
// has no more (the allocator then frees its cache and retries, or raises
// OutOfMemory).
class CudaMemory final : public mem::DeviceMemory {
 public:
  explicit CudaMemory(int ordinal) : ordinal_(ordinal) {}
  void* reserve(size_t bytes) override;
  void release(void* ptr, size_t bytes) override;

 private:
  int ordinal_;
};

// Page-locked host blocks, cached by power-of-two size. A copy between
// pageable host memory and a GPU is staged by the driver and blocks the
// host; from page-locked memory it is a real asynchronous copy. Uploads
// write into one of these blocks, downloads land in one and are copied out
// when the host sees the copy finished.
class PinnedPool {
 public:
  // Larger requests are not staged: pinning them would cost more than the
  // driver's own staging.
  static constexpr size_t kMaxBlock = size_t(64) << 20;
  static constexpr size_t kMaxCached = size_t(256) << 20;

  PinnedPool() = default;
  ~PinnedPool();
  PinnedPool(const PinnedPool&) = delete;
  PinnedPool& operator=(const PinnedPool&) = delete;

  // A block of at least `bytes` at *data, returned to the pool when the
  // handle is dropped; nullptr when `bytes` is too large or pinning fails.
  std::shared_ptr<void> get(size_t bytes, void** data);
  // Whether `p` lies in a block of this pool.
  bool owns(const void* p) const;

 private:
  void put(void* block, size_t size);

  mutable std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;  // by size
  std::map<const char*, size_t> blocks_;       // every block: start -> size
  size_t cached_ = 0;
};

}  // namespace loupe::rt::backend::cuda
