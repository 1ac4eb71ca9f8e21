// The record API and captures: what is recorded arrives in the file,
// exactly once; what is dropped is counted; nothing is recorded when no
// capture is active.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <set>
#include <thread>
#include <vector>

#include "capture_threads.h"
#include "loupe/prof/capture.h"
#include "loupe/prof/record.h"
#include "loupe/prof/trace_reader.h"
#include "test_files.h"

using namespace loupe::prof;
using namespace std::chrono_literals;

namespace {

uint64_t total(const TraceModel& m) { return m.total_events(); }

TEST(Record, NothingIsRecordedWithoutACapture) {
  loupe::test::TempDir dir;
  span_begin("before");  // begins with no capture: never recorded
  for (int i = 0; i < 1000; ++i) {
    Scope s("idle");
    counter("c", i);
    instant("i");
    device_op({.name = "k", .start = ticks_now(), .end = ticks_now()});
  }
  {
    Capture capture({.path = dir.file("t.db")});
    ASSERT_TRUE(capture.ok());
    span_end();  // ends "before": not recorded, and does not unbalance
    { Scope inside("inside"); }
    capture.stop();
  }
  TraceModel m = load_trace(dir.file("t.db"));
  ASSERT_EQ(total(m), 1u);
  ASSERT_EQ(m.host_spans.size(), 1u);
  EXPECT_EQ(m.str(m.host_spans[0].name[0]), "inside");
  EXPECT_EQ(m.host_spans[0].depth[0], 0u);
  EXPECT_EQ(m.info.status, "complete");
}

TEST(Record, NestedSpansHaveDepthsAndContainTheirChildren) {
  loupe::test::TempDir dir;
  {
    Capture capture({.path = dir.file("t.db")});
    Scope outer("outer");
    {
      Scope middle("middle", SpanKind::runtime);
      span_begin("inner", SpanKind::wait);
      std::this_thread::sleep_for(1ms);
      span_end();
    }
    capture.stop();  // "outer" is still open: it is not recorded
  }
  TraceModel m = load_trace(dir.file("t.db"));
  ASSERT_EQ(m.host_spans.size(), 1u);
  const HostSpans& s = m.host_spans[0];
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(m.str(s.name[0]), "middle");
  EXPECT_EQ(s.depth[0], 1u);
  EXPECT_EQ(s.kind[0], SpanKind::runtime);
  EXPECT_EQ(m.str(s.name[1]), "inner");
  EXPECT_EQ(s.depth[1], 2u);
  EXPECT_EQ(s.kind[1], SpanKind::wait);
  EXPECT_LE(s.start[0], s.start[1]);
  EXPECT_GE(s.end(0), s.end(1));
  EXPECT_GE(s.dur[1], 1'000'000) << "slept 1 ms inside";
}

// A stack interned outermost first: each frame's call site names its
// caller, and the same frame under another caller is another call site.
TEST(Record, CallSitesMakeATreeOfStacks) {
  loupe::test::TempDir dir;
  CallSiteId main_site = 0, helper_site = 0, other_helper = 0;
  {
    Capture capture({.path = dir.file("t.db")});
    main_site = callsite("train.py", 10, "main", 0);
    CallSiteId step = callsite("train.py", 4, "step", main_site);
    helper_site = callsite("model.py", 7, "forward", step);
    other_helper = callsite("model.py", 7, "forward", main_site);
    EXPECT_EQ(callsite("model.py", 7, "forward", step), helper_site);  // interned once
    EXPECT_NE(other_helper, helper_site);
    memory_event({.device = 0, .bytes = 64, .address = 1, .allocated = 64, .callsite = helper_site});
    capture.stop();
  }
  TraceModel m = load_trace(dir.file("t.db"));
  std::vector<std::string> stack;
  for (const CallSite* c = m.callsite(helper_site); c != nullptr; c = m.callsite(c->parent))
    stack.push_back(fmt::format("{}:{} {}", m.str(c->file), c->line, m.str(c->function)));
  EXPECT_EQ(stack, (std::vector<std::string>{"model.py:7 forward", "train.py:4 step", "train.py:10 main"}));
  EXPECT_EQ(m.callsite(other_helper)->parent, main_site);
  EXPECT_EQ(m.callsite(main_site)->parent, 0u);
}

TEST(Record, TimesAreMonotonicNanosecondsFromTheOrigin) {
  loupe::test::TempDir dir;
  int64_t before, after;
  {
    Capture capture({.path = dir.file("t.db")});
    std::this_thread::sleep_for(60ms);  // past the converter's first recalibration
    before = monotonic_ns();
    {
      Scope s("timed");
      std::this_thread::sleep_for(20ms);
    }
    after = monotonic_ns();
    capture.stop();
  }
  TraceModel m = load_trace(dir.file("t.db"));
  int64_t origin = std::stoll(m.info.meta.at("origin_monotonic_ns"));
  const HostSpans& s = m.host_spans.at(0);
  int64_t start = s.start[0] + origin, end = s.end(0) + origin;
  // The span lies inside the bracket read with clock_gettime, to within the
  // tick conversion's error (a few microseconds).
  EXPECT_GE(start, before - 5'000);
  EXPECT_LE(end, after + 5'000);
  // It slept 20 ms inside (longer on a busy machine, never shorter).
  EXPECT_GE(s.dur[0], 20'000'000 - 5'000);
}

// Every kind of event, many threads: each arrives once, none are lost.
TEST(Record, ManyThreadsLoseNothing) {
  loupe::test::TempDir dir;
  constexpr int kThreads = 8, kPerThread = 5000;
  register_device({.id = 0, .name = "test device", .kind = DeviceKind::cpu, .memory_capacity = 1 << 30});
  register_stream(0, 1, "stream one");
  CallSiteId site = callsite();
  CaptureStats stats = loupe::test::capture_threads(dir.file("t.db"), 1u << 16, kThreads, [site](int t) {
    set_thread_name("worker " + std::to_string(t));
    for (int i = 0; i < kPerThread; ++i) {
      step_begin(i);
      { Scope s("span"); }
      instant("mark");
      counter("value", double(t * kPerThread + i));
      Ticks a = ticks_now();
      uint64_t corr = next_correlation_id();
      launch({.name = "launch", .start = a, .end = a + 10, .device = 0, .stream = 1, .correlation = corr});
      device_op({.device = 0, .stream = 1, .name = "op", .start = a, .end = a + 100, .correlation = corr});
      transfer({.start = a, .end = a + 5, .bytes = 64, .callsite = site});
      memory_event({.device = 0, .bytes = 64, .allocated = i, .reserved = i + 1});
      step_end();
    }
  });
  EXPECT_EQ(stats.dropped, 0u);
  EXPECT_EQ(stats.recorded, uint64_t(kThreads) * kPerThread * 8);
  TraceModel m = load_trace(dir.file("t.db"));
  const uint64_t n = uint64_t(kThreads) * kPerThread;
  EXPECT_EQ(m.count_host_spans(), n);
  EXPECT_EQ(m.count_device_ops(), n);
  auto sum = [](const auto& tracks) {
    uint64_t k = 0;
    for (const auto& t : tracks) k += t.size();
    return k;
  };
  EXPECT_EQ(sum(m.instants), n);
  EXPECT_EQ(sum(m.counters), n);
  EXPECT_EQ(sum(m.launches), n);
  EXPECT_EQ(sum(m.transfers), n);
  EXPECT_EQ(sum(m.memory), n);
  EXPECT_EQ(sum(m.steps), n);
  // Every counter value 0..n-1 arrived exactly once.
  ASSERT_EQ(m.counters.size(), 1u);
  std::vector<double> values = m.counters[0].value;
  std::sort(values.begin(), values.end());
  for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(values[i], double(i));
  // Correlation ids link each launch to its device op one to one.
  std::set<uint64_t> launched, ran;
  for (const auto& l : m.launches) launched.insert(l.correlation.begin(), l.correlation.end());
  for (const auto& o : m.device_ops) ran.insert(o.correlation.begin(), o.correlation.end());
  EXPECT_EQ(launched.size(), n);
  EXPECT_EQ(launched, ran);
  // Registration reached the file.
  ASSERT_NE(m.device(0), nullptr);
  EXPECT_EQ(m.device(0)->name, "test device");
  ASSERT_NE(m.stream(0, 1), nullptr);
  EXPECT_EQ(m.stream(0, 1)->name, "stream one");
  int named = 0;
  for (const Thread& t : m.threads) named += t.name.rfind("worker ", 0) == 0;
  EXPECT_EQ(named, kThreads);
  const CallSite* cs = m.callsite(site);
  ASSERT_NE(cs, nullptr);
  EXPECT_NE(m.str(cs->file).find("record_test.cpp"), std::string::npos);
  EXPECT_GT(cs->line, 0u);
}

// A ring far too small for the burst: what is not recorded is counted, and
// the two add up exactly to what was emitted.
TEST(Record, DroppedEventsAreCountedExactly) {
  loupe::test::TempDir dir;
  constexpr int kThreads = 4, kPerThread = 200'000;
  CaptureStats stats = loupe::test::capture_threads(dir.file("t.db"), 64, kThreads, [](int) {
    for (int i = 0; i < kPerThread; ++i) counter("burst", i);
  });
  TraceModel m = load_trace(dir.file("t.db"));
  uint64_t recorded = m.total_events();
  EXPECT_GT(stats.dropped, 0u) << "a 64-event ring cannot hold a burst of 200,000";
  EXPECT_EQ(recorded + stats.dropped, uint64_t(kThreads) * kPerThread);
  EXPECT_EQ(m.info.dropped_events, stats.dropped);
  uint64_t per_thread = 0;
  for (const Thread& t : m.threads) per_thread += t.dropped_events;
  EXPECT_EQ(per_thread, stats.dropped);
}

TEST(Record, CompileEventsCarryTheirText) {
  loupe::test::TempDir dir;
  {
    Capture capture({.path = dir.file("t.db")});
    Compile c;
    c.function = intern("train_step");
    c.signature = intern("f32[31,128]");
    c.kind = CompileKind::miss;
    c.reason = "arg 0 `x`: now f32[31,128], before f32[32,128]";
    c.start = ticks_now();
    c.end = c.start + 1000;
    c.trace_ns = 1;
    c.optimize_ns = 2;
    c.codegen_ns = 3;
    c.nodes = 10;
    c.kernels = 2;
    c.ir = "ir text";
    c.callsite = callsite();
    c.function_object = 77;
    compile(c);
    capture.stop();
  }
  TraceModel m = load_trace(dir.file("t.db"));
  ASSERT_EQ(m.compiles.size(), 1u);
  const Compiles& c = m.compiles[0];
  EXPECT_EQ(m.str(c.function[0]), "train_step");
  EXPECT_EQ(m.str(c.signature[0]), "f32[31,128]");
  EXPECT_EQ(c.reason[0], "arg 0 `x`: now f32[31,128], before f32[32,128]");
  EXPECT_EQ(c.ir[0], "ir text");
  EXPECT_EQ(c.kernels[0], 2u);
  EXPECT_EQ(c.function_object[0], 77u);
  EXPECT_NE(m.callsite(c.callsite[0]), nullptr);
}

TEST(Record, ConsecutiveCapturesDoNotMix) {
  loupe::test::TempDir dir;
  {
    Capture first({.path = dir.file("a.db")});
    for (int i = 0; i < 10; ++i) instant("first");
  }
  {
    Capture second({.path = dir.file("b.db")});
    for (int i = 0; i < 3; ++i) instant("second");
  }
  EXPECT_EQ(load_trace(dir.file("a.db")).total_events(), 10u);
  TraceModel b = load_trace(dir.file("b.db"));
  ASSERT_EQ(b.total_events(), 3u);
  EXPECT_EQ(b.str(b.instants[0].name[0]), "second");
}

TEST(Record, OnlyOneCaptureAtATime) {
  loupe::test::TempDir dir;
  Capture first({.path = dir.file("a.db")});
  Capture second({.path = dir.file("b.db")});
  EXPECT_TRUE(first.ok());
  EXPECT_FALSE(second.ok());
}

TEST(Record, UnwritablePathLeavesTheProgramRunning) {
  Capture capture({.path = "/nonexistent-dir/for/sure/t.db"});
  EXPECT_FALSE(capture.ok());
  EXPECT_NE(capture.stats().error.find("/nonexistent-dir/for/sure/t.db"), std::string::npos);
  for (int i = 0; i < 100; ++i) Scope s("still fine");  // no crash, nothing recorded
  capture.stop();
}

// Resident memory of this process, from /proc/self/statm.
int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * ::sysconf(_SC_PAGESIZE);
}

// A thread's first event allocates its ring without touching it: the pages
// are faulted in as the ring fills, so a large ring costs a thread that
// records little next to nothing, and its first event does not stall (it
// did, for milliseconds, while the registry's lock was held).
TEST(Record, ARingCostsOnlyWhatItHolds) {
  loupe::test::TempDir dir;
  constexpr uint32_t kRingEvents = 1u << 22;  // 256 MiB of slots per thread
  constexpr int kThreads = 4;
  int64_t before = 0, after = 0;
  {
    Capture capture({.path = dir.file("t.db"), .buffer_events = kRingEvents});
    before = resident_bytes();
    loupe::test::on_threads(kThreads, [](int) {
      for (int i = 0; i < 100; ++i) instant("few");
    });
    after = resident_bytes();
  }
  EXPECT_LT(after - before, int64_t(32) << 20) << "4 rings of 256 MiB hold 400 events";
  EXPECT_EQ(load_trace(dir.file("t.db")).total_events(), uint64_t(kThreads) * 100);
}

// The drainer backs off while the rings fill slowly: each wake-up takes a
// core from the program. Draining every 2 ms, 400 ms of idling would wake
// it about 200 times; backing off to 16 ms, about 30.
TEST(Record, AnIdleCaptureWakesRarely) {
  loupe::test::TempDir dir;
  CaptureStats stats;
  {
    Capture capture({.path = dir.file("t.db")});
    instant("start");
    std::this_thread::sleep_for(400ms);
    capture.stop();
    stats = capture.stats();
  }
  EXPECT_GT(stats.drains, 0u);
  EXPECT_LT(stats.drains, 80u);
  EXPECT_EQ(stats.recorded, 1u);
}

TEST(Record, EventsOfExitedThreadsAreKept) {
  loupe::test::TempDir dir;
  {
    Capture capture({.path = dir.file("t.db")});
    for (int t = 0; t < 16; ++t) {
      std::thread([] {
        for (int i = 0; i < 100; ++i) instant("short-lived");
      }).join();
    }
  }
  EXPECT_EQ(load_trace(dir.file("t.db")).total_events(), 1600u);
}

}  // namespace
