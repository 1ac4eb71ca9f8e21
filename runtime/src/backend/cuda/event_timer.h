// Device times from CUDA events, for when CUPTI cannot say (another tool
// holds it, or LOUPE_CUPTI=0): an operation is bracketed by two timing
// events, and their times are placed on the host's clock through an anchor,
// an event whose host time is known. Events measure time between each
// other only, in float milliseconds, so the anchor moves forward to each
// converted event: the distances stay short and precise. Good to about a
// microsecond, against CUPTI's nanoseconds.
#pragma once

#include <cuda_runtime_api.h>

#include <mutex>
#include <utility>

#include "backend/cuda/cuda_stream.h"
#include "loupe/prof/clock.h"

namespace loupe::rt::backend::cuda {

class EventTimer {
 public:
  // Records the first anchor on `stream` and waits for it (the device must
  // be current).
  EventTimer(EventPool& pool, cudaStream_t stream);

  // The host-clock ticks at which two completed events happened.
  std::pair<prof::Ticks, prof::Ticks> times(cudaEvent_t start, const EventHandle& end);

 private:
  double ticks_per_ns();

  std::mutex mu_;
  EventHandle anchor_;
  double anchor_ticks_ = 0;
  prof::Ticks t0_ = 0;
  int64_t ns0_ = 0;
  double rate_ = 1.0;
};

}  // namespace loupe::rt::backend::cuda
