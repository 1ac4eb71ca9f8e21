// The CUPTI collector's life cycle over many captures in one process, run
// against the fake CUPTI (fake_cupti.cpp, first on LD_LIBRARY_PATH): CUPTI
// is switched on once and kept on, each capture holds exactly the records
// made while it ran, buffers are reused, and the API calls listed in
// api_filter.cpp are not recorded. Each test reads the environment's knobs
// once, so ctest runs each in a process of its own.
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

#include "cupti/fake_cupti.h"
#include "loupe/prof/capture.h"
#include "loupe/prof/clock.h"
#include "loupe/prof/cupti.h"
#include "loupe/prof/trace_reader.h"
#include "profiler/test_files.h"

using namespace loupe::prof;

namespace {

// Flushes happen where the tests make them, not on a timer.
const CuptiOptions kNoTimedFlush{.flush_interval = std::chrono::hours(1)};

struct Fake {
  FakeCuptiKernelFn kernel = nullptr;
  FakeCuptiApiFn api = nullptr;
  FakeCuptiCountsFn counts_fn = nullptr;
  FakeCuptiCounts counts() const {
    FakeCuptiCounts c{};
    counts_fn(&c);
    return c;
  }
};

// The fake's own functions, or a failure saying the real CUPTI was loaded.
Fake fake() {
  Fake f;
  f.kernel = reinterpret_cast<FakeCuptiKernelFn>(dlsym(RTLD_DEFAULT, "loupe_fake_cupti_kernel"));
  f.api = reinterpret_cast<FakeCuptiApiFn>(dlsym(RTLD_DEFAULT, "loupe_fake_cupti_api"));
  f.counts_fn = reinterpret_cast<FakeCuptiCountsFn>(dlsym(RTLD_DEFAULT, "loupe_fake_cupti_counts"));
  EXPECT_TRUE(f.kernel && f.api && f.counts_fn)
      << "not running against the fake CUPTI: put fake-cupti/ first on LD_LIBRARY_PATH";
  return f;
}

void kernel_now(const Fake& f, const std::string& name) {
  auto t = uint64_t(monotonic_ns());
  f.kernel(name.c_str(), t, t + 1000);
}

std::multiset<std::string> kernel_names(const std::string& trace) {
  TraceModel m = load_trace(trace);
  std::multiset<std::string> names;
  for (const auto& track : m.device_ops)
    for (StringId id : track.name) names.insert(m.str(id));
  return names;
}

std::multiset<std::string> span_names(const TraceModel& m) {
  std::multiset<std::string> names;
  for (const auto& track : m.host_spans)
    for (StringId id : track.name) names.insert(m.str(id));
  return names;
}

// `captures` captures, each with 3 kernels (a flush in the middle of every
// other one) and one kernel made before it, while no capture runs; each
// trace must hold exactly its own 3.
void capture_many(const Fake& f, const loupe::test::TempDir& dir, int captures) {
  for (int i = 0; i < captures; ++i) {
    kernel_now(f, fmt::format("between {}", i));
    std::string path = dir.file(fmt::format("c{}.db", i));
    {
      Capture capture({.path = path});
      std::string why;
      auto collector = CuptiCollector::start(kNoTimedFlush, &why);
      ASSERT_NE(collector, nullptr) << why;
      for (int k = 0; k < 3; ++k) {
        kernel_now(f, fmt::format("kernel {}.{}", i, k));
        if (k == 1 && i % 2 == 1) collector->flush();
      }
    }
    EXPECT_EQ(kernel_names(path),
              (std::multiset<std::string>{fmt::format("kernel {}.0", i), fmt::format("kernel {}.1", i),
                                          fmt::format("kernel {}.2", i)}))
        << "capture " << i;
  }
}

// CUPTI was switched on `on` times and off `off` times, as the fake and the
// collector both count; its clock was hooked once, however often that was.
void expect_switched(const Fake& f, uint64_t on, uint64_t off) {
  FakeCuptiCounts c = f.counts();
  EXPECT_EQ(c.timestamp_registrations, 1u);
  EXPECT_EQ(c.kernel_kind_enables, on);
  EXPECT_EQ(c.kernel_kind_disables, off);
  EXPECT_EQ(CuptiCollector::stats().times_switched_on, on);
}

// Each test runs against the fake, with a scratch directory for its traces.
class CuptiLifecycle : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(f.counts_fn); }
  Fake f = fake();
  loupe::test::TempDir dir;
};

