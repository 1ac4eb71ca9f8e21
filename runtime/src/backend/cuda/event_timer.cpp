#include "backend/cuda/event_timer.h"

#include "backend/cuda/cuda_check.h"

namespace loupe::rt::backend::cuda {

EventTimer::EventTimer(EventPool& pool, cudaStream_t stream) {
  anchor_ = pool.get();
  check(cudaEventRecord(anchor_.get(), stream), "cudaEventRecord");
  check(cudaEventSynchronize(anchor_.get()), "cudaEventSynchronize");
  // The anchor happened just before the host saw it: off by the wake-up.
  t0_ = prof::ticks_now();
  ns0_ = prof::monotonic_ns();
  anchor_ticks_ = double(t0_);
  // A first rate of ticks to nanoseconds, over 2 ms (1 when ticks are
  // nanoseconds already); later ones are measured over the device's life.
  int64_t dns = 0;
  prof::Ticks dt = 0;
  while (dns < 2'000'000) {
    dns = prof::monotonic_ns() - ns0_;
    dt = prof::ticks_now() - t0_;
  }
  rate_ = double(dt) / double(dns);
}

double EventTimer::ticks_per_ns() {
  int64_t dns = prof::monotonic_ns() - ns0_;
  prof::Ticks dt = prof::ticks_now() - t0_;
  return dns > 100'000'000 ? double(dt) / double(dns) : rate_;
}

std::pair<prof::Ticks, prof::Ticks> EventTimer::times(cudaEvent_t start, const EventHandle& end) {
  std::lock_guard lock(mu_);
  float from_anchor = 0, span = 0;
  cudaEventElapsedTime(&from_anchor, anchor_.get(), start);
  cudaEventElapsedTime(&span, start, end.get());
  double rate = ticks_per_ns();
  double t_start = anchor_ticks_ + double(from_anchor) * 1e6 * rate;
  double t_end = t_start + double(span) * 1e6 * rate;
  anchor_ = end;
  anchor_ticks_ = t_end;
  return {prof::Ticks(t_start), prof::Ticks(t_end)};
}

}  // namespace loupe::rt::backend::cuda
