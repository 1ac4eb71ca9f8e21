// The device interface every backend implements: streams, an allocator,
// kernel launches and copies. A CUDA device slots in behind it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "exec/kernel_spec.h"
#include "exec/stream.h"
#include "loupe/prof/trace_format.h"
#include "loupe/rt/device.h"
#include "memory/caching_allocator.h"

namespace loupe::rt::exec {

class DeviceImpl {
 public:
  virtual ~DeviceImpl() = default;
  virtual Device handle() const = 0;
  virtual uint32_t trace_id() const = 0;
  virtual Stream& compute_stream() = 0;
  virtual Stream& copy_stream() = 0;
  virtual mem::CachingAllocator& allocator() = 0;

  // Queues `spec` on `stream` over device buffers (inputs then outputs) and
  // returns its completion event. Records the launch on the calling thread
  // and the kernel's execution on the device.
  virtual Event launch(Stream& stream, std::shared_ptr<const KernelSpec> spec, std::vector<void*> buffers) = 0;

  // Queues a copy. Host memory must stay valid until the copy completes:
  // `keep_alive` is held until then (a staging buffer). Returns the event
  // and sets `*correlation` to the copy's id in the trace.
  virtual Event copy(Stream& stream, prof::CopyKind kind, void* dst, const void* src, size_t bytes,
                     std::shared_ptr<void> keep_alive, uint64_t* correlation) = 0;

  // Blocks the host until all streams are idle.
  virtual void synchronize() = 0;

  // Host memory for data on its way to the device: from_host() copies the
  // caller's data into it and copy() reads from it. Page-locked on a GPU,
  // so that the upload is a real asynchronous copy; plain memory here.
  virtual std::shared_ptr<void> host_staging(size_t bytes, void** data) {
    auto v = std::make_shared<std::vector<std::byte>>(bytes);
    *data = v->data();
    return v;
  }

  // Makes the kernels of a new executable ready to launch (the CUDA device
  // compiles them with NVRTC), inside the compile's codegen phase so that
  // the compile event counts the time. Returns a line for the compile's IR
  // text, or nothing. Kernels not prepared are made ready at their first
  // launch.
  virtual std::string prepare(const std::vector<std::shared_ptr<const KernelSpec>>& specs) {
    (void)specs;
    return {};
  }

  // Bounds what the allocator may reserve. A backend also tells the trace
  // (the memory analysis compares the peak with the device's capacity).
  virtual void set_memory_capacity(int64_t bytes) { allocator().set_capacity(bytes); }
};

// The implementation behind a device handle, created on first use.
DeviceImpl& device_impl(Device device);
// Devices created so far (for synchronising them all at exit).
std::vector<DeviceImpl*> live_devices();

}  // namespace loupe::rt::exec
