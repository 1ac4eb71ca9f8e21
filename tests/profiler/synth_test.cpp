#include <gtest/gtest.h>

#include <map>
#include <set>

#include "loupe/prof/synth.h"
#include "loupe/prof/trace_query.h"
#include "loupe/prof/trace_reader.h"
#include "test_files.h"

using namespace loupe::prof;

namespace {

TEST(Synth, WritesExactlyTheEventsAskedFor) {
  loupe::test::TempDir dir;
  for (uint64_t n : {1ull, 999ull, 54'321ull}) {
    std::string path = dir.file("s" + std::to_string(n) + ".db");
    SynthResult r = write_synthetic_trace(path, {.events = n, .seed = 3});
    EXPECT_EQ(r.events, n);
    EXPECT_EQ(load_trace(path).total_events(), n);
  }
}

TEST(Synth, SameSeedSameTrace) {
  loupe::test::TempDir dir;
  write_synthetic_trace(dir.file("a.db"), {.events = 20'000, .seed = 9});
  write_synthetic_trace(dir.file("b.db"), {.events = 20'000, .seed = 9});
  write_synthetic_trace(dir.file("c.db"), {.events = 20'000, .seed = 10});
  TraceModel a = load_trace(dir.file("a.db")), b = load_trace(dir.file("b.db")), c = load_trace(dir.file("c.db"));
  ASSERT_EQ(a.device_ops.size(), b.device_ops.size());
  for (size_t i = 0; i < a.device_ops.size(); ++i) {
    EXPECT_EQ(a.device_ops[i].start, b.device_ops[i].start);
    EXPECT_EQ(a.device_ops[i].dur, b.device_ops[i].dur);
  }
  EXPECT_NE(a.device_ops[0].start, c.device_ops[0].start);
}

TEST(Synth, LooksLikeATrainingRun) {
  loupe::test::TempDir dir;
  std::string path = dir.file("s.db");
  write_synthetic_trace(path, {.events = 60'000, .seed = 1});
  TraceModel m = load_trace(path);

  EXPECT_EQ(m.devices.size(), 2u);
  EXPECT_EQ(m.streams.size(), 8u);
  EXPECT_GE(m.threads.size(), 3u);
  // Several streams per device carry work.
  std::map<uint32_t, int> streams_used;
  for (const DeviceOps& t : m.device_ops) streams_used[t.device] += t.size() > 0;
  EXPECT_GE(streams_used[0], 3);
  EXPECT_GE(streams_used[1], 3);
  // Nested host spans.
  uint32_t max_depth = 0;
  for (const HostSpans& t : m.host_spans) {
    for (uint32_t d : t.depth) max_depth = std::max(max_depth, d);
  }
  EXPECT_EQ(max_depth, 2u);
  // Every launch has its device op.
  std::set<uint64_t> ops;
  for (const DeviceOps& t : m.device_ops) ops.insert(t.correlation.begin(), t.correlation.end());
  size_t launches = 0;
  for (const Launches& l : m.launches) {
    for (uint64_t c : l.correlation) {
      ++launches;
      EXPECT_TRUE(ops.count(c)) << "launch " << c << " has no device op";
    }
  }
  EXPECT_GT(launches, 1000u);
  // Memory totals follow the alloc/free/reserve events exactly.
  for (const MemoryEvents& me : m.memory) {
    int64_t allocated = 0, reserved = 0;
    for (size_t i = 0; i < me.size(); ++i) {
      if (me.kind[i] == MemoryEventKind::alloc) allocated += me.bytes[i];
      if (me.kind[i] == MemoryEventKind::free) allocated -= me.bytes[i];
      if (me.kind[i] == MemoryEventKind::reserve) reserved += me.bytes[i];
      ASSERT_EQ(me.allocated[i], allocated);
      ASSERT_EQ(me.reserved[i], reserved);
      ASSERT_LE(allocated, reserved);
    }
  }
  // A first compile, then hits, and a recompile with a reason.
  int misses = 0, hits = 0;
  bool reasoned = false;
  for (const Compiles& c : m.compiles) {
    for (size_t i = 0; i < c.size(); ++i) {
      misses += c.kind[i] == CompileKind::miss;
      hits += c.kind[i] == CompileKind::hit;
      reasoned |= c.reason[i].find("now f32[255,784], before f32[256,784]") != std::string::npos;
    }
  }
  EXPECT_GE(misses, 2);
  EXPECT_GT(hits, misses);
  EXPECT_TRUE(reasoned);
  // Synchronous device-to-host reads every step.
  size_t sync_reads = 0;
  for (const Transfers& t : m.transfers) {
    for (size_t i = 0; i < t.size(); ++i) sync_reads += t.synchronous[i] && t.direction[i] == CopyKind::device_to_host;
  }
  size_t steps = 0;
  for (const Steps& s : m.steps) steps += s.size();
  EXPECT_GE(sync_reads + 2, steps);
}

}  // namespace
