// The recorder's clock. Events are stamped in raw ticks, read once per event
// with the cheapest monotonic counter the machine has (the invariant TSC on
// x86-64, about 8 ns against about 18 ns for clock_gettime), and converted to
// nanoseconds of CLOCK_MONOTONIC off the hot path, by the capture's writer.
#pragma once

#include <cstdint>
#include <ctime>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace loupe::prof {

using Ticks = uint64_t;

namespace detail {
// True when ticks are TSC cycles; false when they are already CLOCK_MONOTONIC
// nanoseconds (no invariant TSC, or not x86-64). Decided once at start-up.
extern const bool g_ticks_are_tsc;
}  // namespace detail

// CLOCK_MONOTONIC in nanoseconds.
inline int64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// The current time in ticks (see TickConverter for the conversion).
inline Ticks ticks_now() {
#if defined(__x86_64__)
  if (detail::g_ticks_are_tsc) return __rdtsc();
#endif
  return Ticks(monotonic_ns());
}

// The tick count at a CLOCK_MONOTONIC time (monotonic_ns(), Python's
// time.monotonic_ns()), for events timed with that clock rather than with
// ticks_now(): exact when ticks are nanoseconds; with the TSC, extrapolated
// from a fresh (ticks, ns) pair at the start-up estimate of the tick rate,
// so a time a second back may be off by a few microseconds.
Ticks ticks_at_monotonic_ns(int64_t ns);

// Converts ticks to CLOCK_MONOTONIC nanoseconds. It is fed calibration points
// (a tick count and the monotonic time read together) and maps ticks with the
// long-run rate through the latest point, so that the mapping is exact at
// each point and does not drift over a long capture.
class TickConverter {
 public:
  TickConverter();
  // Reads a fresh (ticks, monotonic ns) pair and makes it the anchor.
  void calibrate();
  int64_t to_monotonic_ns(Ticks t) const;

 private:
  Ticks first_ticks_ = 0, anchor_ticks_ = 0;
  int64_t first_ns_ = 0, anchor_ns_ = 0;
  double ns_per_tick_ = 1.0;
};

}  // namespace loupe::prof
