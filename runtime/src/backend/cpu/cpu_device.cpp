#include "backend/cpu/cpu_device.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <cstdlib>
#include <new>

#include "backend/cpu/blas.h"
#include "backend/cpu/kernels.h"
#include "exec/host_records.h"

namespace loupe::rt::backend::cpu {

void* CpuMemory::reserve(size_t bytes) {
  // Segments are whole 2 MiB huge pages where the kernel allows them (as
  // GPU drivers back device memory with large pages): matrix kernels on
  // 4 KiB pages run up to twice slower, from TLB misses. Pages are faulted
  // in lazily, so a reservation costs nothing until touched.
  constexpr size_t kHuge = size_t(2) << 20;
  size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
  void* p = std::aligned_alloc(kHuge, rounded);
#if defined(MADV_HUGEPAGE)
  if (p != nullptr) ::madvise(p, rounded, MADV_HUGEPAGE);
#endif
  return p;
}

void CpuMemory::release(void* ptr, size_t) { std::free(ptr); }

int64_t cpu_capacity_from_env() {
  const char* env = std::getenv("LOUPE_CPU_MEMORY");
  if (env == nullptr || *env == 0) return CpuDevice::kDefaultCapacity;
  char* end = nullptr;
  double v = std::strtod(env, &end);
  if (end == env || v <= 0) return CpuDevice::kDefaultCapacity;
  switch (*end) {
    case 'k':
    case 'K': v *= 1024; break;
    case 'm':
    case 'M': v *= 1024 * 1024; break;
    case 'g':
    case 'G': v *= 1024.0 * 1024 * 1024; break;
    default: break;
  }
  return int64_t(v);
}

CpuDevice::CpuDevice(int index, uint32_t trace_id) : index_(index), trace_id_(trace_id) {
  init_kernels();
  std::string name = fmt::format("cpu{}", index);
  compute_ = std::make_unique<CpuStream>(trace_id, 0, name + " compute");
  copy_ = std::make_unique<CpuStream>(trace_id, 1, name + " copy");
  int64_t capacity = cpu_capacity_from_env();
  allocator_ = std::make_unique<mem::CachingAllocator>(handle(), trace_id, memory_,
                                                       static_cast<mem::StreamClock*>(this), capacity);
  register_in_trace(capacity);
  prof::register_stream(trace_id, 0, "compute");
  prof::register_stream(trace_id, 1, "copy");
}

void CpuDevice::register_in_trace(int64_t capacity) const {
  prof::register_device({.id = trace_id_,
                         .name = fmt::format("cpu:{} (loupe CPU device)", index_),
                         .kind = prof::DeviceKind::cpu,
                         .memory_capacity = capacity,
                         .copy_bandwidth = 0,
                         .detail = blas().description()});
}

void CpuDevice::set_memory_capacity(int64_t bytes) {
  allocator_->set_capacity(bytes);
  register_in_trace(bytes);
}

CpuDevice::~CpuDevice() {
  synchronize();
  compute_.reset();
  copy_.reset();
}

exec::Event CpuDevice::launch(exec::Stream& s, std::shared_ptr<const exec::KernelSpec> spec,
                              std::vector<void*> buffers) {
  prof::Ticks start = prof::ticks_now();
  Task t;
  t.kind = Task::Kind::kernel;
  t.name = spec->name;
  t.correlation = prof::next_correlation_id();
  t.spec = std::move(spec);
  t.buffers = std::move(buffers);
  return submit(s, std::move(t), start);
}

exec::Event CpuDevice::copy(exec::Stream& s, prof::CopyKind kind, void* dst, const void* src, size_t bytes,
                            std::shared_ptr<void> keep_alive, uint64_t* correlation) {
  prof::Ticks start = prof::ticks_now();
  Task t;
  t.kind = Task::Kind::copy;
  t.name = exec::copy_name(kind);
  t.correlation = prof::next_correlation_id();
  t.dst = dst;
  t.src = src;
  t.bytes = bytes;
  t.copy_kind = kind;
  t.keep_alive = std::move(keep_alive);
  if (correlation) *correlation = t.correlation;
  return submit(s, std::move(t), start);
}

exec::Event CpuDevice::submit(exec::Stream& s, Task t, prof::Ticks start) {
  const char* name = t.name;
  const uint64_t correlation = t.correlation;
  uint64_t seq = stream(s.index()).enqueue(std::move(t));
  if (prof::capturing()) exec::record_launch(name, start, trace_id_, s, correlation);
  return {&s, seq};
}

void CpuDevice::synchronize() {
  compute_->synchronize();
  copy_->synchronize();
  compute_->synchronize();  // work queued behind a copy wait
}

uint64_t CpuDevice::mark(int s) { return stream(s).submitted(); }
bool CpuDevice::passed(int s, uint64_t m) { return stream(s).completed() >= m; }
void CpuDevice::wait(int s, uint64_t m) { stream(s).wait_host(m); }

}  // namespace loupe::rt::backend::cpu
