// Collects what NVIDIA GPUs did, from CUPTI's activity records, into the
// active capture: kernels, copies and memsets with the device's own times,
// the runtime and driver API calls that launched them, synchronisation,
// device memory allocations, CUPTI's own overhead, and NVTX ranges. Times
// are CUPTI's, converted onto the trace's clock (CUPTI is given
// CLOCK_MONOTONIC as its timestamp source).
//
// CUPTI is switched on by the first collector of a process and stays on
// (switching it on is its largest cost); what it records while no
// collector runs is dropped. LOUPE_CUPTI_KEEP_ON=0 switches it off at each
// collector's end instead; docs/gpu.md lists the other knobs.
//
// Built without the CUDA toolkit, start() always returns nullptr and says
// why, so that callers need no #ifdef.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace loupe::prof {

// What CUPTI cost this process so far, for benchmarks and tests.
struct CuptiStats {
  uint64_t times_switched_on = 0;  // activity recording enabled (once, unless not kept on)
  uint64_t buffers_allocated = 0;  // activity buffers allocated, ever
  uint64_t buffers_live = 0;       // of those, not freed: lent to CUPTI or kept for reuse
  uint64_t records_dropped = 0;    // recorded while no collector ran
};

struct CuptiOptions {
  // How often buffered records are handed to the capture.
  std::chrono::milliseconds flush_interval{250};
};

class CuptiCollector {
 public:
  // Starts collecting into whatever capture is active. Returns nullptr and
  // sets `why_not` when CUPTI cannot be used: a build without CUDA, no
  // driver or GPU, or another tool (Nsight Systems, Nsight Compute) already
  // holding CUPTI. The program runs on either way.
  static std::unique_ptr<CuptiCollector> start(const CuptiOptions& options, std::string* why_not);
  ~CuptiCollector();  // flushes everything and stops
  CuptiCollector(const CuptiCollector&) = delete;
  CuptiCollector& operator=(const CuptiCollector&) = delete;

  // Hands every record CUPTI holds to the capture now.
  void flush();

  // Links the device work launched between push and pop to a loupe
  // correlation id (the runtime's launch of the operation).
  static void push_correlation(uint64_t id);
  static void pop_correlation();

  static CuptiStats stats();

  // A GPU that the loupe runtime drives and records itself. CUPTI's records
  // of it are renumbered to the runtime's trace device (and, for streams
  // adopted here, the runtime's stream numbers); its allocation records
  // are left out, since the runtime's caching allocator records what it
  // reserves and hands out, with call sites. `cuda_stream` is a
  // cudaStream_t. Adoptions last for the process.
  static void adopt_device(uint32_t cuda_device, uint32_t trace_device);
  // A GPU whose memory a framework's allocator records itself (PyTorch's
  // CUDA caching allocator history: each block with its stack, the
  // segments, the errors): while `on`, CUPTI's allocation records of it
  // (cudaMalloc and cudaFree) are left out, not to be counted twice.
  static void leave_memory_to_framework(uint32_t cuda_device, bool on);
  static void adopt_stream(uint32_t cuda_device, void* cuda_stream, uint32_t trace_stream);

  struct Impl;

 private:
  explicit CuptiCollector(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace loupe::prof
