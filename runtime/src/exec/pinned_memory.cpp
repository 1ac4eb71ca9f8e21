#include "exec/pinned_memory.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>

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
  // The CPU device needs no page locking (its copies are memcpy on a worker
  // thread); what matters is that uploads from here are not staged. A CUDA
  // device allocates these with cudaHostAlloc.
  constexpr size_t kAlign = 64;
  size_t rounded = (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded);
  if (p == nullptr) throw std::bad_alloc();
  std::shared_ptr<void> memory(p, [](void* q) {
    {
      Registry& r = registry();
      std::lock_guard lock(r.mu);
      r.ranges.erase(reinterpret_cast<uintptr_t>(q));
    }
    std::free(q);
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
