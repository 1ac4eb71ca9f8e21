// The critical path on small traces whose path is worked out by hand in
// each test, and on the real fixtures against HTA's critical path.
#include <gtest/gtest.h>

#include <filesystem>

#include "loupe/prof/analysis.h"
#include "loupe/prof/import.h"
#include "profiler/test_files.h"
#include "trace_builder.h"

using namespace loupe::prof;
using loupe::test::TraceBuilder;

namespace {

int64_t ns(const PathBreakdown& b, PathCategory c) { return b.ns[size_t(c)]; }

class CriticalPathOf : public ::testing::Test {
 protected:
  loupe::test::TempDir dir;
  TraceBuilder trace() {
    TraceBuilder t(dir.file("t.db"));
    t.device(0);
    return t;
  }
  CriticalPath path(TraceBuilder& t) { return analyze(t.load()).critical_path; }
};

// Thread 0 launches A [0,5) and B [5,10) on stream 0, then waits in
// cudaStreamSynchronize [10,320) for B, which ran [110,310) after A
// [10,110); the step [0,330) ends 10 ns after the wait. Path: launch
// latency [0,10), A, B, the wake-up [310,320), the host [320,330).
TEST_F(CriticalPathOf, AStreamSyncCrossesToTheDeviceAndBack) {
  TraceBuilder t = trace();
  t.step(0, 1, 0, 330);
  t.launch(0, 0, 5, 1);
  t.launch(0, 5, 5, 2);
  t.op(0, 0, 10, 100, 1);
  t.op(0, 0, 110, 200, 2);
  t.span(0, 10, 310, "cudaStreamSynchronize", SpanKind::wait);
  t.sync(0, 10, 310, SyncKind::stream, 0);
  CriticalPath p = path(t);
  EXPECT_EQ(p.whole.start, 0);
  EXPECT_EQ(p.whole.end, 330);
  EXPECT_EQ(ns(p.whole, PathCategory::kernel), 300);
  EXPECT_EQ(ns(p.whole, PathCategory::launch_overhead), 10);
  EXPECT_EQ(ns(p.whole, PathCategory::synchronisation), 10);
  EXPECT_EQ(ns(p.whole, PathCategory::host_compute), 10);
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(ns(p.steps[0].time, PathCategory::kernel), 300);
  EXPECT_TRUE(p.missing.empty());
  EXPECT_EQ(p.waits_by_time, 0u);
  // Contiguous, in time order.
  for (size_t i = 1; i < p.segments.size(); ++i) EXPECT_EQ(p.segments[i].start, p.segments[i - 1].end);
}

// A CUDA graph: one cudaGraphLaunch [0,10) runs three kernels, all with
// its correlation id, [20,120), [125,225) and [230,330) on stream 0; the
// host waits in cudaStreamSynchronize [10,340) and the step [0,350) ends
// 10 ns after. Every kernel of the graph is on the path (HTA's critical
// path leaves graph kernels out: HTA#290): kernels 300, launch overhead
// 30 (the call [0,10), its latency [10,20), the two 5 ns gaps between the
// graph's kernels), the wake-up 10, the host 10.
TEST_F(CriticalPathOf, EveryKernelOfACudaGraphLaunchIsOnThePath) {
  TraceBuilder t = trace();
  t.step(0, 1, 0, 350);
  t.launch(0, 0, 10, 1, 0, 0, "cudaGraphLaunch");
  t.op(0, 0, 20, 100, 1, DeviceOpKind::kernel, "graph_gemm");
  t.op(0, 0, 125, 100, 1, DeviceOpKind::kernel, "graph_relu");
  t.op(0, 0, 230, 100, 1, DeviceOpKind::kernel, "graph_gemm");
  t.span(0, 10, 330, "cudaStreamSynchronize", SpanKind::wait);
  t.sync(0, 10, 330, SyncKind::stream, 0);
  CriticalPath p = path(t);
  EXPECT_EQ(p.whole.end - p.whole.start, 350);
  EXPECT_EQ(ns(p.whole, PathCategory::kernel), 300);
  EXPECT_EQ(ns(p.whole, PathCategory::launch_overhead), 30);
  EXPECT_EQ(ns(p.whole, PathCategory::synchronisation), 10);
  EXPECT_EQ(ns(p.whole, PathCategory::host_compute), 10);
  int kernels = 0;
  for (const PathSegment& s : p.segments) kernels += s.on_device && s.category == PathCategory::kernel;
  EXPECT_EQ(kernels, 3);
}

// The host runs Python [0,900), launches at [900,910) a kernel that runs
// [920,1020): the host sets the pace.
TEST_F(CriticalPathOf, AHostThatLaunchesLateIsThePath) {
  TraceBuilder t = trace();
  t.span(0, 0, 900, "python");
  t.launch(0, 900, 10, 1);
  t.op(0, 0, 920, 100, 1);
  CriticalPath p = path(t);
  EXPECT_EQ(p.whole.end - p.whole.start, 1020);
  EXPECT_EQ(ns(p.whole, PathCategory::host_compute), 900);
  EXPECT_EQ(ns(p.whole, PathCategory::launch_overhead), 20);
  EXPECT_EQ(ns(p.whole, PathCategory::kernel), 100);
  std::vector<Finding> f = analyze(TraceBuilder(dir.file("u.db")).load(), {.rules = {"critical-path"}}).findings;
  EXPECT_TRUE(f.empty());  // nothing ran: no path, no finding
}

// Stream 2's kernel Y [500,600), launched at 15, was made to wait
// (cudaStreamWaitEvent at 10) for the event recorded at 6 on stream 1,
// after X [0,500): the path is X then Y, all device time. Without the
// wait, Y would seem to wait 485 ns for its launch.
TEST_F(CriticalPathOf, AStreamWaitJoinsTwoStreams) {
  TraceBuilder t = trace();
  t.launch(0, 0, 5, 1, 0, 1);
  t.op(0, 1, 0, 500, 1);
  t.span(0, 6, 2, "cudaEventRecord", SpanKind::runtime);
  t.span(0, 10, 2, "cudaStreamWaitEvent", SpanKind::runtime);
  t.sync(0, 10, 2, SyncKind::stream_wait, 2, 1, 6);
  t.launch(0, 15, 5, 2, 0, 2);
  t.op(0, 2, 500, 100, 2);
  CriticalPath p = path(t);
  EXPECT_EQ(p.whole.end - p.whole.start, 600);
  EXPECT_EQ(ns(p.whole, PathCategory::kernel), 600);
  ASSERT_EQ(p.segments.size(), 2u);
  EXPECT_EQ(p.segments[0].stream, 1u);
  EXPECT_EQ(p.segments[1].stream, 2u);
}

// The same two kernels with no record of the wait: Y starts 485 us after
// its launch, far beyond what launching takes (30 us), just as X on the
// other stream ends; the path infers the wait and says so. Launched at
// 480 us instead, Y's 20 us are launch latency, not a wait: the host,
// which launched it late, is the path.
TEST_F(CriticalPathOf, AnUnrecordedStreamWaitIsInferredByTimeAndCounted) {
  for (int64_t launched : {15'000, 480'000}) {
    TraceBuilder t(dir.file(std::to_string(launched) + ".db"));
    t.device(0);
    t.launch(0, 0, 5, 1, 0, 1);
    t.op(0, 1, 0, 500'000, 1);
    t.launch(0, launched, 5, 2, 0, 2);
    t.op(0, 2, 500'000, 100'000, 2);
    CriticalPath p = analyze(t.load()).critical_path;
    EXPECT_EQ(p.whole.end - p.whole.start, 600'000);
    if (launched == 15'000) {
      EXPECT_EQ(p.stream_waits_by_time, 1u);
      EXPECT_EQ(ns(p.whole, PathCategory::kernel), 600'000);
      ASSERT_EQ(p.segments.size(), 2u);
      EXPECT_EQ(p.segments[0].stream, 1u);
    } else {
      EXPECT_EQ(p.stream_waits_by_time, 0u);
      EXPECT_EQ(ns(p.whole, PathCategory::kernel), 100'000);
      EXPECT_EQ(ns(p.whole, PathCategory::launch_overhead), 20'005);  // the latency, and X's launch call [0, 5) ns
      EXPECT_EQ(ns(p.whole, PathCategory::host_compute), 479'995);
    }
  }
}

// A wait span without a record [10,400) is matched by time to the op
// that ended last within it, [20,390), launched at 0; the host then works
// [400,450) to the step's end.
TEST_F(CriticalPathOf, AWaitWithoutARecordIsMatchedByTimeAndSaysSo) {
  TraceBuilder t = trace();
  t.step(0, 1, 0, 450);
  t.launch(0, 0, 5, 1);
  t.op(0, 0, 20, 370, 1);
  t.span(0, 10, 390, "synchronize", SpanKind::wait);
  CriticalPath p = path(t);
  EXPECT_EQ(ns(p.whole, PathCategory::host_compute), 50);
  EXPECT_EQ(ns(p.whole, PathCategory::synchronisation), 10);
  EXPECT_EQ(ns(p.whole, PathCategory::kernel), 370);
  EXPECT_EQ(ns(p.whole, PathCategory::launch_overhead), 20);
  EXPECT_EQ(p.waits_by_time, 1u);
  ASSERT_EQ(p.missing.size(), 1u);
  EXPECT_NE(std::string(p.missing[0]).find("matched by time"), std::string::npos);
}

// The host produced the batch in a DataLoader range [0,300), then
// launched [300,305) a kernel that ran [310,400).
TEST_F(CriticalPathOf, HostTimeInADataLoaderRangeIsDataLoading) {
  TraceBuilder t = trace();
  t.span(0, 0, 300, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
  t.launch(0, 300, 5, 1);
  t.op(0, 0, 310, 90, 1);
  CriticalPath p = path(t);
  EXPECT_EQ(ns(p.whole, PathCategory::data_loading), 300);
  EXPECT_EQ(ns(p.whole, PathCategory::launch_overhead), 10);
  EXPECT_EQ(ns(p.whole, PathCategory::kernel), 90);
  std::vector<Finding> f = analyze(load_trace(dir.file("t.db")), {.rules = {"critical-path"}}).findings;
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].title.find("bound by data loading"), std::string::npos) << f[0].title;
  EXPECT_EQ(f[0].impact_ns, 0);
}

// Two steps, each a kernel the device ran back to back: the device bound
// both; each step's share of the path adds up to the step.
TEST_F(CriticalPathOf, StepsShareThePathAndAddUpToTheirTime) {
  TraceBuilder t = trace();
  t.step(0, 1, 0, 210);
  t.step(0, 2, 210, 200);
  t.launch(0, 0, 5, 1);
  t.launch(0, 5, 5, 2);
  t.op(0, 0, 10, 200, 1);
  t.op(0, 0, 210, 200, 2);
  CriticalPath p = path(t);
  ASSERT_EQ(p.steps.size(), 2u);
  for (const CriticalPath::Step& s : p.steps) {
    int64_t sum = 0;
    for (int64_t v : s.time.ns) sum += v;
    EXPECT_EQ(sum, s.time.end - s.time.start);
  }
  EXPECT_EQ(ns(p.steps[0].time, PathCategory::kernel), 200);
  EXPECT_EQ(ns(p.steps[1].time, PathCategory::kernel), 200);
}

// HTA 0.5.0's critical_path_analysis on the whole trace (annotation ""),
// run on the fixtures: its gpu_compute_bound time (kernels and copies on
// the path, whole microseconds) and that every other figure is cpu-bound.
struct HtaFigure {
  const char* file;
  int64_t device_us;  // HTA's gpu_compute_bound + gpu_communication_bound
};

class CriticalPathHta : public ::testing::TestWithParam<HtaFigure> {};

TEST_P(CriticalPathHta, TheHostBoundsItAndTheDeviceTimeOnItAgrees) {
  if (!std::filesystem::is_directory(LOUPE_FIXTURES_DIR)) GTEST_SKIP() << "no fixtures at " << LOUPE_FIXTURES_DIR;
  loupe::test::TempDir dir;
  import_trace(std::string(LOUPE_FIXTURES_DIR) + "/" + GetParam().file, dir.file("t.db"));
  CriticalPath p = analyze(load_trace(dir.file("t.db"))).critical_path;
  int64_t device =
      ns(p.whole, PathCategory::kernel) + ns(p.whole, PathCategory::copy) + ns(p.whole, PathCategory::communication);
  int64_t host = ns(p.whole, PathCategory::host_compute);
  EXPECT_GT(host, (p.whole.end - p.whole.start) / 2);
  EXPECT_NEAR(double(device) / 1000, double(GetParam().device_us), 1.5);
  // Each step's share of the path is the step's whole time.
  for (const CriticalPath::Step& s : p.steps) {
    int64_t sum = 0;
    for (int64_t v : s.time.ns) sum += v;
    EXPECT_EQ(sum, s.time.end - s.time.start);
  }
}

void PrintTo(const HtaFigure& f, std::ostream* os) { *os << f.file; }

INSTANTIATE_TEST_SUITE_P(Fixtures, CriticalPathHta,
                         ::testing::Values(HtaFigure{"a100_event_sync.json.gz", 38},
                                           HtaFigure{"a100_event_sync_multistream.json.gz", 124}));

}  // namespace
