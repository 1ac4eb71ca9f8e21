#include "loupe/prof/clock.h"

#include <cmath>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace loupe::prof {

namespace {

// The TSC is usable as a clock only when it is invariant: constant rate
// across frequency changes and sleep states (CPUID 0x80000007, EDX bit 8).
bool detect_invariant_tsc() {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0x80000000u, &a, &b, &c, &d) == 0 || a < 0x80000007u) return false;
  if (__get_cpuid(0x80000007u, &a, &b, &c, &d) == 0) return false;
  return (d & (1u << 8)) != 0;
#else
  return false;
#endif
}

struct Pair {
  Ticks ticks;
  int64_t ns;
};

// A (ticks, ns) pair read as close together as the machine allows: of a few
// tries, the one whose two tick reads bracket the clock read most tightly.
Pair read_pair() {
  Pair best{0, 0};
  Ticks best_width = ~Ticks(0);
  for (int i = 0; i < 5; ++i) {
    Ticks t0 = ticks_now();
    int64_t ns = monotonic_ns();
    Ticks t1 = ticks_now();
    if (t1 - t0 < best_width) {
      best_width = t1 - t0;
      best = {t0 + (t1 - t0) / 2, ns};
    }
  }
  return best;
}

// A first estimate of the tick rate, measured once over 2 ms; the converter
// refines it with the whole capture's length as baseline.
double initial_ns_per_tick() {
  static const double rate = [] {
    if (!detail::g_ticks_are_tsc) return 1.0;
    Pair a = read_pair();
    while (monotonic_ns() - a.ns < 2'000'000) {
    }
    Pair b = read_pair();
    return double(b.ns - a.ns) / double(b.ticks - a.ticks);
  }();
  return rate;
}

}  // namespace

namespace detail {
const bool g_ticks_are_tsc = detect_invariant_tsc();
}

Ticks ticks_at_monotonic_ns(int64_t ns) {
  if (!detail::g_ticks_are_tsc) return Ticks(ns);
  Pair now = read_pair();
  double back = double(now.ns - ns) / initial_ns_per_tick();
  return now.ticks - Ticks(std::llround(back));
}

TickConverter::TickConverter() {
  ns_per_tick_ = initial_ns_per_tick();
  Pair p = read_pair();
  first_ticks_ = anchor_ticks_ = p.ticks;
  first_ns_ = anchor_ns_ = p.ns;
}

void TickConverter::calibrate() {
  if (!detail::g_ticks_are_tsc) return;
  Pair p = read_pair();
  // Below 50 ms of baseline the initial estimate is better than the
  // measured one; beyond it the long baseline wins and keeps getting better.
  if (p.ns - first_ns_ > 50'000'000) ns_per_tick_ = double(p.ns - first_ns_) / double(p.ticks - first_ticks_);
  anchor_ticks_ = p.ticks;
  anchor_ns_ = p.ns;
}

int64_t TickConverter::to_monotonic_ns(Ticks t) const {
  if (!detail::g_ticks_are_tsc) return int64_t(t);
  double delta = double(int64_t(t - anchor_ticks_)) * ns_per_tick_;
  return anchor_ns_ + int64_t(std::llround(delta));
}

}  // namespace loupe::prof
