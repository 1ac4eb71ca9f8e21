// Buffer: one block of device memory, shared by the arrays that view it.
// Dropping the last reference frees the block in stream order (see
// memory/device_memory.h), so queued kernels that still read it are safe.
#pragma once

#include <cstddef>
#include <memory>
#include <source_location>

#include "exec/device_impl.h"

namespace loupe::rt::exec {

class Buffer {
 public:
  Buffer(DeviceImpl& device, mem::Block* block) : device_(device), block_(block) {}
  ~Buffer() { device_.allocator().free(block_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return block_->ptr; }
  size_t bytes() const { return block_->size; }
  DeviceImpl& device() const { return device_; }
  int stream() const { return block_->stream; }
  // Work on `stream` (other than the one it was allocated for) uses it.
  void used_on(const Stream& stream) {
    if (stream.index() != block_->stream) device_.allocator().record_use(block_, stream.index());
  }

 private:
  DeviceImpl& device_;
  mem::Block* block_;
};

inline std::shared_ptr<Buffer> allocate(DeviceImpl& device, size_t bytes, const Stream& stream, prof::CallSiteId site,
                                        const char* op = nullptr, const std::source_location* loc = nullptr) {
  mem::Block* b =
      device.allocator().allocate({.bytes = bytes, .stream = stream.index(), .site = site, .op = op, .loc = loc});
  return std::make_shared<Buffer>(device, b);
}

}  // namespace loupe::rt::exec
