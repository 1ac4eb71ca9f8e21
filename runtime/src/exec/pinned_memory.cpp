#include "exec/pinned_memory.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>

#include "backend/cuda/cuda_backend.h"
#include "loupe/rt/array.h"

namespace loupe::rt::exec {

namespace {

struct Range {
  size_t bytes;
  std::weak_ptr<void> owner;
};

struct Registry {
  std::mutex mu;
  std::map<uintptr_t, Range> ranges;  // by start address
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: buffers may outlive static destructors
  return *r;
}

}  // namespace

std::shared_ptr<void> allocate_pinned(size_t bytes) {
  // With GPUs, page-locked memory from the driver, so that their copies
  // from it are truly asynchronous. The CPU device needs no page locking
  // (its copies are memcpy on a worker thread); what matters there is that
  // uploads from here are not staged.
  std::shared_ptr<void> block = backend::cuda::allocate_page_locked(bytes);
  if (block == nullptr) {
    constexpr size_t kAlign = 64;
    size_t rounded = (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
    void* p = std::aligned_alloc(kAlign, rounded);
    if (p == nullptr) throw std::bad_alloc();
    block.reset(p, [](void* q) { std::free(q); });
  }
  void* p = block.get();
  // The registry forgets the range before the memory goes.
  std::shared_ptr<void> memory(p, [block = std::move(block)](void* q) mutable {
    {
      Registry& r = registry();
      std::lock_guard lock(r.mu);
      r.ranges.erase(reinterpret_cast<uintptr_t>(q));
    }
    block.reset();
  });
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.ranges[reinterpret_cast<uintptr_t>(p)] = {bytes, memory};
  return memory;
}

std::shared_ptr<void> pinned_owner(const void* data, size_t bytes) {
  uintptr_t a = reinterpret_cast<uintptr_t>(data);
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  auto it = r.ranges.upper_bound(a);
  if (it == r.ranges.begin()) return nullptr;
  --it;
  if (a + bytes > it->first + it->second.bytes) return nullptr;
  return it->second.owner.lock();
}

}  // namespace loupe::rt::exec

namespace loupe::rt {

PinnedBuffer::PinnedBuffer(size_t bytes) : memory_(exec::allocate_pinned(bytes)), size_(bytes) {}

}  // namespace loupe::rt
