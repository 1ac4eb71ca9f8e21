// What a caching allocator reserves from: a device's raw memory
// (cudaMalloc/cudaFree on a GPU, an arena of the process's memory for the
// CPU device), and the streams whose order makes freed blocks reusable.
#pragma once

#include <cstddef>
#include <cstdint>

namespace loupe::rt::mem {

class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  // A new segment of `bytes`, or nullptr when the device has no more.
  virtual void* reserve(size_t bytes) = 0;
  virtual void release(void* ptr, size_t bytes) = 0;
};

// The allocator frees blocks in stream order: a block freed by the host
// may be handed out again at once for work on the stream it was allocated
// for, because that work runs after everything queued before it. A block
// also used on other streams waits until those have passed the point of
// the free; this interface tells where that point is.
class StreamClock {
 public:
  virtual ~StreamClock() = default;
  // A mark after all work queued on `stream` so far.
  virtual uint64_t mark(int stream) = 0;
  virtual bool passed(int stream, uint64_t mark) = 0;
  // Blocks the host until `stream` has passed `mark`.
  virtual void wait(int stream, uint64_t mark) = 0;
};

}  // namespace loupe::rt::mem
