// A CUDA GPU as a runtime device: a compute and a copy stream, a caching
// allocator over cudaMalloc with the CPU device's accounting and memory
// events, page-locked staging for copies, kernels from NVRTC (generated
// from the compiler's kernel specs, compiled once per source), matrix
// products from cuBLAS and fused attention from cuDNN where it takes the
// case (cudnn_attention.h).
//
// What the trace gets: each launch and copy on the host with its
// correlation id; what the GPU ran from CUPTI when a collector runs in the
// process (the runtime starts one while a capture is active; the id is
// pushed as CUPTI's external correlation, so each kernel links to its
// launch), else from CUDA events around each operation.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "backend/cuda/cublas_matmul.h"
#include "backend/cuda/cuda_memory.h"
#include "backend/cuda/cuda_stream.h"
#include "backend/cuda/cudnn_attention.h"
#include "backend/cuda/event_timer.h"
#include "backend/cuda/kernel_plan.h"
#include "exec/device_impl.h"

namespace loupe::rt::backend::cuda {

class CudaDevice final : public exec::DeviceImpl, private mem::StreamClock {
 public:
  CudaDevice(int ordinal, uint32_t trace_id);
  ~CudaDevice() override;

  Device handle() const override { return {DeviceType::cuda, ordinal_}; }
  uint32_t trace_id() const override { return trace_id_; }
  exec::Stream& compute_stream() override { return *compute_; }
  exec::Stream& copy_stream() override { return *copy_; }
  mem::CachingAllocator& allocator() override { return *allocator_; }

  exec::Event launch(exec::Stream& stream, std::shared_ptr<const exec::KernelSpec> spec,
                     std::vector<void*> buffers) override;
  exec::Event copy(exec::Stream& stream, prof::CopyKind kind, void* dst, const void* src, size_t bytes,
                   std::shared_ptr<void> keep_alive, uint64_t* correlation) override;
  void synchronize() override;
  std::shared_ptr<void> host_staging(size_t bytes, void** data) override;
  void set_memory_capacity(int64_t bytes) override;
  std::string prepare(const std::vector<std::shared_ptr<const exec::KernelSpec>>& specs) override;

  // The compiled form of a spec.
  struct Module;
  struct Prepared {
    KernelPlan plan;
    std::vector<cudaKernel_t> kernels;  // per plan step (null for zero-fills)
    std::shared_ptr<Module> module;
    std::shared_ptr<const CudnnAttention::Plan> cudnn;  // set when cuDNN runs the kernel, not the plan
    const char* name = "";                              // the kernel's name in the trace
  };

 private:
  CudaStream& stream(int index) { return index == 0 ? *compute_ : *copy_; }
  uint64_t mark(int stream) override;
  bool passed(int stream, uint64_t mark) override;
  void wait(int stream, uint64_t mark) override;

  void make_current() const;
  void register_in_trace(int64_t capacity) const;
  // The compiled form of `spec`, compiling it on first use.
  std::shared_ptr<const Prepared> prepared(const std::shared_ptr<const exec::KernelSpec>& spec);
  std::shared_ptr<Module> module_for(const std::string& source, const char* name, bool* compiled);
  void run(const Prepared& p, const exec::KernelSpec& spec, const std::vector<void*>& buffers, CudaStream& s);
  // cuDNN's plan for an attention spec; null when loupe's kernel runs it
  // (with cuDNN's reason in `why`) or when `spec` is no attention.
  std::shared_ptr<const CudnnAttention::Plan> cudnn_plan(const exec::KernelSpec& spec, std::string* why);
  // Whether the device's times come from CUPTI now (a collector is running).
  bool cupti_times();
  // Opens an operation on `s`, under launch_mu_: when a capture times it
  // with events, the event its device time starts from (else none); when
  // CUPTI times it, CUPTI's external correlation, for the caller to pop.
  EventHandle open_op(bool capturing, bool cupti, uint64_t correlation, CudaStream& s);
  // What finishes an operation: its device times from events when CUPTI
  // is not recording them.
  CudaStream::Completion completion(const char* name, prof::DeviceOpKind kind, prof::CopyKind copy, uint64_t bytes,
                                    uint64_t correlation, const EventHandle& start, CudaStream& s);

  int ordinal_;
  uint32_t trace_id_;
  int arch_ = 0;  // compute capability, major * 10 + minor
  int sms_ = 1;   // multiprocessors, to size grid-stride launches
  std::string name_;
  int64_t total_memory_ = 0;  // the GPU's memory, as the driver reports it
  EventPool events_{false}, timing_events_{true};
  CudaMemory memory_;
  PinnedPool pinned_;
  std::unique_ptr<CudaStream> compute_, copy_;
  std::unique_ptr<mem::CachingAllocator> allocator_;
  std::unique_ptr<EventTimer> timer_;
  std::unique_ptr<CublasMatmul> cublas_;  // created on the first matmul
  std::once_flag cudnn_once_;             // cuDNN is tried on the first attention
  std::unique_ptr<CudnnAttention> cudnn_;
  std::string cudnn_off_;  // why cudnn_ is null after that
  std::mutex launch_mu_;   // a stream's launches stay in order, cuBLAS's handle is one

  std::mutex cache_mu_;
  std::unordered_map<std::string, std::shared_ptr<Module>> modules_;  // by source
  struct SpecEntry {
    std::weak_ptr<const exec::KernelSpec> spec;  // to tell a reused address
    std::shared_ptr<const Prepared> prepared;
  };
  std::unordered_map<const exec::KernelSpec*, SpecEntry> specs_;
  size_t prune_at_ = 1024;
};

}  // namespace loupe::rt::backend::cuda
