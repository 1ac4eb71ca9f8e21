#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "loupe/prof/clock.h"

using namespace loupe::prof;

TEST(Clock, TicksConvertToMonotonicNanoseconds) {
  TickConverter conv;
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  conv.calibrate();
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(7));
    int64_t before = monotonic_ns();
    Ticks t = ticks_now();
    int64_t after = monotonic_ns();
    int64_t ns = conv.to_monotonic_ns(t);
    // Within a few microseconds of the bracket read by clock_gettime.
    EXPECT_GE(ns, before - 5'000);
    EXPECT_LE(ns, after + 5'000);
  }
}

TEST(Clock, ConversionIsMonotonic) {
  TickConverter conv;
  int64_t last = conv.to_monotonic_ns(ticks_now());
  for (int i = 0; i < 100'000; ++i) {
    int64_t ns = conv.to_monotonic_ns(ticks_now());
    ASSERT_GE(ns, last);
    last = ns;
  }
}