TEST_F(CuptiLifecycle, ManyCapturesSwitchCuptiOnOnceAndEachHoldsExactlyItsOwnRecords) {
  capture_many(f, dir, 40);

  expect_switched(f, 1, 0);
  CuptiStats s = CuptiCollector::stats();
  // "between 0" came before CUPTI was on; the other 39 were recorded and dropped.
  EXPECT_EQ(s.records_dropped, 39u);
  // The fake completes each buffer before it asks for the next: one buffer,
  // reused 40 + 20 + 39 times (a flush at each stop, one mid-capture in odd
  // captures, one at each start with the kernel made between captures).
  EXPECT_EQ(f.counts().buffers_completed, 40u + 20u + 39u);
  EXPECT_EQ(s.buffers_allocated, 1u);
  EXPECT_EQ(s.buffers_live, 1u);
}

TEST_F(CuptiLifecycle, NotKeptOnCuptiIsSwitchedOnAndOffWithEachCapture) {
  ASSERT_EQ(setenv("LOUPE_CUPTI_KEEP_ON", "0", 1), 0);
  capture_many(f, dir, 5);

  expect_switched(f, 5, 5);
  EXPECT_EQ(CuptiCollector::stats().records_dropped, 0u);  // off between captures: nothing recorded to drop
}

TEST_F(CuptiLifecycle, WithoutThePoolEveryBufferIsAllocatedAndFreed) {
  ASSERT_EQ(setenv("LOUPE_CUPTI_BUFFER_POOL", "0", 1), 0);
  capture_many(f, dir, 6);

  CuptiStats s = CuptiCollector::stats();
  EXPECT_EQ(s.buffers_allocated, f.counts().buffers_completed);
  EXPECT_EQ(s.buffers_allocated, 6u + 3u + 5u);
  EXPECT_EQ(s.buffers_live, 0u);
}

// A launch, an event recorded and polled, a wait on it, and the driver's
// current-context query: the record and the poll and the query are left out.
void make_calls(const Fake& f) {
  auto t = uint64_t(monotonic_ns());
  f.api(0, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, t, t + 100);
  f.api(0, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, t + 200, t + 300);
  f.api(0, CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020, t + 400, t + 500);
  f.api(0, CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020, t + 600, t + 700);
  f.api(1, CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, t + 800, t + 900);
}

TraceModel capture_calls(const Fake& f, const loupe::test::TempDir& dir) {
  std::string path = dir.file("calls.db");
  {
    Capture capture({.path = path});
    std::string why;
    auto collector = CuptiCollector::start(kNoTimedFlush, &why);
    EXPECT_NE(collector, nullptr) << why;
    make_calls(f);
  }
  return load_trace(path);
}

TEST_F(CuptiLifecycle, CallsThatQueueNoWorkAreNotRecorded) {
  TraceModel m = capture_calls(f, dir);
  ASSERT_EQ(m.launches.size(), 1u);
  ASSERT_EQ(m.launches[0].size(), 1u);
  EXPECT_EQ(m.str(m.launches[0].name[0]), "cudaLaunchKernel");
  EXPECT_EQ(span_names(m), (std::multiset<std::string>{"cudaEventSynchronize"}));
}

TEST_F(CuptiLifecycle, WithoutTheFilterEveryCallIsRecorded) {
  ASSERT_EQ(setenv("LOUPE_CUPTI_API_FILTER", "0", 1), 0);
  TraceModel m = capture_calls(f, dir);
  EXPECT_EQ(span_names(m), (std::multiset<std::string>{"cudaEventRecord", "cudaEventQuery", "cudaEventSynchronize",
                                                       "cuCtxGetCurrent"}));
}

}  // namespace
