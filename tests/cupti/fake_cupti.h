// What the fake CUPTI (fake_cupti.cpp) lets a test do and see: make
// activity records as a GPU's work would, and count what the collector
// asked of CUPTI. Reached through dlsym, so that a test run against the
// real library finds these missing and says so.
#pragma once

#include <cstdint>

extern "C" {

struct FakeCuptiCounts {
  uint64_t kernel_kind_enables;      // cuptiActivityEnable(CONCURRENT_KERNEL)
  uint64_t kernel_kind_disables;     // cuptiActivityDisable(CONCURRENT_KERNEL)
  uint64_t timestamp_registrations;  // cuptiActivityRegisterTimestampCallback
  uint64_t buffers_completed;        // buffers handed back to the collector, full of records
};

// A kernel that ran from start to end (CLOCK_MONOTONIC ns): recorded when
// the kernel kind is enabled, like CUPTI's, and handed over at the next flush.
typedef void (*FakeCuptiKernelFn)(const char* name, uint64_t start, uint64_t end);
// A runtime (driver = 0) or driver API call, recorded when its kind is
// enabled and its call id was not switched off.
typedef void (*FakeCuptiApiFn)(int driver, uint32_t cbid, uint64_t start, uint64_t end);
typedef void (*FakeCuptiCountsFn)(FakeCuptiCounts* out);
}
