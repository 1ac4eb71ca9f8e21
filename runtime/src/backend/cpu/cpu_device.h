// The CPU device: a device in the GPU sense built from the host's
// resources. Its memory is an arena of its own under a caching allocator
// (capacity 2 GiB by default), separate from host arrays: data moves in and
// out only by copies on its copy stream. Kernels run on its compute stream.
#pragma once

#include <memory>

#include "backend/cpu/cpu_stream.h"
#include "exec/device_impl.h"

namespace loupe::rt::backend::cpu {

class CpuMemory final : public mem::DeviceMemory {
 public:
  void* reserve(size_t bytes) override;
  void release(void* ptr, size_t bytes) override;
};

class CpuDevice final : public exec::DeviceImpl, private mem::StreamClock {
 public:
  static constexpr int64_t kDefaultCapacity = int64_t(2) << 30;

  CpuDevice(int index, uint32_t trace_id);
  ~CpuDevice() override;

  Device handle() const override { return {DeviceType::cpu, index_}; }
  uint32_t trace_id() const override { return trace_id_; }
  exec::Stream& compute_stream() override { return *compute_; }
  exec::Stream& copy_stream() override { return *copy_; }
  mem::CachingAllocator& allocator() override { return *allocator_; }

  exec::Event launch(exec::Stream& stream, std::shared_ptr<const exec::KernelSpec> spec,
                     std::vector<void*> buffers) override;
  exec::Event copy(exec::Stream& stream, prof::CopyKind kind, void* dst, const void* src, size_t bytes,
                   std::shared_ptr<void> keep_alive, uint64_t* correlation) override;
  void synchronize() override;
  void set_memory_capacity(int64_t bytes) override;

 private:
  void register_in_trace(int64_t capacity) const;
  // Queues `t` on `s` and records its launch on the host, from `start`
  // (before the task was made) until now.
  exec::Event submit(exec::Stream& s, Task t, prof::Ticks start);
  CpuStream& stream(int index) { return index == 0 ? *compute_ : *copy_; }
  uint64_t mark(int stream) override;
  bool passed(int stream, uint64_t mark) override;
  void wait(int stream, uint64_t mark) override;

  int index_;
  uint32_t trace_id_;
  CpuMemory memory_;
  std::unique_ptr<CpuStream> compute_, copy_;
  std::unique_ptr<mem::CachingAllocator> allocator_;
};

// Bytes from LOUPE_CPU_MEMORY ("512M", "4G", "1000000"), or the default.
int64_t cpu_capacity_from_env();

}  // namespace loupe::rt::backend::cpu
