// Each rule on a small trace whose right answer is worked out by hand in
// the test, from the events it states.
#include <gtest/gtest.h>

#include <optional>

#include "loupe/prof/analysis.h"
#include "loupe/prof/synth.h"
#include "profiler/test_files.h"
#include "trace_builder.h"

using namespace loupe::prof;
using loupe::test::LaunchedOp;
using loupe::test::TraceBuilder;

namespace {

class Rules : public ::testing::Test {
 protected:
  loupe::test::TempDir dir;
  TraceBuilder trace() { return TraceBuilder(dir.file("t.db")); }
  // Device 0, a GPU: the device most rules judge.
  TraceBuilder gpu_trace() {
    TraceBuilder t = trace();
    t.device(0);
    return t;
  }
  // Device 0 ran an op [0, 100), launched at 0: what the test adds comes
  // after it, or in the gap that opens at 100.
  TraceBuilder after_one_op() {
    TraceBuilder t = gpu_trace();
    t.launched({.corr = 1});
    return t;
  }
  // One gap, [100, 1000), ended by an op launched at 990: the test adds
  // what the host did meanwhile.
  TraceBuilder one_gap() {
    TraceBuilder t = after_one_op();
    t.launched({.launch = 990, .start = 1000, .corr = 2});
    return t;
  }
  // An op [0, 400), then the host compiles `step` over [500, 900) and
  // launches the next op at 950: the device idles over [400, 1000).
  TraceBuilder compile_in_gap(CompileKind kind, const std::string& reason = "") {
    TraceBuilder t = gpu_trace();
    t.launched({.launch_dur = 10, .dur = 400, .corr = 1});
    t.compile(0, 500, 400, "step", kind, reason);
    t.launched({.launch = 950, .launch_dur = 10, .start = 1000, .corr = 7});
    return t;
  }
  // Five ranges on thread 0, 1 ms apart, each of which launches at 10 us
  // into it an op that runs over [50, 400) us of it: a kernel on stream 0,
  // or the op whose stream, kind and name `op` gives.
  TraceBuilder ranges_launching(int64_t range_ns, const std::string& name, SpanKind kind, uint32_t depth = 0,
                                const LaunchedOp& op = {}) {
    TraceBuilder t = gpu_trace();
    for (int i = 0; i < 5; ++i) {
      const int64_t base = i * 1'000'000;
      t.span(0, base, range_ns, name, kind, depth, 0);
      t.launched({.launch = base + 10'000,
                  .launch_dur = 10'000,
                  .start = base + 50'000,
                  .dur = 350'000,
                  .corr = uint64_t(i + 1),
                  .stream = op.stream,
                  .kind = op.kind,
                  .name = op.name});
    }
    return t;
  }
  // Device 0, a GPU of 1000 B: the memory tests' levels are shares of it.
  TraceBuilder small_gpu_trace() {
    TraceBuilder t = trace();
    t.device(0, DeviceKind::cuda, 1000);
    return t;
  }
};

// The idle-gap tests' ops are hundreds of ns apart: under the default
// threshold (20 us) they would have no gap.
AnalysisOptions min_gap(int64_t ns) {
  AnalysisOptions o;
  o.min_gap_ns = ns;
  return o;
}

// Device 0's idle gaps of `min_gap_ns` or more.
std::vector<IdleGap> gaps_of(TraceBuilder& t, int64_t min_gap_ns = 100) {
  return analyze(t.load(), min_gap(min_gap_ns)).devices.at(0).gaps;
}

// `n` steps of `ns` each.
std::vector<int64_t> durations(int n, int64_t ns) { return std::vector<int64_t>(size_t(n), ns); }

std::vector<const Finding*> by_rule(const AnalysisReport& r, const std::string& rule) {
  std::vector<const Finding*> out;
  for (const Finding& f : r.findings) {
    if (f.rule == rule) out.push_back(&f);
  }
  return out;
}

std::string evidence(const Finding& f, const std::string& key) {
  for (const auto& [k, v] : f.evidence) {
    if (k == key) return v;
  }
  return "<missing " + key + ">";
}

std::vector<std::string> evidence_all(const Finding& f, const std::string& key) {
  std::vector<std::string> out;
  for (const auto& [k, v] : f.evidence) {
    if (k == key) out.push_back(v);
  }
  return out;
}

// `f` is information only: what it costs, and advice that begins `advice`.
void expect_information(const Finding& f, int64_t impact_ns, const std::string& advice) {
  EXPECT_EQ(f.severity, Severity::info);
  EXPECT_EQ(f.impact_ns, impact_ns);
  EXPECT_EQ(f.suggestion.rfind(advice, 0), 0u) << f.suggestion;
}

// Each key's evidence in `f` against the value expected of it.
void expect_evidence(const Finding& f, const std::vector<std::pair<std::string, std::string>>& expected) {
  for (const auto& [key, value] : expected) EXPECT_EQ(evidence(f, key), value) << key;
}

// ---- idle-gap ---------------------------------------------------------------

TEST_F(Rules, BusyTimeIsTheUnionOverStreams) {
  auto t = gpu_trace();
  // Stream 0 alone has a hole [100, 300) that stream 1 fills: no device gap.
  t.op(0, 0, 0, 100);
  t.op(0, 0, 300, 100);
  t.op(0, 1, 50, 300);
  // A real gap: the device is idle over [400, 1000).
  t.op(0, 0, 1000, 100);
  AnalysisReport r = analyze(t.load(), min_gap(1));
  ASSERT_EQ(r.devices.size(), 1u);
  const DeviceIdle& d = r.devices[0];
  EXPECT_EQ(d.window_start, 0);
  EXPECT_EQ(d.window_end, 1100);
  EXPECT_EQ(d.busy_ns, 500);  // [0, 400) + [1000, 1100)
  EXPECT_EQ(d.idle_ns, 600);
  ASSERT_EQ(d.gaps.size(), 1u);
  EXPECT_EQ(d.gaps[0].start, 400);
  EXPECT_EQ(d.gaps[0].end, 1000);
  EXPECT_NEAR(r.metrics.idle_fraction, 600.0 / 1100.0, 1e-12);
  // A per-stream view would also see stream 0's hole of 200 and stream 1's
  // nothing: the per-stream classes report it, the device total does not.
  int64_t stream0 = 0;
  for (const StreamIdle& s : r.streams) {
    if (s.stream == 0) stream0 = s.host_wait_ns + s.kernel_wait_ns + s.other_ns;
  }
  EXPECT_EQ(stream0, 200 + 600);
}

TEST_F(Rules, GapDuringACompileIsCausedByTheCompile) {
  auto t = compile_in_gap(CompileKind::miss, "first compile");
  AnalysisReport r = analyze(t.load(), min_gap(100));
  ASSERT_EQ(r.devices[0].gaps.size(), 1u);
  const IdleGap& g = r.devices[0].gaps[0];
  EXPECT_EQ(g.start, 400);
  EXPECT_EQ(g.end, 1000);
  // The host's part of the gap is [400, 950), launch of the next op; the
  // compile covers 400 of those 550 ns, more than half.
  EXPECT_EQ(g.cause, GapCause::compile);
  EXPECT_EQ(g.detail, "compile of step");
  EXPECT_EQ(r.devices[0].cause_ns[size_t(GapCause::compile)], 600);
}

// An ahead-of-time compile (compile_for) before the loop idles the device
// too, once: the gap says which kind it was.
TEST_F(Rules, GapDuringAnAheadOfTimeCompileSaysSo) {
  auto t = compile_in_gap(CompileKind::aot);
  const auto gaps = gaps_of(t);
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].cause, GapCause::compile);
  EXPECT_EQ(gaps[0].detail, "ahead-of-time compile of step");
}

// The host part of the gap [100, 1200) is [100, 1100), 1000 ns, until the
// launch of the op that ends it: a compile from 100 and a synchronous wait
// in it are its cause by how much of that each covers.
TEST_F(Rules, GapCausePriorityAndCoverage) {
  auto gaps_with = [&](int64_t compile_ns, int64_t wait_start, int64_t wait_ns) {
    auto t = after_one_op();
    t.compile(0, 100, compile_ns, "f", CompileKind::miss);
    t.span(0, wait_start, wait_ns, "wait", SpanKind::wait);
    t.launched({.launch = 1100, .start = 1200, .corr = 2});
    return gaps_of(t, 10);
  };
  // Compile covers 300 (under half), the wait 600: the wait is the cause.
  const auto waited = gaps_with(300, 400, 600);
  ASSERT_EQ(waited.size(), 1u);
  EXPECT_EQ(waited[0].cause, GapCause::sync);
  // Both cover more than half: compile comes first.
  const auto both = gaps_with(700, 300, 700);
  ASSERT_EQ(both.size(), 1u);
  EXPECT_EQ(both[0].cause, GapCause::compile);
}

TEST_F(Rules, HostWorkAndLaunchCauses) {
  // Gap 1 [100, 1000): the host sits in `load_batch` and launches nothing.
  auto t = one_gap();
  t.span(0, 0, 2000, "train", SpanKind::user, 0);
  t.span(0, 150, 800, "load_batch", SpanKind::user, 1);
  // Gap 2 [1100, 1600): the host issues launches to another stream's queue
  // slowly; the op that ends the gap was launched at 1590.
  t.launched({.launch = 1200, .launch_dur = 100, .start = 1700, .dur = 10, .corr = 3, .stream = 1});
  t.launched({.launch = 1350, .launch_dur = 100, .start = 1600, .dur = 10, .corr = 4, .stream = 1});
  t.launched({.launch = 1590, .start = 1600, .dur = 50, .corr = 5});
  const auto gaps = gaps_of(t);
  ASSERT_EQ(gaps.size(), 2u);
  EXPECT_EQ(gaps[0].cause, GapCause::host_work);
  // Named by the chain of ranges around it, outermost first, with the time
  // inside `load_batch`: [150, 950) of the gap [100, 1000).
  EXPECT_EQ(gaps[0].detail, "host in `train > load_batch` on thread `main` for 800 ns of the gap");
  EXPECT_EQ(gaps[1].start, 1100);
  EXPECT_EQ(gaps[1].cause, GapCause::launch);
}

// A gap that one kind of call explains most of, but not all: its detail
// gives the time in all such calls of the same chain, and the launch call
// of the op that ended it, which took most of the rest (the shape of a
// first cuDNN convolution: a 6.0 s and a 0.5 s cudaFree, then a 3.1 s first
// cudaLaunchKernel while the module loads).
TEST_F(Rules, HostWorkGapSaysHowMuchOfItTheNamedCallsTook) {
  auto t = after_one_op();  // the gap is [100, 10100)
  t.span(0, 50, 10100, "conv", SpanKind::runtime, 0);
  t.span(0, 200, 5200, "cudaFree", SpanKind::runtime, 1);  // [200, 5400)
  t.span(0, 5500, 800, "cudaFree", SpanKind::runtime, 1);  // [5500, 6300)
  t.span(0, 6350, 100, "cudaMalloc", SpanKind::runtime, 1);
  // Its launch call returns at 10200, after the op began.
  t.launched({.launch = 6500, .launch_dur = 3700, .start = 10100, .corr = 2, .call = "cudaLaunchKernel"});
  const auto gaps = gaps_of(t);
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].cause, GapCause::host_work);
  // 5200 + 800 ns in cudaFree; the launch call's 3600 ns inside the gap are
  // most of the other 4000.
  EXPECT_EQ(gaps[0].detail,
            "host in `conv > cudaFree` on thread `main` for 6.000 us of the gap, then 3.600 us in the "
            "`cudaLaunchKernel` of the op that ended it");
}

// Start-up is recognised by what fills the gap, summed by name: a 3.2 s and
// a 0.8 s cudaFree (set-up calls of at least 100 ms) and the 3.7 s first
// launch of `cudnn_k` (a first launch of at least 1 ms loads its module)
// fill 7.7 s of the gap [100 ns, 10 s); a 2 ms cudaMalloc is named, not
// counted. Each part alone is under half the gap: the same launch when the
// kernel ran before, or the same 4 s of frees in 80 calls of 50 ms, as a
// steady loop makes them, is not start-up.
TEST_F(Rules, AGapThatStartUpFillsIsSummedByNameAndToldToProfileAfterWarmUp) {
  constexpr int64_t kMs = 1'000'000;
  auto gap = [&](bool first_launch, bool long_frees) {
    auto t = gpu_trace();
    t.launched({.corr = 1, .name = first_launch ? "k0" : "cudnn_k"});
    t.span(0, 50, 10'100 * kMs, "conv", SpanKind::runtime, 0);
    if (long_frees) {
      t.span(0, 200, 3'200 * kMs, "cudaFree", SpanKind::runtime, 1);
      t.span(0, 3'300 * kMs, 800 * kMs, "cudaFree", SpanKind::runtime, 1);
    } else {
      for (int64_t k = 0; k < 80; ++k) t.span(0, 200 + k * 51 * kMs, 50 * kMs, "cudaFree", SpanKind::runtime, 1);
    }
    t.span(0, 6'200 * kMs, 2 * kMs, "cudaMalloc", SpanKind::runtime, 1);
    // Its launch call returns at 10 s.
    t.launched({.launch = 6'300 * kMs,
                .launch_dur = 3'700 * kMs,
                .start = 10'000 * kMs,
                .corr = 2,
                .name = "cudnn_k",
                .call = "cudaLaunchKernel"});
    AnalysisReport r = analyze(t.load());
    EXPECT_EQ(r.devices[0].gaps.size(), 1u);
    return r;
  };
  AnalysisReport r = gap(true, true);
  const IdleGap& g = r.devices[0].gaps[0];
  EXPECT_EQ(g.cause, GapCause::host_work);
  EXPECT_EQ(g.work, HostWork::start_up);
  EXPECT_EQ(g.detail,
            "start-up in `conv > cudaFree` on thread `main`: 7.700 s of the gap in calls only start-up makes that "
            "long: cudaFree 4.000 s (2 calls), cudaLaunchKernel 3.700 s (the first launch of `cudnn_k`: its module "
            "loading), cudaMalloc 2.000 ms");
  auto f = by_rule(r, "idle-gap");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0]->suggestion.find("profile after warm-up steps"), std::string::npos) << f[0]->suggestion;
  EXPECT_EQ(f[0]->suggestion.find("CUDA graph"), std::string::npos) << f[0]->suggestion;
  for (auto [first_launch, long_frees] : {std::pair{false, true}, std::pair{true, false}}) {
    AnalysisReport steady = gap(first_launch, long_frees);
    EXPECT_NE(steady.devices[0].gaps[0].work, HostWork::start_up) << steady.devices[0].gaps[0].detail;
    EXPECT_EQ(steady.devices[0].gaps[0].detail.find("start-up"), std::string::npos);
  }
}

// A gap whose next op was queued before the gap began is the device's own
// wait, whatever the host did meanwhile.
TEST_F(Rules, GapWithItsNextOpAlreadyQueuedIsADeviceWait) {
  auto t = after_one_op();
  // Queued at 50, before the gap [100, 1000).
  t.launched({.launch = 50, .start = 1000, .corr = 2, .stream = 3, .name = "gemm"});
  t.span(0, 100, 900, "load_batch");  // the host is busy, but not late
  const auto gaps = gaps_of(t);
  ASSERT_EQ(gaps.size(), 1u);
  const IdleGap& g = gaps[0];
  EXPECT_EQ(g.cause, GapCause::device_wait);
  EXPECT_EQ(g.what, "`gemm` on stream 3");
  EXPECT_EQ(g.detail, "`gemm` on stream 3 was queued 50 ns before the gap and started after it");
}

// Launched early in the gap (at 150, returning at 160) but started 840 ns
// after its launch returned: most of the gap is on the device's side.
TEST_F(Rules, GapMostlyAfterTheLaunchReturnedIsADeviceWait) {
  auto t = after_one_op();
  t.launched({.launch = 150, .launch_dur = 10, .start = 1000, .corr = 2});
  const auto gaps = gaps_of(t);
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].cause, GapCause::device_wait);
}

// The host blocked in a synchronous read when the device ran out of work:
// the whole gap is that sync's, though the wait itself ends early in it.
TEST_F(Rules, GapAfterABlockingReadIsTheSyncs) {
  auto t = one_gap();
  t.span(0, 40, 80, "aten::item", SpanKind::runtime, 0);
  t.span(0, 50, 70, "cudaStreamSynchronize", SpanKind::wait, 1);  // [50, 120): 20 of the 890 ns host window
  const auto gaps = gaps_of(t);
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].cause, GapCause::sync);
  EXPECT_EQ(gaps[0].what, "aten::item > cudaStreamSynchronize");
}

// One launch in a long gap does not make it launch-bound; without any
// recorded op around, the host was between ops in its step.
TEST_F(Rules, OneLaunchIsNotLaunchBound) {
  auto t = one_gap();
  t.step(0, 1, 0, 2000);
  t.launched({.launch = 500, .start = 1500, .dur = 10, .corr = 3, .stream = 1});  // to another device op, later
  const auto gaps = gaps_of(t);
  ASSERT_GE(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].start, 100);
  EXPECT_EQ(gaps[0].cause, GapCause::between_ops);
}

// With nothing recorded on the launching thread the cause is unknown; when
// the next op has no recorded launch, host and device cannot be told apart.
TEST_F(Rules, UnknownOnlyWithoutEvidence) {
  auto t = one_gap();
  t.op(0, 0, 2000, 100);  // no launch recorded
  const auto gaps = gaps_of(t);
  ASSERT_EQ(gaps.size(), 2u);
  EXPECT_EQ(gaps[0].cause, GapCause::unknown);
  EXPECT_EQ(gaps[0].what, "nothing recorded");
  EXPECT_EQ(gaps[1].cause, GapCause::unknown);
  EXPECT_EQ(gaps[1].what, "no launch recorded");
}

// A gap ended by an op without a recorded launch while the host sat in a
// blocking wait: a sync when the wait returned inside the gap (the host
// caught up late); the device's own wait when the host was still blocked
// after the device resumed (work was queued, and the device held it back:
// a CUDA graph's kernels waiting on another stream while the host waits in
// a read that is queued behind them).
TEST_F(Rules, ANoLaunchGapIsASyncOnlyIfTheWaitEndedInIt) {
  auto t = after_one_op();
  t.span(0, 50, 700, "cudaStreamSynchronize", SpanKind::wait);     // [50, 750): returns inside [100, 1000)
  t.op(0, 0, 1000, 100);                                           // no launch recorded
  t.span(0, 1150, 2000, "cudaDeviceSynchronize", SpanKind::wait);  // [1150, 3150): past the op at 3000
  t.op(0, 0, 3000, 100);                                           // no launch recorded
  const auto gaps = gaps_of(t);
  ASSERT_EQ(gaps.size(), 2u);
  const IdleGap& returned_inside = gaps[0];
  EXPECT_EQ(returned_inside.cause, GapCause::sync);
  EXPECT_EQ(returned_inside.what, "cudaStreamSynchronize");
  const IdleGap& still_blocked = gaps[1];
  EXPECT_EQ(still_blocked.start, 1100);
  EXPECT_EQ(still_blocked.cause, GapCause::device_wait);
  EXPECT_EQ(still_blocked.what, "`k` on stream 0");
  EXPECT_NE(still_blocked.detail.find("still blocked on the device (cudaDeviceSynchronize)"), std::string::npos)
      << still_blocked.detail;
}

// A launch call that itself took most of the gap (a first launch loading
// its module) is host work in that call, named with its op.
TEST_F(Rules, ASlowLaunchCallIsHostWorkInIt) {
  auto t = after_one_op();
  t.span(0, 100, 950, "aten::add_", SpanKind::runtime, 0);
  t.launched({.launch = 120, .launch_dur = 870, .start = 1000, .corr = 2});  // returns at 990
  const auto gaps = gaps_of(t);
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].cause, GapCause::host_work);
  EXPECT_EQ(gaps[0].what, "aten::add_ > launch");
}

// The advice for host work follows what the host was in. Each trace has one
// gap [100, 1000) ended by an op launched at 990: the host sat in `inner`
// (inside `outer`) for most of it, or, with `call` set, in one slow launch
// call of that name.
struct HostWorkCase {
  std::string outer, inner, call;
  HostWork work;
  std::string advice;  // the start of the suggestion, or a phrase in it
};

TEST_F(Rules, HostWorkAdviceFollowsWhatTheHostWasIn) {
  const std::vector<HostWorkCase> cases = {
      {"train", "load_batch", "", HostWork::code, "move that host work (`load_batch`) off the critical path"},
      {"enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", "aten::copy_", "", HostWork::input_pipeline,
       "load batches in DataLoader workers"},
      {"aten::conv2d", "cudaFree", "", HostWork::memory_call, "the host was inside `cudaFree`: reserving"},
      {"aten::empty", "cuMemAlloc_v2", "", HostWork::memory_call, "the host was inside `cuMemAlloc_v2`: reserving"},
      {"aten::conv2d", "cudaStreamCreateWithFlags", "", HostWork::runtime_call,
       "not a launch, a copy or an allocation"},
      {"aten::to", "cudaMemcpy", "", HostWork::code, "move that host work (`cudaMemcpy`)"},
      {"train", "custom_op", "", HostWork::code, "move that host work (`custom_op`)"},
      {"c10d::allreduce_", "nccl:all_reduce", "", HostWork::code,
       "the host was issuing collectives (`nccl:all_reduce`)"},
      {"train", "aten::add_", "hipLaunchKernel", HostWork::launch_call, "loads the kernel's module"},
      {"train", "aten::add_", "cudaLaunchKernel", HostWork::launch_call, "the host was inside `cudaLaunchKernel`"},
  };
  for (const HostWorkCase& c : cases) {
    SCOPED_TRACE(c.inner + " / " + c.call);
    auto t = after_one_op();
    t.span(0, 50, 1000, c.outer, SpanKind::user, 0);
    if (c.call.empty()) {
      t.span(0, 150, 800, c.inner, SpanKind::runtime, 1);
      t.launched({.launch = 990, .start = 1000, .corr = 2});
    } else {
      t.span(0, 100, 900, c.inner, SpanKind::runtime, 1);
      t.launched({.launch = 120, .launch_dur = 870, .start = 1000, .corr = 2, .call = c.call});  // returns at 990
    }
    AnalysisReport r = analyze(t.load(), min_gap(100));
    ASSERT_EQ(r.devices[0].gaps.size(), 1u);
    EXPECT_EQ(r.devices[0].gaps[0].cause, GapCause::host_work);
    EXPECT_EQ(r.devices[0].gaps[0].work, c.work);
    auto f = by_rule(r, "idle-gap");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_NE(f[0]->suggestion.find(c.advice), std::string::npos) << f[0]->suggestion;
    if (c.work != HostWork::input_pipeline) {
      EXPECT_EQ(f[0]->suggestion.find("DataLoader"), std::string::npos);
    }
  }
}

// The cause of a host-side gap ends at the span that covers the wait: the
// gap [100, 1000) begins while the thread is still in `nccl:all_reduce`
// [60, 150) inside `backward` [50, 1050), and the launch that ends it
// returns at 995; `nccl:all_reduce` holds 50 of the 895 ns, `backward` all.
TEST_F(Rules, AGapIsBehindTheSpanThatCoversItNotWhatWasOpenAsItBegan) {
  auto t = one_gap();
  t.span(0, 50, 1000, "backward", SpanKind::user, 0);
  t.span(0, 60, 90, "nccl:all_reduce", SpanKind::user, 1);
  AnalysisReport r = analyze(t.load(), min_gap(100));
  ASSERT_EQ(r.devices[0].gaps.size(), 1u);
  EXPECT_EQ(r.devices[0].gaps[0].cause, GapCause::host_work);
  EXPECT_EQ(r.devices[0].gaps[0].what, "backward");
  auto f = by_rule(r, "idle-gap");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->suggestion.rfind("move that host work (`backward`)", 0), 0u) << f[0]->suggestion;
}

// A host slow at everything: bookkeeping ops (20 calls each of aten::view
// at 10 us, aten::empty at 45 us and aten::t at 40 us, against typical
// medians of 1, 3 and 5 us: 10x, 15x and 8x) run a median 10.0x slower than
// a typical profiled run, so the host work behind a gap is said to be the
// host's, not `load_batch`'s alone. At 4x (4, 12, 20 us), or with two ops
// of 20 calls and one of 19, nothing is said.
TEST_F(Rules, AHostSlowAtEveryOpIsSaidToBeSlowNotOneOp) {
  struct Case {
    int64_t view_ns, empty_ns, t_ns;
    size_t t_calls;
    bool slow;
  };
  for (const Case& c : {Case{10'000, 45'000, 40'000, 20, true}, Case{4'000, 12'000, 20'000, 20, false},
                        Case{10'000, 45'000, 40'000, 19, false}}) {
    SCOPED_TRACE(c.view_ns);
    auto t = one_gap();
    t.span(0, 150, 800, "load_batch", SpanKind::user, 0);
    int64_t at = 2'000;
    for (size_t i = 0; i < 20; ++i) {
      t.span(1, at, c.view_ns, "aten::view", SpanKind::runtime, 0);
      t.span(1, at += 100'000, c.empty_ns, "aten::empty", SpanKind::runtime, 0);
      if (i < c.t_calls) t.span(1, at += 100'000, c.t_ns, "aten::t", SpanKind::runtime, 0);
      at += 100'000;
    }
    AnalysisReport r = analyze(t.load(), min_gap(100));
    auto f = by_rule(r, "idle-gap");
    ASSERT_EQ(f.size(), 1u);
    if (!c.slow) {
      EXPECT_EQ(evidence(*f[0], "host speed"), "<missing host speed>");
      EXPECT_EQ(f[0]->suggestion.rfind("move that host work (`load_batch`)", 0), 0u) << f[0]->suggestion;
      continue;
    }
    EXPECT_EQ(evidence(*f[0], "host speed"),
              "bookkeeping ops 10.0x a typical profiled run's time (60 calls): aten::view median 10.000 us (typical "
              "1.000 us), aten::empty median 45.000 us (typical 3.000 us), aten::t median 40.000 us (typical 5.000 "
              "us)");
    EXPECT_EQ(f[0]->suggestion.rfind("the host ran every op slowly", 0), 0u) << f[0]->suggestion;
    EXPECT_NE(f[0]->suggestion.find("CPU contention"), std::string::npos) << f[0]->suggestion;
    EXPECT_NE(f[0]->suggestion.find("then, move that host work (`load_batch`)"), std::string::npos) << f[0]->suggestion;
  }
}

// loupe's runtime dispatching an op eagerly (its `eager <op>` span) is
// launch work, whether the span or the launch call inside it took the time.
TEST_F(Rules, EagerDispatchIsLaunchWork) {
  auto t = one_gap();
  t.span(0, 100, 895, "eager mul", SpanKind::runtime);  // [100, 995): the host window is [100, 995)
  t.span(0, 1100, 895, "eager add", SpanKind::runtime);
  t.launched({.launch = 1150, .launch_dur = 845, .start = 2000, .corr = 3});  // a slow launch call inside the op
  const auto gaps = gaps_of(t);
  ASSERT_EQ(gaps.size(), 2u);
  EXPECT_EQ(gaps[0].cause, GapCause::launch);
  EXPECT_EQ(gaps[0].what, "dispatching eager ops");
  EXPECT_EQ(gaps[1].cause, GapCause::launch);
}

// The finding groups gap time by what it was behind: the largest first.
TEST_F(Rules, IdleGapFindingGroupsGapsByCause) {
  auto t = after_one_op();
  uint64_t corr = 2;
  // Three gaps of 900 ns in `load_batch`, one of 400 in `log`.
  for (int64_t s : {1000, 2000, 3000}) {
    t.span(0, s - 900, 880, "load_batch");
    t.launched({.launch = s - 10, .start = s, .corr = corr++});
  }
  t.span(0, 3100, 380, "log");
  t.launched({.launch = 3490, .start = 3500, .corr = corr});
  AnalysisReport r = analyze(t.load(), min_gap(100));
  auto f = by_rule(r, "idle-gap");
  ASSERT_EQ(f.size(), 1u);
  std::vector<std::string> behind;
  for (const auto& [k, v] : f[0]->evidence) {
    if (k.starts_with("behind ")) behind.push_back(v);
  }
  ASSERT_EQ(behind.size(), 2u);
  EXPECT_EQ(behind[0], "load_batch: 2.700 us in 3 gaps (87.1% of gap time)");
  EXPECT_EQ(behind[1], "log: 400 ns in 1 gap (12.9% of gap time)");
}

TEST_F(Rules, MinGapThresholdIsHonoured) {
  auto t = gpu_trace();
  t.op(0, 0, 0, 1000);
  t.op(0, 0, 16'000, 1000);  // a 15 us gap
  t.op(0, 0, 57'000, 1000);  // a 40 us gap
  TraceModel m = t.load();
  EXPECT_EQ(analyze(m).devices[0].gaps.size(), 1u);  // default 20 us
  AnalysisOptions o;
  set_analysis_parameter(o, "min_gap", "10us");
  EXPECT_EQ(o.min_gap_ns, 10'000);
  EXPECT_EQ(analyze(m, o).devices[0].gaps.size(), 2u);
}

TEST_F(Rules, HtaStreamClasses) {
  auto t = after_one_op();
  // Launched after the previous op ended: host wait (gap 400).
  t.launched({.launch = 300, .start = 500, .corr = 2});
  // Launched early, short gap (10 us < 30 us): kernel wait.
  t.launched({.launch = 310, .start = 10'600, .corr = 3});
  // Launched early, long gap (50 us): other.
  t.launched({.launch = 320, .start = 60'700, .corr = 4});
  AnalysisReport r = analyze(t.load());
  ASSERT_EQ(r.streams.size(), 1u);
  EXPECT_EQ(r.streams[0].host_wait_ns, 400);
  EXPECT_EQ(r.streams[0].kernel_wait_ns, 10'000);
  EXPECT_EQ(r.streams[0].other_ns, 50'000);
}

// ---- transfer ---------------------------------------------------------------

TEST_F(Rules, SyncReadEveryStep) {
  auto t = gpu_trace();
  uint32_t site = t.callsite("train.cpp", 88);
  for (int64_t base : t.steps(durations(10, 1000), 0, 800)) {
    // loss.item(): waits for the step's kernel, returns at 850.
    t.transfer(0, base + 100, 750, CopyKind::device_to_host, true, HostMemory::pageable, site);
  }
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "transfer");
  ASSERT_EQ(f.size(), 1u);
  // After each read but the last, the device idles from the read's end (850:
  // no device copy is recorded, so the read's own end) to 1000, where the
  // host, back from the read, launched the next step's kernel: 150 ns, 9
  // times. The last read is at the end of the device's window.
  EXPECT_EQ(f[0]->impact_ns, 9 * 150);
  EXPECT_EQ(f[0]->title.rfind("synchronous device-to-host read at train.cpp:88 every step: 10 times, device idle "
                              "1.350 us after them",
                              0),
            0u)
      << f[0]->title;  // a read into pageable memory stages nothing: its cost is after it
  EXPECT_EQ(evidence(*f[0], "call site"), "train.cpp:88");
  EXPECT_EQ(evidence(*f[0], "count"), "10 (1.00 per step)");
  EXPECT_EQ(f[0]->severity, Severity::warning);
  EXPECT_DOUBLE_EQ(r.metrics.sync_transfers_per_step, 1.0);
}

// A habit of every step that costs the device under `transfer_warning` of
// the window is information, and says how minor it is: steps of 100 us,
// each read returning 50 ns after the step's kernel ends at 99 us, the next
// launch at 100 us: 950 ns of idle after 9 of the 10 reads (the last is at
// the window's end), 8,550 ns of a 999,000 ns window (0.86%).
TEST_F(Rules, ASmallTransferHabitIsInformationAndSaysHowSmall) {
  auto t = gpu_trace();
  uint32_t site = t.callsite("train.cpp", 88);
  for (int64_t base : t.steps(durations(10, 100'000), 0, 99'000)) {
    t.transfer(0, base + 100, 98'950, CopyKind::device_to_host, true, HostMemory::pageable, site);
  }
  TraceModel m = t.load();
  AnalysisReport r = analyze(m);
  auto f = by_rule(r, "transfer");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(r.window_end - r.window_start, 999'000);
  expect_information(
      *f[0], 9 * 950,
      "minor: 0.9% of the window, under the 1.0% at which this rule warns; keep the value on the device");
  // At a lower threshold, the same habit is a warning, its advice as is.
  AnalysisOptions o;
  o.transfer_warning_fraction = 0.005;
  AnalysisReport lower = analyze(m, o);
  auto w = by_rule(lower, "transfer");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0]->severity, Severity::warning);
  EXPECT_EQ(w[0]->suggestion.rfind("keep the value on the device", 0), 0u) << w[0]->suggestion;
}

// Reads of one habit are one finding: two ops under "## data_load ##" read
// back every step, and one under "## forward ##" does too. By hand, per
// step of 100 us: op [0, 1 us); the data_load reads at [2, 3) and [5, 6) us,
// the forward read at [20, 21) us; ops at [10, 11) and [30, 31) us, whose
// launches are not recorded. The first read leaves the device idle [3, 10),
// the second [6, 10): the habit's union is 7 us a step, 28 us in 4 steps
// (aten::item's alone too, aten::to's 16 us); forward's [21, 30) is 36 us.
TEST_F(Rules, ReadsOfOneHabitAreOneFindingWithTheirCallSites) {
  auto t = gpu_trace();
  for (int64_t base : t.steps(durations(4, 100'000), 0, 1'000)) {
    t.span(0, base + 1'500, 7'000, "## data_load ##", SpanKind::user, 0);
    t.span(0, base + 1'800, 1'500, "aten::item", SpanKind::user, 1);
    t.span(0, base + 4'800, 1'500, "aten::to", SpanKind::user, 1);
    t.transfer(0, base + 2'000, 1'000, CopyKind::device_to_host, true, HostMemory::pageable, 0);
    t.transfer(0, base + 5'000, 1'000, CopyKind::device_to_host, true, HostMemory::pageable, 0);
    t.op(0, 0, base + 10'000, 1'000);
    t.span(0, base + 19'000, 3'000, "## forward ##", SpanKind::user, 0);
    t.span(0, base + 19'500, 2'000, "aten::item", SpanKind::user, 1);
    t.transfer(0, base + 20'000, 1'000, CopyKind::device_to_host, true, HostMemory::pageable, 0);
    t.op(0, 0, base + 30'000, 1'000);
  }
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "transfer");
  ASSERT_EQ(f.size(), 2u);
  const Finding* load = f[0]->impact_ns == 28'000 ? f[0] : f[1];
  const Finding* forward = load == f[0] ? f[1] : f[0];
  EXPECT_EQ(load->impact_ns, 28'000);
  EXPECT_EQ(evidence(*load, "habit"), "2 call sites under ## data_load ##");
  EXPECT_EQ(evidence_all(*load, "call site"),
            (std::vector<std::string>{"## data_load ## > aten::item: 4 times, device idle 28.000 us",
                                      "## data_load ## > aten::to: 4 times, device idle 16.000 us"}));
  EXPECT_NE(load->title.find("at ## data_load ## (2 call sites) every step: 8 times"), std::string::npos)
      << load->title;
  EXPECT_EQ(forward->impact_ns, 36'000);
  EXPECT_EQ(evidence(*forward, "call site"), "## forward ## > aten::item");
  EXPECT_EQ(evidence(*forward, "habit"), "<missing habit>");
}

// Work queued before a read returned that starts late (held by an event on
// another stream) is the device's own wait: the read caused only the idle
// after that work, until the host's next launch.
TEST_F(Rules, IdleBeforeWorkQueuedAheadIsNotTheReadsIdle) {
  auto t = gpu_trace();
  uint32_t site = t.callsite("train.py", 42);
  for (int s = 0; s < 5; ++s) {
    const int64_t base = s * 10'000;
    const uint64_t corr = uint64_t(s) * 3 + 1;
    t.step(0, s, base, 10'000);
    t.launched({.launch = base, .start = base, .dur = 800, .corr = corr});  // [0, 800)
    // Queued at 50, runs [3000, 4000).
    t.launched({.launch = base + 50, .start = base + 3000, .dur = 1000, .corr = corr + 1, .stream = 1});
    // The read returns at 900; the host launches next at 5000.
    t.transfer(0, base + 100, 800, CopyKind::device_to_host, true, HostMemory::pageable, site);
    t.launched({.launch = base + 5000, .start = base + 5000, .corr = corr + 2});
  }
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "transfer");
  ASSERT_EQ(f.size(), 1u);
  // Per step: idle [900, 3000) waits for the queued op, not for the host;
  // [4000, 5000) is the host's, blocked in the read until 900 and back at
  // 5000: 1000 ns, 5 times.
  EXPECT_EQ(f[0]->impact_ns, 5 * 1000);
}

// Reads back with no operation of their device in the trace (JAX on its CPU
// backend) cannot say how long the device idled after them.
TEST_F(Rules, SyncReadsWithoutDeviceOperationsCannotTellDeviceIdle) {
  auto t = trace();
  uint32_t site = t.callsite("train.py", 16);
  for (int s = 0; s < 5; ++s) {
    t.step(0, s, s * 1000, 1000);
    t.transfer(0, s * 1000 + 100, 50, CopyKind::device_to_host, true, HostMemory::unknown, site);
  }
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "transfer");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->title,
            "synchronous device-to-host read at train.py:16 every step: 5 times, device idle after them cannot be "
            "told (no device operations traced)");
  EXPECT_EQ(evidence(*f[0], "device idle caused"), "cannot tell: no operations of its device are traced");
  EXPECT_EQ(f[0]->impact_ns, 0);
}

TEST_F(Rules, RareOrAsyncTransfersAreNotFlagged) {
  auto t = gpu_trace();
  uint32_t site = t.callsite("eval.cpp", 5);
  uint32_t upload = t.callsite("load.cpp", 7);
  for (int64_t base : t.steps(durations(10, 1000), 0, 800)) {
    // A pinned asynchronous upload every step: fine.
    t.transfer(0, base, 10, CopyKind::host_to_device, false, HostMemory::pinned, upload);
  }
  // One synchronous read in ten steps: not every step.
  t.transfer(0, 5000, 900, CopyKind::device_to_host, true, HostMemory::pageable, site);
  AnalysisReport r = analyze(t.load());
  EXPECT_TRUE(by_rule(r, "transfer").empty());
}

// A dataset uploaded before the loop, one batch per step's worth: as many
// uploads as steps, but none during a step. Only uploads in the steps count.
TEST_F(Rules, UploadsBeforeTheLoopAreNotPerStep) {
  auto t = gpu_trace();
  uint32_t before = t.callsite("data.cpp", 3), during = t.callsite("loop.cpp", 9);
  for (int i = 0; i < 10; ++i) t.transfer(0, i * 10, 5, CopyKind::host_to_device, false, HostMemory::pageable, before);
  const std::vector<int64_t> starts = t.steps(durations(10, 1000), 100, 800, 1000);
  for (size_t s = 0; s < starts.size(); s += 2) {
    t.transfer(0, starts[s], 50, CopyKind::host_to_device, false, HostMemory::pageable, during);
  }
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "transfer");
  ASSERT_EQ(f.size(), 1u);  // every other step is still every step's habit
  EXPECT_EQ(evidence(*f[0], "call site"), "loop.cpp:9");
  EXPECT_EQ(evidence(*f[0], "steps with one"), "5 of 10");
}

// A call site whose uploads are half from pageable memory and half from
// pinned (a batch's tensors, some pinned by the loader) is reported, and
// its title counts only the pageable ones.
TEST_F(Rules, PageableUploadTitleCountsOnlyThePageableOnes) {
  auto t = gpu_trace();
  uint32_t site = t.callsite("loader.py", 12);
  for (int64_t base : t.steps(durations(4, 1000), 100, 800)) {
    t.transfer(0, base, 10, CopyKind::host_to_device, false, HostMemory::pageable, site);
    t.transfer(0, base + 20, 10, CopyKind::host_to_device, false, HostMemory::pinned, site);
  }
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "transfer");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->title.rfind("upload from pageable host memory at loader.py:12 every step: 4 of 8 times,", 0), 0u)
      << f[0]->title;
  EXPECT_EQ(evidence(*f[0], "from pageable memory"), "4 of 8");
}

// An upload from pageable memory holds the host while it stages, whenever
// the device then runs the copy: here each call [100, 300) of a step
// returns before its copy [320, 380) starts (on stream 1), and the step's
// kernel [400, 900) follows. The device is idle through the calls of steps
// 1 to 3 (the previous kernel ended at -100 of the step); step 0's call
// lies before the device's window, which opens at the first copy (320):
// 3 x 200 ns. No idle follows a copy that started after its call returned.
TEST_F(Rules, APageableUploadCostsTheIdleWhileItStages) {
  auto t = gpu_trace();
  uint32_t site = t.callsite("loader.py", 12);
  for (int s = 0; s < 4; ++s) {
    const int64_t base = s * 1000;
    const uint64_t copy = 2 * uint64_t(s) + 1, kernel = copy + 1;
    t.step(0, s, base, 1000);
    t.transfer(0, base + 100, 200, CopyKind::host_to_device, false, HostMemory::pageable, site, 4096, 0, copy);
    t.copy(0, 1, base + 320, 60, CopyKind::host_to_device, 4096, copy);
    t.launched({.launch = base + 390, .start = base + 400, .dur = 500, .corr = kernel});
  }
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "transfer");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->impact_ns, 3 * 200);
  EXPECT_EQ(f[0]->title,
            "upload from pageable host memory at loader.py:12 every step: 4 times, device idle 600 ns during and "
            "after them");
}

// ---- memory -----------------------------------------------------------------

// Categories from the ops around each block (docs/analyses.md, "memory"),
// worked by hand: C (relu's output, freed in ReluBackward0) is an
// activation; in Adam's step, A (zeros_like, never freed) is its state and
// B (sqrt, freed before the step ends) a temporary. The peak, 700 B at
// t = 135, holds all three.
void fill_category_trace(TraceBuilder& t) {
  t.span(1, 10, 10, "aten::relu", SpanKind::runtime);
  t.span(1, 100, 100, "Optimizer.step#Adam.step", SpanKind::user);
  t.span(1, 110, 10, "aten::zeros_like", SpanKind::runtime, 1);
  t.span(1, 130, 10, "aten::sqrt", SpanKind::runtime, 1);
  t.span(1, 290, 20, "autograd::engine::evaluate_function: ReluBackward0", SpanKind::runtime);
  t.memory(0, 15, MemoryEventKind::alloc, 100, 0xc, 100, 0);
  t.memory(0, 115, MemoryEventKind::alloc, 200, 0xa, 300, 0);
  t.memory(0, 135, MemoryEventKind::alloc, 400, 0xb, 700, 0);
  t.memory(0, 150, MemoryEventKind::free, 400, 0xb, 300, 0);
  t.memory(0, 300, MemoryEventKind::free, 100, 0xc, 200, 0);
}

TEST_F(Rules, MemoryCategoriesFollowTheOpsAroundEachBlock) {
  auto t = small_gpu_trace();
  fill_category_trace(t);
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "memory");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(evidence(*f[0], "peak allocated"), "700 B of 1000 B (70.0%)");
  EXPECT_EQ(evidence(*f[0], "at peak: activation"), "100 B: allocated outside the backward and freed in it");
  EXPECT_EQ(evidence(*f[0], "at peak: optimizer state"), "200 B: allocated in Optimizer.step and kept past its end");
  EXPECT_EQ(evidence(*f[0], "at peak: temporary"),
            "400 B: freed before the op (or the optimizer step) that allocated it ended, or allocated and freed "
            "inside the backward");
  EXPECT_EQ(evidence(*f[0], "at peak: unknown"), "<missing at peak: unknown>");
}

// The blocks of fill_category_trace over time, for the viewer's lane:
// after each of the five events, C (100 B) is an activation until its free at 300, A (200 B) the
// optimizer's state from 115 on, B (400 B) a temporary from 135 to 150.
TEST_F(Rules, MemoryCategoriesOverTimeFollowEachBlock) {
  auto t = small_gpu_trace();
  fill_category_trace(t);
  TraceModel m = t.load();
  std::vector<CategoryOverTime> c = memory_categories_over_time(m, 0);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].category, "activation");
  EXPECT_EQ(c[0].bytes, (std::vector<int64_t>{100, 100, 100, 100, 0}));
  EXPECT_EQ(c[1].category, "temporary");
  EXPECT_EQ(c[1].bytes, (std::vector<int64_t>{0, 0, 400, 0, 0}));
  EXPECT_EQ(c[2].category, "optimizer state");
  EXPECT_EQ(c[2].bytes, (std::vector<int64_t>{0, 200, 200, 200, 200}));
}

// In the backward, worked by hand: D (MmBackward0's gradient for its
// input, freed by the next node, ReluBackward0) is the backward's working
// memory; E (its gradient for the weight, freed in AccumulateGrad) a
// gradient. The peak, 300 B at t = 15, holds both.
TEST_F(Rules, MemoryMadeAndFreedInTheBackwardIsItsWorkingMemory) {
  auto t = small_gpu_trace();
  t.span(1, 10, 10, "autograd::engine::evaluate_function: MmBackward0", SpanKind::runtime);
  t.span(1, 30, 10, "autograd::engine::evaluate_function: ReluBackward0", SpanKind::runtime);
  t.span(1, 45, 10, "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", SpanKind::runtime);
  t.memory(0, 12, MemoryEventKind::alloc, 100, 0xd, 100, 0);
  t.memory(0, 15, MemoryEventKind::alloc, 200, 0xe, 300, 0);
  t.memory(0, 35, MemoryEventKind::free, 100, 0xd, 200, 0);
  t.memory(0, 50, MemoryEventKind::free, 200, 0xe, 0, 0);
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "memory");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(evidence(*f[0], "at peak: temporary").substr(0, 7), "100 B: ");
  EXPECT_EQ(evidence(*f[0], "at peak: gradient").substr(0, 7), "200 B: ");
}

// The out-of-memory post-mortem, worked by hand. Fragmentation: 600 B
// allocated, 900 B reserved of 1000 B; a request for 250 B fails although
// 300 B are free in the cache and 100 B on the device.
TEST_F(Rules, OutOfMemoryWithRoomToSpareIsFragmentation) {
  auto t = small_gpu_trace();
  uint32_t site = t.callsite("train.py", 7);
  t.memory(0, 10, MemoryEventKind::alloc, 600, 0x1, 600, 900);
  t.memory(0, 20, MemoryEventKind::oom, 250, 0, 600, 900, site);
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "memory");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->severity, Severity::error);
  EXPECT_EQ(f[0]->title,
            "device 0 (dev0): out of memory at 20 ns: a request for 250 B at train.py:7 failed with 600 B allocated of "
            "1000 B");
  EXPECT_EQ(evidence(*f[0], "held then"), "600 B allocated, 900 B reserved of 1000 B");
  EXPECT_EQ(evidence(*f[0], "verdict"),
            "fragmentation: 300 B free in the allocator's cache and 100 B unreserved on the device, yet no block of "
            "250 B");
  EXPECT_NE(f[0]->suggestion.find("expandable_segments:True"), std::string::npos) << f[0]->suggestion;
}

// Exhaustion, with the activations the largest share: 700 B allocated in
// the forward (relu, freed later in the backward), 200 B temporary held;
// a request for 300 B cannot fit in 1000 B.
TEST_F(Rules, OutOfMemoryOfAFullDeviceAdvisesByTheLargestCategory) {
  auto t = small_gpu_trace();
  t.span(1, 0, 20, "aten::relu", SpanKind::runtime);
  t.span(1, 30, 20, "aten::mm", SpanKind::runtime);
  t.span(1, 100, 20, "autograd::engine::evaluate_function: ReluBackward0", SpanKind::runtime);
  t.memory(0, 10, MemoryEventKind::alloc, 700, 0x1, 700, 1000);
  t.memory(0, 35, MemoryEventKind::alloc, 200, 0x2, 900, 1000);
  t.memory(0, 40, MemoryEventKind::oom, 300, 0, 900, 1000);
  t.memory(0, 45, MemoryEventKind::free, 200, 0x2, 700, 1000);
  t.memory(0, 110, MemoryEventKind::free, 700, 0x1, 0, 1000);
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "memory");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(evidence(*f[0], "verdict"), "the device was full: 900 B allocated + 300 B requested exceeds its 1000 B");
  EXPECT_EQ(evidence(*f[0], "at the out-of-memory: activation"),
            "700 B: allocated outside the backward and freed in it");
  EXPECT_EQ(evidence(*f[0], "at the out-of-memory: temporary"),
            "200 B: freed before the op (or the optimizer step) that allocated it ended, or allocated and freed "
            "inside the backward");
  EXPECT_NE(f[0]->suggestion.find("activation checkpointing"), std::string::npos) << f[0]->suggestion;
}

// A snapshot's out-of-memory without a capacity or reserved total: which
// it was cannot be told.
TEST_F(Rules, OutOfMemoryWithoutCapacityOrReservedCannotTellWhich) {
  auto t = trace();
  t.device(0, DeviceKind::cuda, 0);
  t.memory(0, 10, MemoryEventKind::alloc, 600, 0x1, 600, 0);
  t.memory(0, 20, MemoryEventKind::oom, 250, 0, 600, 0);
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "memory");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(evidence(*f[0], "verdict"),
            "cannot tell from this trace whether the device was full or fragmented: it records neither the capacity "
            "nor a reserved total");
  EXPECT_EQ(evidence(*f[0], "held then"), "600 B allocated, unknown reserved");
}

// What was live at a chosen time (the viewer's list for a point of a
// memory lane), by hand: at t = 140, C (100 B, an activation), A (200 B,
// optimizer state) and B (400 B, a temporary) of the categories test are
// live; at t = 200, B is freed; before the first event nothing is.
TEST_F(Rules, LiveMemoryAtAPointListsItsBlocksByCategoryAndSite) {
  auto t = small_gpu_trace();
  uint32_t relu = t.callsite("model.py", 3), adam = t.callsite("train.py", 9);
  t.span(1, 10, 10, "aten::relu", SpanKind::runtime);
  t.span(1, 100, 100, "Optimizer.step#Adam.step", SpanKind::user);
  t.span(1, 110, 10, "aten::zeros_like", SpanKind::runtime, 1);
  t.span(1, 130, 10, "aten::sqrt", SpanKind::runtime, 1);
  t.span(1, 290, 20, "autograd::engine::evaluate_function: ReluBackward0", SpanKind::runtime);
  t.memory(0, 15, MemoryEventKind::alloc, 100, 0xc, 100, 0, relu);
  t.memory(0, 115, MemoryEventKind::alloc, 200, 0xa, 300, 0, adam);
  t.memory(0, 135, MemoryEventKind::alloc, 400, 0xb, 700, 0, adam);
  t.memory(0, 150, MemoryEventKind::free, 400, 0xb, 300, 0, adam);
  t.memory(0, 300, MemoryEventKind::free, 100, 0xc, 200, 0, relu);
  TraceModel m = t.load();
  LiveMemory at140 = live_memory_at(m, 0, 140);
  EXPECT_EQ(at140.allocated, 700);
  EXPECT_EQ(at140.held_before, 0);
  EXPECT_EQ(at140.by_category, (std::vector<std::pair<std::string, int64_t>>{
                                   {"activation", 100}, {"temporary", 400}, {"optimizer state", 200}}));
  ASSERT_EQ(at140.sites.size(), 2u);
  EXPECT_EQ(at140.sites[0].site, "train.py:9");
  EXPECT_EQ(at140.sites[0].bytes, 600);
  EXPECT_EQ(at140.sites[0].blocks, 2u);
  EXPECT_EQ(at140.sites[1].site, "model.py:3");
  LiveMemory at200 = live_memory_at(m, 0, 200);
  EXPECT_EQ(at200.allocated, 300);
  ASSERT_EQ(at200.sites.size(), 2u);
  EXPECT_EQ(at200.sites[0].bytes, 200);
  LiveMemory at5 = live_memory_at(m, 0, 5);
  EXPECT_EQ(at5.allocated, 0);
  EXPECT_TRUE(at5.sites.empty());
  EXPECT_TRUE(live_memory_at(m, 7, 140).sites.empty());  // no such table
}

TEST_F(Rules, MemoryPeakRetryAndLiveBlocksByCallSite) {
  auto t = small_gpu_trace();
  uint32_t a = t.callsite("model.cpp", 10), b = t.callsite("attention.cpp", 42);
  t.memory(0, 0, MemoryEventKind::reserve, 1000, 0, 0, 1000);
  t.memory(0, 10, MemoryEventKind::alloc, 100, 0x1, 100, 1000, a);
  t.memory(0, 20, MemoryEventKind::alloc, 300, 0x2, 400, 1000, b);
  t.memory(0, 30, MemoryEventKind::retry, 600, 0, 400, 1000, b);
  t.memory(0, 40, MemoryEventKind::free, 100, 0x1, 300, 1000, a);
  t.memory(0, 50, MemoryEventKind::alloc, 600, 0x3, 900, 1000, b);
  t.memory(0, 100, MemoryEventKind::free, 600, 0x3, 300, 1000, b);
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "memory");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->severity, Severity::warning);  // a retry, no OOM
  EXPECT_EQ(evidence(*f[0], "peak allocated"), "900 B of 1000 B (90.0%)");
  EXPECT_EQ(evidence(*f[0], "fragmentation at the peak"), "100 B reserved but not allocated (10.0%)");
  EXPECT_EQ(evidence(*f[0], "time above 90.0% of capacity"), "50 ns");  // [50, 100)
  EXPECT_EQ(f[0]->impact_ns, 50);
  EXPECT_EQ(evidence(*f[0], "retries (cache flushed to allocate)"), "1");
  // Live at the peak: blocks 0x2 (300) and 0x3 (600), both from attention.cpp.
  EXPECT_EQ(evidence(*f[0], "live at peak: attention.cpp:42"), "900 B in 2 blocks");
  // It begins with nothing allocated, and says so.
  EXPECT_EQ(evidence(*f[0], "allocated before the trace began"),
            "0 B (the first memory event's running total less its own bytes): every block live at the peak is in the "
            "trace");
  EXPECT_EQ(r.metrics.peak_memory, 900);
  EXPECT_DOUBLE_EQ(r.metrics.peak_memory_fraction, 0.9);
}

// A fragmented pool retries far below the high-water mark: the time the
// host waited in those retries (the runtime's `allocator retry` spans) is
// the impact, united with any time above the mark.
TEST_F(Rules, TimeInAllocatorRetriesIsPressure) {
  auto t = small_gpu_trace();
  t.memory(0, 10, MemoryEventKind::alloc, 400, 0x1, 400, 600);
  t.span(0, 100, 40, "allocator retry", SpanKind::wait);
  t.memory(0, 110, MemoryEventKind::retry, 500, 0, 400, 600);
  t.memory(0, 130, MemoryEventKind::alloc, 500, 0x2, 900, 900);  // above 90% over [130, 200)
  t.memory(0, 200, MemoryEventKind::free, 500, 0x2, 400, 900);
  t.span(1, 300, 25, "allocator retry", SpanKind::wait);  // another thread's retry
  t.memory(0, 310, MemoryEventKind::retry, 700, 0, 400, 400);
  t.span(0, 500, 1000, "allocator retry", SpanKind::user);  // not the runtime's: ignored
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "memory");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(evidence(*f[0], "retries (cache flushed to allocate)"), "2");
  EXPECT_EQ(evidence(*f[0], "time in allocator retries"), "65 ns");
  EXPECT_EQ(evidence(*f[0], "time above 90.0% of capacity"), "70 ns");
  EXPECT_EQ(f[0]->impact_ns, 100 + 25);  // [100, 140) ∪ [130, 200) ∪ [300, 325)
}

// A trace without call sites names the block by the ops open when it was
// allocated, on the one thread inside an op (a thread only running Python,
// waiting on a lock, does not count); with two such threads it cannot tell.
TEST_F(Rules, MemoryPeakNamesTheAllocatingOpWithoutCallSites) {
  for (bool second_thread_in_op : {false, true}) {
    auto t = small_gpu_trace();
    t.op(0, 0, 0, 10);
    t.span(0, 0, 100, "aten::bmm", SpanKind::runtime);
    t.span(1, 0, 1000, "threading.py(359): wait", SpanKind::user);
    if (second_thread_in_op) t.span(1, 40, 20, "aten::mm", SpanKind::runtime, 1);
    t.memory(0, 50, MemoryEventKind::alloc, 500, 0x1, 500, 500);
    AnalysisReport r = analyze(t.load());
    auto f = by_rule(r, "memory");
    ASSERT_EQ(f.size(), 1u);
    std::string key = second_thread_in_op ? "live at peak: unknown call site" : "live at peak: aten::bmm";
    EXPECT_EQ(evidence(*f[0], key), "500 B in 1 block") << second_thread_in_op;
  }
}

// Memory held before the trace began (a model's weights, usually) is in the
// running total of the first event but in no block of the trace: it is a
// share of its own, less what the trace frees of it before the peak.
TEST_F(Rules, MemoryHeldBeforeTheTraceIsAShareOfItsOwn) {
  auto t = trace();
  t.device(0, DeviceKind::cuda, 1400);
  uint32_t a = t.callsite("train.py", 7);
  t.memory(0, 10, MemoryEventKind::alloc, 100, 0x1, 1100, 1400, a);  // 1100 - 100: 1000 B held before
  t.memory(0, 20, MemoryEventKind::free, 200, 0x9, 900, 1400);       // a block from before the trace
  t.memory(0, 30, MemoryEventKind::alloc, 400, 0x2, 1300, 1400, a);  // the peak
  t.memory(0, 40, MemoryEventKind::free, 400, 0x2, 900, 1400, a);
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "memory");
  ASSERT_EQ(f.size(), 1u);
  // At the peak: 0x1 and 0x2 (500 B) from train.py, and 1000 - 200 B from
  // before the trace: 800 of the 1300 B.
  EXPECT_EQ(evidence(*f[0], "live at peak: train.py:7"), "500 B in 2 blocks");
  EXPECT_EQ(evidence(*f[0], "allocated before the trace began"),
            "1000 B (the first memory event's running total less its own bytes); 800 B of it still held at the peak "
            "(61.5% of the peak), in blocks the trace does not show");
  EXPECT_EQ(f[0]->severity, Severity::warning);  // 1300 of 1400 B, above 90%
  EXPECT_NE(f[0]->suggestion.find("(the largest share, 800 B, was held before the trace began)"), std::string::npos)
      << f[0]->suggestion;
}

TEST_F(Rules, OutOfMemoryIsAnError) {
  auto t = small_gpu_trace();
  t.memory(0, 10, MemoryEventKind::alloc, 500, 0x1, 500, 500);
  t.memory(0, 20, MemoryEventKind::oom, 800, 0, 500, 500);
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "memory");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->severity, Severity::error);
  EXPECT_EQ(evidence(*f[0], "out-of-memory"), "1");
}

// ---- leak ----------------------------------------------------------------------

// Five steps 100 ns apart. Step 0 allocates 400 B of weights; every step
// allocates a 100 B temporary it frees; with `keep`, steps 1 to 4 also
// allocate a 50 B block at train.py:9 that is never freed (`grows_in`
// says in which steps).
void fill_leak_trace(TraceBuilder& t, const std::vector<bool>& grows_in) {
  t.device(0, DeviceKind::cuda, 10'000);
  uint32_t w = t.callsite("train.py", 3), tmp = t.callsite("train.py", 8), kept = t.callsite("train.py", 9);
  int64_t total = 0;
  auto mem = [&](int64_t time, MemoryEventKind kind, int64_t bytes, uint64_t addr, uint32_t site) {
    total += kind == MemoryEventKind::alloc ? bytes : -bytes;
    t.memory(0, time, kind, bytes, addr, total, 0, site);
  };
  mem(5, MemoryEventKind::alloc, 400, 0x9, w);
  for (int64_t k = 0; k < 5; ++k) {
    t.step(0, k, k * 100, 90);
    mem(k * 100 + 10, MemoryEventKind::alloc, 100, 0x100 + uint64_t(k), tmp);
    if (k > 0 && grows_in[size_t(k - 1)]) mem(k * 100 + 20, MemoryEventKind::alloc, 50, 0x200 + uint64_t(k), kept);
    mem(k * 100 + 30, MemoryEventKind::free, 100, 0x100 + uint64_t(k), tmp);
  }
}

// Live at the step ends: 400, 450, 500, 550, 600 B; 50 B a step, held by
// the blocks of train.py:9.
TEST_F(Rules, LeakNamesWhereTheBlocksThatOutliveTheirStepWereAllocated) {
  auto t = trace();
  fill_leak_trace(t, {true, true, true, true});
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "leak");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->severity, Severity::warning);
  EXPECT_EQ(f[0]->impact_ns, 0);
  EXPECT_NE(f[0]->title.find("live memory at step ends grows 50 B a step over 4 steps (400 B to 600 B); most of "
                             "what outlives its step was allocated at train.py:9"),
            std::string::npos)
      << f[0]->title;
  EXPECT_EQ(evidence(*f[0], "growth per step"), "50 B (median); grew in 4 of 4 steps");
  EXPECT_EQ(evidence(*f[0], "allocated at train.py:9"),
            "50 B a step (200 B in 4 blocks, allocated in 4 of the 4 steps)");
  EXPECT_EQ(evidence(*f[0], "allocated at train.py:8"), "<missing allocated at train.py:8>");  // freed in its step
  // The peak is 700 B (step 4: 550 + 100 + 50): 9300 B left, 186 steps of 50 B.
  EXPECT_EQ(evidence(*f[0], "at this rate"), "the 9.1 KiB between the peak and capacity is used up in 186 more steps");
}

TEST_F(Rules, LeakNeedsGrowthInThreeStepsOfFour) {
  auto leaks = [&](const std::vector<bool>& grows_in) {
    auto t = trace();
    fill_leak_trace(t, grows_in);
    return by_rule(analyze(t.load()), "leak").size();
  };
  EXPECT_EQ(leaks({false, false, false, false}), 0u);  // flat after warm-up
  EXPECT_EQ(leaks({true, false, true, false}), 0u);    // grew in 2 steps of 4
  EXPECT_EQ(leaks({true, true, false, true}), 1u);     // 3 of 4
}

// A few bytes kept every step and one step that keeps 300 B for good (an
// optimizer's state made at its first use): live at the step ends 400,
// 401, 702, 703, 704 B. The first-to-last growth, 304 B, is 43% of the
// peak; the steady part, 1 B a step, is 4 B over four steps, under 1% of
// it. An expert reads no leak worth a finding here.
TEST_F(Rules, LeakIsTheSteadyGrowthNotOneStepThatKeepsSomething) {
  auto t = trace();
  t.device(0, DeviceKind::cuda, 10'000);
  uint32_t site = t.callsite("train.py", 9);
  int64_t total = 0;
  auto alloc = [&](int64_t time, int64_t bytes, uint64_t addr) {
    total += bytes;
    t.memory(0, time, MemoryEventKind::alloc, bytes, addr, total, 0, site);
  };
  alloc(5, 400, 0x9);
  for (int64_t k = 0; k < 5; ++k) {
    t.step(0, k, k * 100, 90);
    if (k > 0) alloc(k * 100 + 10, 1, 0x100 + uint64_t(k));
    if (k == 2) alloc(k * 100 + 20, 300, 0x200);
  }
  EXPECT_TRUE(by_rule(analyze(t.load()), "leak").empty());
}

// ---- tiny-kernels -------------------------------------------------------------

TEST_F(Rules, KernelStorm) {
  auto t = gpu_trace();
  uint64_t corr = 1;
  int64_t time = 0;
  for (int i = 0; i < 200; ++i, ++corr) {  // 2 us kernels behind 5 us launches
    t.launched({.launch = time, .launch_dur = 5000, .start = time + 6000, .dur = 2000, .corr = corr, .name = "add"});
    time += 8000;
  }
  for (int i = 0; i < 10; ++i, ++corr) {  // long kernels
    t.launched(
        {.launch = time, .launch_dur = 5000, .start = time + 6000, .dur = 100'000, .corr = corr, .name = "matmul"});
    time += 110'000;
  }
  TraceModel m = t.load();
  AnalysisReport r = analyze(m);
  auto f = by_rule(r, "tiny-kernels");
  ASSERT_EQ(f.size(), 1u);
  // The impact is the device's wait for launches: each op starts 6 us
  // after its launch began, and each launch comes when the previous op has
  // ended: 199 gaps of 6 us between the adds, 6 us before the first
  // matmul, 9 gaps of 10 us between the matmuls.
  EXPECT_EQ(f[0]->impact_ns, 199 * 6000 + 6000 + 9 * 10'000);
  EXPECT_EQ(evidence(*f[0], "host time in their launch calls"), "1.000 ms");  // 200 x 5 us
  EXPECT_EQ(evidence(*f[0], "tiny kernels"), "200 (95.2% of kernels)");
  EXPECT_EQ(evidence(*f[0], "tiny kernel"), "add (x200)");
  EXPECT_NEAR(r.metrics.tiny_kernel_fraction, 200.0 / 210.0, 1e-12);
  // Raising the bar above 95.2% silences it.
  AnalysisOptions o;
  set_analysis_parameter(o, "tiny_fraction", "96%");
  EXPECT_TRUE(by_rule(analyze(m, o), "tiny-kernels").empty());
}

// Tiny kernels launched faster than the device runs them keep it busy:
// not launch-bound, so no finding, however many there are.
TEST_F(Rules, TinyKernelsOnABusyDeviceAreNotLaunchBound) {
  auto t = gpu_trace();
  uint64_t corr = 1;
  for (int i = 0; i < 200; ++i, ++corr) {  // 2 us kernels back to back; launches of 5 us queued far ahead
    t.launched({.launch = int64_t(i) * 1000,
                .launch_dur = 5000,
                .start = 1'000'000 + int64_t(i) * 2000,
                .dur = 2000,
                .corr = corr,
                .name = "add"});
  }
  AnalysisReport r = analyze(t.load());
  EXPECT_TRUE(by_rule(r, "tiny-kernels").empty());
  EXPECT_NEAR(r.metrics.tiny_kernel_fraction, 1.0, 1e-12);  // they are tiny all the same
}

// A CUDA graph launch issues many kernels at once: each kernel carries its
// share of the one call, and the call counts once.
TEST_F(Rules, AGraphLaunchCountsOnce) {
  auto t = gpu_trace();
  int64_t time = 0;
  for (uint64_t g = 1; g <= 10; ++g) {  // 10 graphs of 100 kernels of 2 us behind one 50 us call
    t.launch(0, time, 50'000, g, 0, 0, "cudaGraphLaunch");
    for (int k = 0; k < 100; ++k) t.op(0, 0, time + 60'000 + k * 2000, 2000, g, DeviceOpKind::kernel, "fused");
    time += 300'000;
  }
  AnalysisReport r = analyze(t.load());
  // 2 us kernels against 500 ns of launch each: none is tiny.
  EXPECT_TRUE(by_rule(r, "tiny-kernels").empty());
  EXPECT_EQ(r.metrics.tiny_kernel_fraction, 0.0);
}

// An op run eagerly costs the host its whole dispatch (the runtime's
// `eager <op>` span around the launch), not only the launch call: its
// kernel is tiny when shorter than that, and the span's line is reported.
TEST_F(Rules, EagerOpsAreTinyAgainstTheirWholeDispatch) {
  auto t = gpu_trace();
  uint32_t update = t.callsite("train.cpp", 42), other = t.callsite("train.cpp", 50);
  uint64_t corr = 1;
  int64_t time = 0;
  for (int i = 0; i < 150; ++i, ++corr) {  // 300 ns kernels: longer than the 100 ns launch, not the 1 us op
    t.span(0, time, 1000, "eager mul", SpanKind::runtime, 0, i < 100 ? update : other);
    t.launched({.launch = time + 800, .launch_dur = 100, .start = time + 950, .dur = 300, .corr = corr, .name = "mul"});
    time += 2000;
  }
  for (int i = 0; i < 50; ++i, ++corr) {  // 300 ns kernels of a jitted function: not tiny
    t.span(0, time, 1000, "jit step", SpanKind::runtime);
    t.launched({.launch = time + 800,
                .launch_dur = 100,
                .start = time + 950,
                .dur = 300,
                .corr = corr,
                .name = "loop_fusion[mul]"});
    time += 2000;
  }
  TraceModel m = t.load();
  AnalysisReport r = analyze(m);
  auto f = by_rule(r, "tiny-kernels");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(evidence(*f[0], "tiny kernels"), "150 (75.0% of kernels)");
  EXPECT_EQ(evidence(*f[0], "host time in their launch calls"), "150.000 us");  // 150 ops of 1 us
  // The device waited 1.7 us for each next launch (an op ends at +1.25 us,
  // the next is launched at +2.8 us and starts at +2.95 us): 199 gaps.
  EXPECT_EQ(f[0]->impact_ns, 199 * 1700);
  EXPECT_EQ(evidence_all(*f[0], "call site"), (std::vector<std::string>{"train.cpp:42 (x100)", "train.cpp:50 (x50)"}));
  EXPECT_EQ(evidence(*f[0], "launched eagerly (outside jit)"), "150 of 200");
}

// An eager op that waited for room in a full launch queue did not spend
// that time issuing: a device-bound eager loop is not launch-bound.
TEST_F(Rules, EagerOpsWaitingOnAFullQueueAreNotTiny) {
  auto t = gpu_trace();
  uint64_t corr = 1;
  int64_t time = 0;
  for (int i = 0; i < 150; ++i, ++corr) {  // 5 us kernels; each op waited 4.9 us of its 5.5 us
    t.span(0, time, 5500, "eager matmul", SpanKind::runtime);
    t.span(0, time + 100, 4900, "launch queue full", SpanKind::wait, 1);
    t.launched(
        {.launch = time + 5100, .launch_dur = 100, .start = time + 5200, .dur = 5000, .corr = corr, .name = "matmul"});
    time += 5500;
  }
  AnalysisReport r = analyze(t.load());
  EXPECT_TRUE(by_rule(r, "tiny-kernels").empty());
  EXPECT_EQ(r.metrics.tiny_kernel_fraction, 0.0);
}

// ---- recompile ----------------------------------------------------------------

TEST_F(Rules, RecompilesAfterWarmupWithReasons) {
  auto t = gpu_trace();
  uint32_t site = t.callsite("train.cpp", 61);
  for (int s = 0; s < 8; ++s) t.step(0, s, s * 1000, 1000);
  t.op(0, 0, 0, 8000);  // the device is busy throughout
  t.compile(0, 10, 100, "f", CompileKind::miss, "first compile", "f32[32]", 1, site);
  t.compile(0, 20, 50, "g", CompileKind::miss, "first compile", "f32[1]", 2, site);
  t.compile(0, 3010, 200, "f", CompileKind::miss, "arg 0 `x`: now f32[31], before f32[32]", "f32[31]", 1, site);
  t.compile(0, 5010, 300, "f", CompileKind::miss, "arg 0 `x`: now f16[32], before f32[32]", "f16[32]", 1, site);
  t.compile(0, 6010, 5, "f", CompileKind::hit, "", "f32[32]", 1, site);
  TraceModel m = t.load();
  AnalysisReport r = analyze(m);
  auto f = by_rule(r, "recompile");
  ASSERT_EQ(f.size(), 1u) << "g compiled once: warm-up only";
  EXPECT_EQ(f[0]->impact_ns, 500);
  EXPECT_EQ(evidence(*f[0], "compiles"), "3 in all, 2 after warm-up");
  EXPECT_EQ(evidence(*f[0], "shape change"), "1");
  EXPECT_EQ(evidence(*f[0], "dtype change"), "1");
  EXPECT_EQ(evidence(*f[0], "called at"), "train.cpp:61 (x2)");
  EXPECT_EQ(evidence(*f[0], "device idle while compiling"), "0 ns");
  EXPECT_EQ(r.metrics.compiles, 4u);
  EXPECT_EQ(r.metrics.recompiles, 2u);
  // With four warm-up steps, the compile at step 3 is warm-up too.
  AnalysisOptions o;
  o.warmup_steps = 4;
  EXPECT_EQ(analyze(m, o).metrics.recompiles, 1u);
}

// One compile of a function: why it missed the cache, what it compiled for
// and which function object it was.
struct CompileCall {
  std::string reason, signature;
  uint64_t object;
};

// The recompile finding when `calls` compile `fn` at `site`, 1000 ns
// apart, on a device busy throughout (what they say is all that differs);
// none, and a failure, unless there is exactly one.
std::optional<Finding> recompile_finding(TraceBuilder& t, const std::string& fn, uint32_t site,
                                         const std::vector<CompileCall>& calls) {
  int64_t start = 0;
  for (const CompileCall& c : calls) {
    t.compile(0, start, 100, fn, CompileKind::miss, c.reason, c.signature, c.object, site);
    start += 1000;
  }
  t.op(0, 0, 0, start);
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "recompile");
  EXPECT_EQ(f.size(), 1u);
  return f.size() == 1 ? std::optional<Finding>(*f[0]) : std::nullopt;
}

// JAX's explanations of tracing cache misses (jax_explain_cache_misses), as
// JAX 0.6 words them, classified as the runtime's reasons are.
TEST_F(Rules, RecompileReasonsInJaxWords) {
  auto t = gpu_trace();
  const std::optional<Finding> f = recompile_finding(
      t, "train_step (train.py:12)", t.callsite("train.py", 40),
      {{"never seen function train_step id=7 defined at train.py:12", "f32[8,4]", 7},
       {"all previously seen cache keys are different. Closest previous key: * key with different input types: "
        "types now: x: f32[9,4], y: f32[9] * at x, now f32[9,4] and before f32[8,4] * at y, now f32[9] and "
        "before f32[8]",
        "f32[9,4], f32[9]", 7},
       {"all previously seen cache keys are different. Closest previous key: * key with different input types: "
        "types now: x: bf16[8,4] * at x, now bf16[8,4] and before f32[8,4]",
        "bf16[8,4]", 7},
       {"all previously seen cache keys are different. Closest previous key: * key with different input types: "
        "types now: s: f32[]{weak_type=True} * at s, now f32[]{weak_type=True} and before f32[]{weak_type=False}",
        "f32[]", 7},
       {"all previously seen cache keys are different. Closest previous key: * key with different value of "
        "static args: now 3 and before 2",
        "f32[8,4]", 7},
       {"never seen function train_step id=9 defined at train.py:12 but seen another function defined on the "
        "same line; maybe the function is being re-defined repeatedly, preventing caching?",
        "f32[8,4]", 9},
       {"input types now f32[9,4], f32[3], before f32[8,4], f32[3] (JAX gave no explanation)", "f32[9,4], f32[3]", 7}});
  ASSERT_TRUE(f.has_value());
  expect_evidence(*f, {{"compiles", "7 in all, 6 after warm-up"},
                       {"shape change", "2"},
                       {"dtype change", "2"},
                       {"static argument change", "1"},
                       {"new function object", "1"},
                       {"other", "<missing other>"}});
}

// Dynamo's guard failures (torch.compile's recompile reasons), as PyTorch
// 2.15 words them.
TEST_F(Rules, RecompileReasonsInDynamoWords) {
  auto t = gpu_trace();
  const std::string later = "x[s0,16], w[16]";  // the dynamic signature after the first recompile
  const std::optional<Finding> f =
      recompile_finding(t, "loss_fn (train.py:17)", t.callsite("train.py", 37),
                        {{"", "x[32,16], w[16]", 0},
                         {"0/0: tensor 'x' size mismatch at index 0. expected 32, actual 40", later, 0},
                         {"0/1: tensor 'x' stride mismatch at index 0. expected 16, actual 1", later, 0},
                         {"0/2: tensor 'x' rank mismatch. expected 2, actual 3", later, 0},
                         {"0/3: tensor 'x' dtype mismatch. expected Float, actual Double", later, 0},
                         {"1/0: G['i'] == 0 # m = torch.compile(lambda x: x + i) # tc2.py:15 in <lambda>", later, 0},
                         {"0/4: tensor 'x' requires_grad mismatch. expected requires_grad=0", later, 0}});
  ASSERT_TRUE(f.has_value());
  expect_evidence(*f, {{"compiles", "7 in all, 6 after warm-up"},
                       {"shape change", "3"},
                       {"dtype change", "1"},
                       {"static argument change", "1"},
                       {"other", "1"}});
  EXPECT_NE(f->title.find("(shape change)"), std::string::npos) << f->title;
}

// A trace of compiles alone (JAX on its CPU backend records no device
// operations) cannot say how long a device idled.
TEST_F(Rules, RecompilesWithoutDeviceOperationsCannotTellDeviceIdle) {
  auto t = trace();
  uint32_t site = t.callsite("train.py", 40);
  t.compile(0, 0, 100, "f", CompileKind::miss, "never seen function f id=1", "f32[8]", 1, site);
  t.compile(0, 1000, 100, "f", CompileKind::miss, "* at x, now f32[9] and before f32[8]", "f32[9]", 1, site);
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "recompile");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(evidence(*f[0], "device idle while compiling"), "cannot tell: the trace has no device operations");
}

TEST_F(Rules, JitCreatedInALoop) {
  auto t = gpu_trace();
  uint32_t site = t.callsite("loop.cpp", 9);
  const std::vector<int64_t> starts = t.steps(durations(5, 1000), 200, 700);
  for (size_t s = 0; s < starts.size(); ++s) {
    // Same signature, a new function object every step: no reason text.
    t.compile(0, starts[s] + 10, 100, "step", CompileKind::miss, s == 0 ? "first compile" : "", "f32[4]",
              uint64_t(100 + s), site);
  }
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "recompile");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(evidence(*f[0], "new function object"), "4");
  EXPECT_NE(f[0]->suggestion.find("create the jitted function once"), std::string::npos);
  // The device idled during each of the 4 later compiles: 100 ns each.
  EXPECT_EQ(evidence(*f[0], "device idle while compiling"), "400 ns");
}

// ---- async-timing -------------------------------------------------------------

TEST_F(Rules, TimingDispatchOnly) {
  // The kernels end 400 us into each range: 300 us after it.
  auto t = ranges_launching(100'000, "timed step", SpanKind::timing, 1);
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "async-timing");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->impact_ns, 5 * 300'000);
  EXPECT_EQ(evidence(*f[0], "instances that lag"), "5 of 5");
}

TEST_F(Rules, TimingThatWaitsIsFine) {
  auto t = ranges_launching(450'000, "timed step", SpanKind::timing);  // blocks until the kernel ends
  EXPECT_TRUE(by_rule(analyze(t.load()), "async-timing").empty());
}

// The same lag on ranges that mark code (a record_function annotation, a
// program's own range) is how asynchronous programs run: no finding.
TEST_F(Rules, OnlyDeclaredTimingsAreJudged) {
  auto t = ranges_launching(100'000, "## forward ##", SpanKind::user);
  EXPECT_TRUE(by_rule(analyze(t.load()), "async-timing").empty());
}

TEST_F(Rules, ARangeThatOnlyUploadsIsNotATiming) {
  auto t = ranges_launching(100'000, "load batch", SpanKind::timing, 0,
                            {.stream = 1, .kind = DeviceOpKind::memcpy, .name = "upload"});
  EXPECT_TRUE(by_rule(analyze(t.load()), "async-timing").empty());
}

// ---- completeness --------------------------------------------------------------

// Two ops at [0, 100) and [900, 1,000) us: 80% idle, an error on a complete
// trace. A source that numbered 1,000 host ops of which the trace holds 10
// (1.0%) was sampled: the idle may be work it lost, so the finding is a
// warning that says what is missing; 600 of 1,000 (60%) is not sparse.
TEST_F(Rules, ASampledTraceGetsNoIdleVerdict) {
  auto build = [&](const char* held) {
    auto t = gpu_trace();
    t.op(0, 0, 0, 100'000);
    t.op(0, 0, 900'000, 100'000);
    if (held != nullptr) {
      t.meta(kMetaHostOpIds, held);
      t.meta(kMetaHostOpIdSpan, "1000");
    }
    return analyze(t.load());
  };
  AnalysisReport complete = build(nullptr);
  EXPECT_TRUE(complete.incomplete.empty());
  ASSERT_EQ(by_rule(complete, "idle-gap").size(), 1u);
  EXPECT_EQ(by_rule(complete, "idle-gap")[0]->severity, Severity::error);
  AnalysisReport sampled = build("10");
  ASSERT_EQ(sampled.incomplete.size(), 1u);
  EXPECT_EQ(
      sampled.incomplete[0].missing.rfind("host ops: the trace holds 10 of the 1,000 its source numbered (1.0%)", 0),
      0u)
      << sampled.incomplete[0].missing;
  auto f = by_rule(sampled, "idle-gap");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->severity, Severity::warning);
  EXPECT_EQ(evidence(*f[0], "incomplete trace"),
            sampled.incomplete[0].missing + "; cannot be trusted: " + sampled.incomplete[0].untrusted);
  EXPECT_EQ(f[0]->impact_ns, by_rule(complete, "idle-gap")[0]->impact_ns);  // the figures stand, the verdict not
  EXPECT_TRUE(build("600").incomplete.empty());
}

// Events the recorder dropped make a trace incomplete too.
TEST_F(Rules, DroppedEventsMakeATraceIncomplete) {
  auto t = gpu_trace();
  t.op(0, 0, 0, 100);
  t.meta("dropped_events", "3");
  AnalysisReport r = analyze(t.load());
  ASSERT_EQ(r.incomplete.size(), 1u);
  EXPECT_EQ(r.incomplete[0].missing, "the recorder dropped 3 events (a buffer full) and lost 0 (a write error)");
}

// Graph launch 7 replays a memset at [10, 20) us and a kernel at
// [900, 910): 20 of its 900 us busy, 880 idle inside. Launch 8 replays
// kernels back to back at [1,000, 1,200): whole. The window is
// [10, 1,200), 1,190 us; the idle inside replay 7 is 73.9% of it. Launch 9 replays nothing recorded.
TEST_F(Rules, GraphReplaysMostlyIdleMakeATraceIncomplete) {
  auto t = gpu_trace();
  t.launch(0, 0, 5, 7, 0, 0, "cudaGraphLaunch");
  t.launch(0, 6, 5, 8, 0, 0, "cudaGraphLaunch");
  t.op(0, 0, 10'000, 10'000, 7, DeviceOpKind::memset, "Memset");
  t.op(0, 0, 900'000, 10'000, 7);
  t.op(0, 0, 1'000'000, 100'000, 8);
  t.op(0, 1, 1'100'000, 100'000, 8);
  AnalysisReport r = analyze(t.load());
  ASSERT_EQ(r.incomplete.size(), 1u);
  EXPECT_EQ(
      r.incomplete[0].missing,
      "CUDA graph replays mostly idle between their first and last recorded operation: 1 of 2 (880.000 us of device "
      "idle inside them, 73.9% of the window); the trace lacks some of their kernels, or the device waited "
      "inside the graph, and cannot tell which");
  auto f = by_rule(r, "idle-gap");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->severity, Severity::warning);
  // A launch whose replay recorded nothing is named too.
  auto u = gpu_trace();
  u.launch(0, 0, 5, 9, 0, 0, "cudaGraphLaunch");
  u.launched({.launch = 6, .start = 10, .corr = 10, .call = "cudaLaunchKernel"});
  AnalysisReport none = analyze(u.load());
  ASSERT_EQ(none.incomplete.size(), 1u);
  EXPECT_EQ(none.incomplete[0].missing, "CUDA graph replays with no operation recorded at all: 1 of 1");
}

// ---- steps and the rest ----------------------------------------------------------

TEST_F(Rules, StepStatistics) {
  auto t = gpu_trace();
  t.steps({10, 10, 10, 40}, 0, 5);
  AnalysisReport r = analyze(t.load());
  EXPECT_EQ(r.steps.count, 4u);
  EXPECT_EQ(r.steps.median_ns, 10);
  // Interpolated between the third and fourth of 10, 10, 10, 40 (numpy's
  // default): 10 + 0.7 x 30.
  EXPECT_EQ(r.steps.p90_ns, 31);
  EXPECT_EQ(r.steps.steps[0].compute_ns, 5);
  EXPECT_EQ(r.steps.steps[0].idle_ns, 5);
  auto f = by_rule(r, "steps");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->severity, Severity::warning);  // p90 = 4 x median
  EXPECT_EQ(f[0]->impact_ns, 30);                // the 40 ns step, over the median
}

// The host runs ahead of the device: each step's device window runs from
// the end of the previous one to when the device finished what the step
// launched, found by correlation id, from any thread of the step's process
// (thread 1 launches step 1's backward) but not another process's. By hand:
//   step 1, host [0, 100): ops 1-3 at [20, 80), [80, 150), [150, 190):
//     window [0, 190), busy 170, idle 20 (before the first op);
//   step 2, host [100, 200): ops 4-5 at [190, 260), [300, 350):
//     window [190, 350), busy 120, idle 40;
//   step 3, host [200, 300): op 6 at [350, 380): window [350, 380), busy 30.
// Process 2's launch during step 1 runs at [400, 500) and belongs to none.
// By time overlap with the host ranges, step 1 would have been 80 busy of
// 100 and step 3 60 busy of 100.
TEST_F(Rules, StepsOwnTheDeviceWorkTheyLaunched) {
  auto t = gpu_trace();
  t.thread(2, 2);
  t.step(0, 1, 0, 100);
  t.step(0, 2, 100, 100);
  t.step(0, 3, 200, 100);
  t.launch(0, 10, 5, 1);
  t.launch(0, 20, 5, 2);
  t.launch(1, 50, 5, 3);
  t.launch(0, 110, 5, 4);
  t.launch(0, 150, 5, 5);
  t.launch(0, 290, 5, 6);
  t.launch(2, 30, 5, 7);
  t.op(0, 0, 20, 60, 1);
  t.op(0, 0, 80, 70, 2);
  t.op(0, 0, 150, 40, 3);
  t.op(0, 0, 190, 70, 4);
  t.op(0, 0, 300, 50, 5);
  t.op(0, 0, 350, 30, 6);
  t.op(0, 1, 400, 100, 7);
  AnalysisReport r = analyze(t.load());
  ASSERT_EQ(r.steps.steps.size(), 3u);
  EXPECT_EQ(r.steps.linked, 3u);
  struct Window {
    int64_t start, end, busy, idle;
  };
  const Window by_hand[] = {{0, 190, 170, 20}, {190, 350, 120, 40}, {350, 380, 30, 0}};
  for (size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    const StepStats::Step& s = r.steps.steps[i];
    EXPECT_EQ(s.device_start, by_hand[i].start);
    EXPECT_EQ(s.device_end, by_hand[i].end);
    EXPECT_EQ(s.compute_ns, by_hand[i].busy);
    EXPECT_EQ(s.idle_ns, by_hand[i].idle);
  }
  auto f = by_rule(r, "steps");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(evidence(*f[0], "device time of the steps"),
            "380 ns: each step's window ends when the device finished the work it launched (3 of 3 steps linked to "
            "their device operations by correlation id)");
  EXPECT_EQ(evidence(*f[0], "device idle"), "60 ns (15.8%)");
}

// A device-bound run that blocks in an `.item()` read in steps 3 and 5 and
// runs ahead in the others: on the host its steps take 100, 100, 2,900,
// 100 and 2,000 ns (p90 is 24.4x the median); on the device each step's
// one op takes 1,000 ns. By hand, the launches at 10, 110, 210, 3,110 and
// 3,210 start ops at 20, 1,020, 2,020, 3,110 and 4,110; the windows are
// [0, 1,020), [1,020, 2,020), [2,020, 3,100), [3,100, 4,110) and
// [4,110, 5,200): 1,020, 1,000, 1,080, 1,010 and 1,090 ns. Steps 1 and 2
// took the host 100 ns of windows over 1,000: the queue filling (200 ns of
// host against 2,020 on the device), left out. Steps 3 to 5 are judged:
// median 1,080, p10 1,024, p90 1,088 (numpy's interpolation): steady.
TEST_F(Rules, StepsAreJudgedOnTheDeviceAndTheFirstOnesFillTheQueue) {
  auto build = [&](bool linked) {
    auto t = gpu_trace();
    const int64_t host_start[] = {0, 100, 200, 3'100, 3'200}, host_dur[] = {100, 100, 2'900, 100, 2'000};
    const int64_t op_start[] = {20, 1'020, 2'020, 3'110, 4'110};
    for (int s = 0; s < 5; ++s) {
      const uint64_t corr = linked ? uint64_t(s + 1) : 0;
      t.step(0, s + 1, host_start[s], host_dur[s]);
      t.launched({.launch = host_start[s] + 10, .start = op_start[s], .dur = 1'000, .corr = corr});
    }
    return t.load();
  };
  AnalysisReport r = analyze(build(true));
  EXPECT_TRUE(r.steps.on_device);
  EXPECT_EQ(r.steps.judged, 3u);
  EXPECT_EQ(r.steps.median_ns, 1'080);
  EXPECT_EQ(r.steps.p10_ns, 1'024);
  EXPECT_EQ(r.steps.p90_ns, 1'088);
  ASSERT_EQ(r.steps.steps.size(), 5u);
  EXPECT_EQ(r.steps.steps[2].device_end, 3'100);
  EXPECT_EQ(r.steps.steps[4].device_start, 4'110);
  EXPECT_TRUE(r.steps.steps[0].queue_fill);
  EXPECT_TRUE(r.steps.steps[1].queue_fill);
  EXPECT_FALSE(r.steps.steps[2].queue_fill);
  EXPECT_EQ(r.metrics.step_time, 1'080);
  auto f = by_rule(r, "steps");
  ASSERT_EQ(f.size(), 1u);
  expect_information(*f[0], 0, "steps are steady");
  EXPECT_NE(f[0]->title.find(" on the device"), std::string::npos) << f[0]->title;
  EXPECT_EQ(evidence(*f[0], "step time judged on"),
            "device windows: every step is linked to the device work it launched");
  EXPECT_EQ(evidence(*f[0], "queue fill"),
            "the first 2 steps: the host ran ahead of the device (host 200 ns, device windows 2.020 us) while the "
            "launch queue filled; left out of the step times judged");
  // Unlinked, the same run can only be judged on the host, and says so.
  AnalysisReport host = analyze(build(false));
  EXPECT_FALSE(host.steps.on_device);
  EXPECT_EQ(host.steps.median_ns, 100);
  auto h = by_rule(host, "steps");
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0]->severity, Severity::warning);
  EXPECT_EQ(evidence(*h[0], "step time judged on"),
            "host time: 0 of 5 steps are linked to their device work by correlation id, so device windows cannot "
            "be compared");
}

// A profile that starts while the device still runs work queued before it:
// the first step's window starts when that work ends (at 500, the op
// launched before the profile), not at the step's start, else the first
// step looks 5x slower than the rest. Steps of 100 ns on the host launch
// one op of 100 ns each: the windows are [500, 600), [600, 700), ...
TEST_F(Rules, TheFirstStepDoesNotOwnWorkQueuedBeforeIt) {
  auto t = gpu_trace();
  t.op(0, 0, 0, 500);  // launched before the profile began: no launch in the trace
  for (int s = 0; s < 4; ++s) {
    const int64_t start = s * 100;
    t.step(0, s + 1, start, 100);
    t.launched({.launch = start + 10, .start = 500 + s * 100, .corr = uint64_t(s + 1)});
  }
  AnalysisReport r = analyze(t.load());
  ASSERT_EQ(r.steps.steps.size(), 4u);
  EXPECT_EQ(r.steps.steps[0].device_start, 500);
  EXPECT_EQ(r.steps.steps[0].device_end, 600);
  EXPECT_EQ(r.steps.median_ns, 100);
  EXPECT_EQ(r.steps.p90_ns, 100);
}

// Without correlation ids nothing links a launch to its operation: each
// step's window is its host range, and the finding says why.
TEST_F(Rules, StepsWithoutLinkedLaunchesUseTheirHostTime) {
  auto t = gpu_trace();
  t.step(0, 1, 0, 100);
  t.step(0, 2, 100, 100);
  t.launched({.launch = 10, .start = 20});  // correlation 0: linked to nothing
  AnalysisReport r = analyze(t.load());
  ASSERT_EQ(r.steps.steps.size(), 2u);
  EXPECT_EQ(r.steps.linked, 0u);
  EXPECT_EQ(r.steps.steps[0].device_end, 100);
  EXPECT_EQ(r.steps.steps[0].compute_ns, 80);
  EXPECT_EQ(r.steps.steps[1].device_start, 100);
  EXPECT_EQ(r.steps.steps[1].compute_ns, 20);
  auto f = by_rule(r, "steps");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(evidence(*f[0], "device time of the steps"),
            "200 ns: the trace links no launch to a device operation, so each step's window is its own time on the "
            "host");
}

// ---- communication -------------------------------------------------------------

// Compute on stream 0 at [0, 100) and [200, 300); an all-reduce on stream 1
// at [50, 250) and a broadcast at [400, 450). By hand: collective time 250,
// of which [50, 100) and [200, 250) overlap compute (100), exposed
// [100, 200) and [400, 450) = 150.
TEST_F(Rules, ExposedCommunicationIsCollectiveTimeNoComputeOverlaps) {
  auto t = gpu_trace();
  t.op(0, 0, 0, 100, 0, DeviceOpKind::kernel, "gemm");
  t.op(0, 0, 200, 100, 0, DeviceOpKind::kernel, "gemm");
  t.op(0, 1, 50, 200, 0, DeviceOpKind::kernel, "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)");
  t.op(0, 1, 400, 50, 0, DeviceOpKind::kernel,
       "ncclDevKernel_Broadcast_RING_LL(ncclDevComm*, unsigned long, ncclWork*)");
  t.step(0, 1, 0, 300);
  t.step(0, 2, 300, 200);
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "communication");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->impact_ns, 150);
  EXPECT_EQ(evidence(*f[0], "collective time"), "250 ns");
  EXPECT_EQ(evidence(*f[0], "overlapped by compute"), "100 ns");
  // Step 1 exposes [100, 200), step 2 [400, 450): median of 100 and 50.
  EXPECT_EQ(evidence(*f[0], "exposed per step"), "median 75 ns over 2 steps (from 50 ns to 100 ns)");
  EXPECT_EQ(f[0]->severity, Severity::warning);  // 150 of a 450 ns window
  // Steps split device time four ways that add up to each step: compute,
  // communication alone, copies alone, idle.
  const StepStats::Step& s1 = r.steps.steps[0];
  EXPECT_EQ(s1.compute_ns, 200);
  EXPECT_EQ(s1.communication_ns, 100);
  EXPECT_EQ(s1.idle_ns, 0);
  const StepStats::Step& s2 = r.steps.steps[1];
  EXPECT_EQ(s2.communication_ns, 50);
  EXPECT_EQ(s2.idle_ns, 150);
}

// What a collective does comes first from the call that launched it, as
// PyTorch records it (a `nccl:all_reduce` range around the launch), since
// NCCL 2.19 on names every collective kernel ncclDevKernel_Generic and a
// post-processed trace can rename kernels; then from the kernel's name;
// with neither it is unnamed. By hand: the all-reduce [50, 150) (its kernel
// says SendRecv), the all-gather [200, 240), the unnamed [300, 310); no
// compute, so each is exposed whole.
TEST_F(Rules, ACollectivesOperationComesFromItsLaunchingCallThenItsKernelName) {
  auto t = gpu_trace();
  t.span(0, 0, 20, "nccl:all_reduce", SpanKind::user, 0);
  t.span(0, 2, 15, "record_param_comms", SpanKind::runtime, 1);
  t.launched({.launch = 5,
              .start = 50,
              .corr = 1,
              .stream = 1,
              .name = "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)",
              .call = "cudaLaunchKernel"});
  t.op(0, 1, 200, 40, 0, DeviceOpKind::kernel, "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  t.op(0, 1, 300, 10, 0, DeviceOpKind::kernel, "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)");
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "communication");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(evidence_all(*f[0], "operation"),
            (std::vector<std::string>{"all-reduce: 1 kernel, median 100 ns, 100 ns, 100 ns exposed",
                                      "all-gather: 1 kernel, median 40 ns, 40 ns, 40 ns exposed",
                                      "unnamed: 1 kernel, median 10 ns, 10 ns, 10 ns exposed"}));
  // Not launched by the autograd engine: whether they reduce gradients
  // cannot be told, so the advice covers both.
  EXPECT_NE(f[0]->suggestion.find("most of the exposed time in all-reduce (100 ns, all launched outside any marked "
                                  "range): only 0 of 1 launched in the "
                                  "backward pass: if they reduce gradients after backward() returns"),
            std::string::npos)
      << f[0]->suggestion;
}

// Many short all-reduces a step each pay NCCL's fixed cost: the advice is
// to bucket them. Two steps, each with `per_step` all-reduces of `dur` ns
// on stream 1 and compute on stream 0 after them, each launched (if
// `backward`) inside an `autograd::engine::evaluate_function` span, as
// DDP's gradient hooks are. Bucketing is advised only for at least 32 a
// step with a median under 50 us; all-reduces the autograd engine launched
// already start in the backward pass, others may not reduce gradients.
TEST_F(Rules, ManyShortAllReducesAStepAreToldToBucketAndOnlyThey) {
  auto advice = [&](int per_step, int64_t dur, bool backward) {
    auto t = gpu_trace();
    const int64_t step = 2 * per_step * dur + 100;
    uint64_t correlation = 0;
    for (int s = 0; s < 2; ++s) {
      t.step(0, s + 1, s * step, step);
      for (int k = 0; k < per_step; ++k) {
        const int64_t at = s * step + 2 * k * dur;
        if (backward) {
          t.span(1, at, 5, "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", SpanKind::runtime);
          t.launch(1, at + 1, 2, ++correlation, 0, 1, "cudaLaunchKernel");
        }
        t.op(0, 1, at, dur, backward ? correlation : 0, DeviceOpKind::kernel, "ncclKernel_AllReduce_RING_LL_Sum_float");
      }
      t.op(0, 0, s * step + 2 * per_step * dur, 100, 0, DeviceOpKind::kernel, "gemm");
    }
    AnalysisReport r = analyze(t.load());
    auto f = by_rule(r, "communication");
    return f.size() == 1 ? f[0]->suggestion : std::string("<no finding>");
  };
  std::string many_short = advice(40, 10, true);
  EXPECT_NE(many_short.find("40 all-reduces a step, median 10 ns each, 80 of 80 launched in the backward pass"),
            std::string::npos)
      << many_short;
  EXPECT_NE(many_short.find("fewer, larger all-reduces"), std::string::npos) << many_short;
  std::string many_long = advice(40, 60'000, true);
  EXPECT_EQ(many_long.find("fewer, larger"), std::string::npos) << many_long;
  EXPECT_NE(many_long.find("80 of 80 launched in the backward pass, as DDP does, yet they outlast its compute"),
            std::string::npos)
      << many_long;
  std::string outside = advice(40, 60'000, false);
  EXPECT_NE(outside.find("only 0 of 80 launched in the backward pass"), std::string::npos) << outside;
  std::string few_short = advice(20, 10, false);
  EXPECT_EQ(few_short.find("fewer, larger"), std::string::npos) << few_short;
}

// Where a collective was launched decides the advice, and a pipeline the
// trace already runs is never recommended. On thread 0, an all-to-all
// launched at 10 inside `input` [0, 50) runs [100, 140) and one launched at
// 210 inside `## forward ##` [200, 300) runs [400, 500), each inside its
// `nccl:all_to_all` range (the collective's own, not a phase); compute
// [0, 100) overlaps neither: 40 and 100 ns exposed, 140 in all.
TEST_F(Rules, AnExchangeIsAdvisedByWhereItWasLaunchedAndNoPipelineInUseIsRecommended) {
  const std::string all_to_all = "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)";
  auto advice = [&](const std::string& input, bool forward) {
    auto t = gpu_trace();
    t.op(0, 0, 0, 100, 0, DeviceOpKind::kernel, "gemm");
    t.span(0, 0, 50, input, SpanKind::user, 0);
    t.span(0, 5, 20, "nccl:all_to_all", SpanKind::user, 1);
    t.launched({.launch = 10,
                .start = 100,
                .dur = 40,
                .corr = 1,
                .stream = 1,
                .name = all_to_all,
                .call = "cudaLaunchKernel"});
    if (forward) {
      t.span(0, 200, 100, "## forward ##", SpanKind::user, 0);
      t.span(0, 205, 20, "nccl:all_to_all", SpanKind::user, 1);
      t.launched({.launch = 210, .start = 400, .corr = 2, .stream = 1, .name = all_to_all, .call = "cudaLaunchKernel"});
    }
    AnalysisReport r = analyze(t.load());
    auto f = by_rule(r, "communication");
    return f.size() == 1 ? *f[0] : Finding{};
  };
  Finding pipelined = advice("## sparse_data_dist ##", true);
  EXPECT_EQ(evidence(pipelined, "launched"),
            "in `## forward ##` 100 ns exposed (all-to-all); in `## sparse_data_dist ##` 40 ns exposed (all-to-all)");
  // What the advice says, and what it must not, with an exchange launched
  // in `input` (alone or beside the forward's) and a pipeline or none.
  struct Case {
    std::string input;
    bool forward;
    std::vector<std::string> says, never;
  };
  const Case cases[] = {
      // The forward's exchange is the one a pipeline cannot hide.
      {"## sparse_data_dist ##",
       true,
       {"all-to-all (140 ns, 100 ns of it launched in `## forward ##`): in the forward pass the next operation "
        "waits for an exchange's result",
        "input-distribution pipeline (`## sparse_data_dist ##` ranges), which hides the input exchange, not this "
        "one"},
       {"TrainPipelineSparseDist"}},
      // Only the pipelined input exchange: it is exposed despite the pipeline.
      {"## sparse_data_dist ##",
       false,
       {"(40 ns, all launched in `## sparse_data_dist ##`): the trace shows an input-distribution pipeline"},
       {"TrainPipelineSparseDist"}},
      // No pipeline in the trace: the forward's exchange is still told apart,
      // and an input exchange alone is told to pipeline.
      {"## load ##", true, {"in the forward pass the next operation waits"}, {"input-distribution pipeline"}},
      {"## load ##", false, {"TrainPipelineSparseDist"}, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.input + (c.forward ? " and the forward's" : " alone"));
    const std::string suggestion = advice(c.input, c.forward).suggestion;
    for (const std::string& phrase : c.says) EXPECT_NE(suggestion.find(phrase), std::string::npos) << suggestion;
    for (const std::string& phrase : c.never) EXPECT_EQ(suggestion.find(phrase), std::string::npos) << suggestion;
  }
}

// Collectives an optimizer step launched, and DDP's buffer broadcast in its
// forward, get advice of their own. One all-gather launched inside
// `## optimizer ##` runs [100, 150) with no compute beside it; a broadcast
// launched inside `DistributedDataParallel.forward` runs [100, 130).
TEST_F(Rules, OptimizerCollectivesAndDdpBufferBroadcastsAreNamed) {
  auto advice = [&](const std::string& range, const std::string& call) {
    auto t = gpu_trace();
    t.op(0, 0, 0, 50, 0, DeviceOpKind::kernel, "gemm");
    t.span(0, 0, 50, range, SpanKind::user, 0);
    t.span(0, 5, 20, call, SpanKind::user, 1);
    t.launched({.launch = 10,
                .start = 100,
                .dur = 50,
                .corr = 1,
                .stream = 1,
                .name = "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)",
                .call = "cudaLaunchKernel"});
    AnalysisReport r = analyze(t.load());
    auto f = by_rule(r, "communication");
    return f.size() == 1 ? f[0]->suggestion : std::string("<no finding>");
  };
  const std::string optimizer = advice("## optimizer ##", "nccl:_all_gather_base");
  EXPECT_NE(optimizer.find("all-gather (50 ns, all launched in `## optimizer ##`): in the optimizer step a "
                           "distributed optimizer gathers"),
            std::string::npos)
      << optimizer;
  EXPECT_EQ(optimizer.find("FSDP"), std::string::npos) << optimizer;
  const std::string ddp = advice("DistributedDataParallel.forward", "nccl:broadcast");
  EXPECT_NE(ddp.find("DDP broadcasts the module's buffers"), std::string::npos) << ddp;
  EXPECT_NE(ddp.find("broadcast_buffers=False"), std::string::npos) << ddp;
  const std::string elsewhere = advice("## forward ##", "nccl:broadcast");
  EXPECT_EQ(elsewhere.find("broadcast_buffers"), std::string::npos) << elsewhere;
  const std::string fsdp = advice("FSDP::pre_forward", "nccl:_all_gather_base");
  EXPECT_NE(fsdp.find("FSDP is in use (`FSDP::pre_forward` ranges)"), std::string::npos) << fsdp;
}

// A collective on a stream that also runs compute cannot overlap that
// stream's work. Compute on stream 0 at [0, 100); an all-reduce on stream 0
// at [100, 150), an all-to-all on stream 1 at [300, 320): 50 of the 70 ns
// exposed run on stream 0.
TEST_F(Rules, CollectivesOnAComputeStreamAreToldToMoveToTheirOwn) {
  auto t = gpu_trace();
  t.op(0, 0, 0, 100, 0, DeviceOpKind::kernel, "gemm");
  t.op(0, 0, 100, 50, 0, DeviceOpKind::kernel, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)");
  t.op(0, 1, 300, 20, 0, DeviceOpKind::kernel, "ncclDevKernel_SendRecv(ncclDevComm*)");
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "communication");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->impact_ns, 70);
  EXPECT_EQ(evidence(*f[0], "on compute streams"), "50 ns exposed, on stream 0");
  EXPECT_NE(f[0]->suggestion.find("streams that also run compute (stream 0)"), std::string::npos) << f[0]->suggestion;
  EXPECT_NE(f[0]->suggestion.find("a stream of their own"), std::string::npos) << f[0]->suggestion;
}

TEST_F(Rules, NoCollectivesNoCommunicationFinding) {
  auto t = gpu_trace();
  t.op(0, 0, 0, 100, 0, DeviceOpKind::kernel, "nccl_like_but_not_a_collective");
  t.op(0, 1, 0, 100, 0, DeviceOpKind::memcpy, "Memcpy HtoD");
  EXPECT_TRUE(by_rule(analyze(t.load()), "communication").empty());
}

// ---- copies -----------------------------------------------------------------

// By hand, on a device busy its whole window [0, 1000): kernels [0, 300),
// [420, 700), [880, 1000) on stream 0; a DtoD copy [300, 420) from
// aten::clone (120 alone) and one [700, 750) from aten::contiguous (50
// alone) on stream 0; an upload [650, 800) on stream 1, which runs no
// kernel (alone [700, 800) = 100); a memset [800, 880) with no launch (80
// alone). Copy-only time is [300, 420) + [700, 880) = 300 ns, 30% of the
// window, on a device that sets the pace: a warning.
TEST_F(Rules, CopiesWithNoKernelBesideThemAreNamedWithTheirSources) {
  auto t = gpu_trace();
  t.op(0, 0, 0, 300);
  t.op(0, 0, 420, 280);
  t.op(0, 0, 880, 120);
  t.copy(0, 0, 300, 120, CopyKind::device_to_device, 4096, 1);
  t.copy(0, 0, 700, 50, CopyKind::device_to_device, 1024, 2);
  t.copy(0, 1, 650, 150, CopyKind::host_to_device, 8192, 3);
  t.op(0, 0, 800, 80, 0, DeviceOpKind::memset, "Memset");
  t.span(0, 280, 20, "aten::clone", SpanKind::runtime);
  t.launch(0, 285, 5, 1);
  t.span(0, 680, 10, "aten::contiguous", SpanKind::runtime);
  t.launch(0, 685, 5, 2);
  t.span(0, 600, 20, "copy_batch", SpanKind::user);
  t.launch(0, 605, 5, 3, 0, 1);
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "copies");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->impact_ns, 300);
  EXPECT_EQ(f[0]->severity, Severity::warning);
  EXPECT_NE(f[0]->title.find("300 ns copying with no kernel running (30.0% of the window); the largest share, 120 "
                             "ns, DtoD from `aten::clone`"),
            std::string::npos)
      << f[0]->title;
  EXPECT_EQ(evidence(*f[0], "device busy"), "100.0% of its window");
  EXPECT_EQ(evidence(*f[0], "DtoD"), "170 ns alone, 2 ops, 5.0 KiB");
  EXPECT_EQ(evidence(*f[0], "HtoD"), "100 ns alone, 1 op, 8.0 KiB");
  EXPECT_EQ(evidence(*f[0], "memset"), "80 ns alone, 1 op, 0 B");
  EXPECT_EQ(evidence_all(*f[0], "from"),
            (std::vector<std::string>{"`aten::clone`: DtoD 120 ns alone, 1 op, 4.0 KiB",
                                      "`copy_batch`: HtoD 100 ns alone, 1 op, 8.0 KiB",
                                      "`no recorded launch`: memset 80 ns alone, 1 op, 0 B",
                                      "`aten::contiguous`: DtoD 50 ns alone, 1 op, 1.0 KiB"}));
  // Advice for each kind with a quarter of the time or more; the upload
  // already ran on a stream of its own, so moving it would change nothing.
  EXPECT_NE(f[0]->suggestion.find("device-to-device copies compute nothing"), std::string::npos) << f[0]->suggestion;
  EXPECT_NE(f[0]->suggestion.find("the HtoD copies already run on streams with no kernels"), std::string::npos)
      << f[0]->suggestion;
  EXPECT_EQ(f[0]->suggestion.find("pin_memory"), std::string::npos) << f[0]->suggestion;
  EXPECT_NE(f[0]->suggestion.find("set gradients to None"), std::string::npos) << f[0]->suggestion;
}

// The same copy on a device busy 30% of its window [0, 1000) (kernels
// [0, 100) and [900, 1000), a DtoD copy [100, 200)): 10% of the window is
// copy-only, but the host sets the pace, so fewer copies would not shorten
// the run yet: information. An upload on the kernels' own stream gets the
// advice to overlap it.
TEST_F(Rules, CopiesOnADeviceThatWaitsForTheHostAreMinor) {
  auto t = gpu_trace();
  t.op(0, 0, 0, 100);
  t.op(0, 0, 900, 100);
  t.copy(0, 0, 100, 100, CopyKind::host_to_device, 64);
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "copies");
  ASSERT_EQ(f.size(), 1u);
  expect_information(*f[0], 100, "minor while the host sets the pace: the device is busy 30.0% of its window");
  EXPECT_NE(f[0]->suggestion.find("pin_memory"), std::string::npos) << f[0]->suggestion;
}

// Copy-only time under copy_shown (1% of the window) is no finding; between
// it and copy_warning (5%) on a busy device, information; copies that
// kernels overlap cost nothing.
TEST_F(Rules, CopiesAreShownAndWarnedAtTheirShareOfTheWindow) {
  auto run = [&](int64_t copy_ns) {
    auto t = gpu_trace();
    t.op(0, 0, 0, 500);
    t.copy(0, 0, 500, copy_ns, CopyKind::device_to_device, 64);
    t.op(0, 0, 500 + copy_ns, 500 - copy_ns);
    t.copy(0, 1, 0, 400, CopyKind::device_to_device, 64);  // under a kernel: free
    return analyze(t.load());
  };
  EXPECT_TRUE(by_rule(run(9), "copies").empty());  // 0.9% of the 1000 ns window
  const AnalysisReport three = run(30);
  auto minor = by_rule(three, "copies");
  ASSERT_EQ(minor.size(), 1u);
  expect_information(*minor[0], 30, "minor: 3.0% of the window, under the 5.0% at which this rule warns");
  const AnalysisReport five = run(50);
  auto warned = by_rule(five, "copies");
  ASSERT_EQ(warned.size(), 1u);
  EXPECT_EQ(warned[0]->severity, Severity::warning);
}

// The median of an even count is the mean of the middle two; two steps are
// too few to tell how step time varies, whatever their durations.
TEST_F(Rules, TwoStepsAreTooFewAndTheirMedianIsTheMean) {
  auto t = gpu_trace();
  t.steps({100, 300}, 0, 50);
  AnalysisReport r = analyze(t.load());
  EXPECT_EQ(r.steps.median_ns, 200);
  auto f = by_rule(r, "steps");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0]->title.find("too few steps"), std::string::npos) << f[0]->title;
  EXPECT_EQ(f[0]->title.find("steady"), std::string::npos);
  EXPECT_EQ(f[0]->impact_ns, 0);
  EXPECT_EQ(f[0]->severity, Severity::info);
}

// A step marker with no device work and no launches (PyTorch's trailing
// ProfilerStep) is left out, and said so.
TEST_F(Rules, AStepWithoutDeviceWorkIsNotAStep) {
  auto t = gpu_trace();
  t.steps(durations(4, 100), 0, 50);
  t.step(0, 4, 450, 5);  // after the last op: a stub
  AnalysisReport r = analyze(t.load());
  EXPECT_EQ(r.steps.count, 4u);
  auto f = by_rule(r, "steps");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->title.rfind("4 steps", 0), 0u) << f[0]->title;
  EXPECT_EQ(evidence(*f[0], "left out"), "step 4 (5 ns): no device work during it");
}

// "Steady" only when p10 to p90 spans at most steady_width of the median:
// steps of 82 to 166 ms are not steady even though p90 < 1.5 x the median.
TEST_F(Rules, StepsAreSteadyOnlyWithinTheStatedWidth) {
  auto t = gpu_trace();
  t.steps({82, 120, 125, 130, 135, 166}, 0, 10);
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "steps");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->suggestion.find("steady"), std::string::npos) << f[0]->suggestion;
  EXPECT_NE(f[0]->title.find("p10 to p90 spans"), std::string::npos) << f[0]->title;
}

// The three slowest steps are listed; only those slower than step_spread
// times the median are called slow, as the title counts them.
TEST_F(Rules, OnlyStepsBeyondTheSpreadAreCalledSlow) {
  auto t = gpu_trace();
  t.steps({100, 100, 100, 120, 100, 110, 100, 200, 100, 100}, 0, 10);  // median 100: slow beyond 150
  AnalysisReport r = analyze(t.load());
  auto f = by_rule(r, "steps");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0]->title.find("; 1 slow step"), std::string::npos) << f[0]->title;
  EXPECT_EQ(f[0]->impact_ns, 100);
  EXPECT_EQ(evidence(*f[0], "slow step 7").rfind("200 ns", 0), 0u);
  EXPECT_EQ(evidence(*f[0], "step 3").rfind("120 ns", 0), 0u);
  EXPECT_EQ(evidence(*f[0], "step 5").rfind("110 ns", 0), 0u);
  EXPECT_EQ(evidence(*f[0], "slow step 3"), "<missing slow step 3>");
}

TEST_F(Rules, NoAcceleratorOnlyForCpuDevices) {
  {
    auto t = trace();
    t.device(0, DeviceKind::cpu);
    t.op(0, 0, 0, 10);
    EXPECT_EQ(by_rule(analyze(t.load()), "no-accelerator").size(), 1u);
  }
  {
    auto t = trace();
    t.device(0, DeviceKind::cuda);
    t.op(0, 0, 0, 10);
    EXPECT_TRUE(by_rule(analyze(t.load()), "no-accelerator").empty());
  }
}

// Without any device operation: a CPU-only run says so; launches (or a GPU
// listed) without device operations mean the device's work went unrecorded.
TEST_F(Rules, NoDeviceOperationsSaysWhichCase) {
  {
    auto t = trace();
    t.span(0, 0, 100, "aten::mm", SpanKind::runtime);
    AnalysisReport r = analyze(t.load());
    auto f = by_rule(r, "no-accelerator");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0]->severity, Severity::info);
    EXPECT_EQ(f[0]->title.rfind("nothing ran on an accelerator", 0), 0u) << f[0]->title;
  }
  {
    auto t = trace();
    t.span(0, 0, 100, "aten::mm", SpanKind::runtime);
    t.launch(0, 10, 5, 1);
    AnalysisReport r = analyze(t.load());
    auto f = by_rule(r, "no-accelerator");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0]->severity, Severity::warning);
    EXPECT_NE(f[0]->title.find("records no device operations"), std::string::npos) << f[0]->title;
    EXPECT_EQ(evidence(*f[0], "launches"), "1");
  }
}

TEST_F(Rules, EmptyTraceHasNoFindings) {
  auto t = trace();
  AnalysisReport r = analyze(t.load());
  EXPECT_TRUE(r.findings.empty());
  EXPECT_EQ(r.metrics.device_ops, 0u);
}

TEST_F(Rules, UnknownRuleAndParameterAreRefused) {
  auto t = trace();
  TraceModel m = t.load();
  AnalysisOptions o;
  o.rules = {"idle-gap", "nonsense"};
  EXPECT_THROW(analyze(m, o), std::invalid_argument);
  EXPECT_THROW(set_analysis_parameter(o, "no_such", "1"), std::invalid_argument);
  EXPECT_THROW(set_analysis_parameter(o, "min_gap", "fast"), std::invalid_argument);
  EXPECT_THROW(set_analysis_parameter(o, "min_gap", "5 parsecs"), std::invalid_argument);
  EXPECT_THROW(set_analysis_parameter(o, "min_gap", "-5"), std::invalid_argument);
  EXPECT_THROW(set_analysis_parameter(o, "min_gap", "1e30"), std::invalid_argument);  // found by fuzzing
}

TEST_F(Rules, FindingsAreOrderedByImpact) {
  std::string path = dir.file("s.db");
  write_synthetic_trace(path, {.events = 50'000, .seed = 2});
  AnalysisReport r = analyze(load_trace(path));
  ASSERT_GE(r.findings.size(), 3u);
  for (size_t i = 1; i < r.findings.size(); ++i) {
    EXPECT_GE(r.findings[i - 1].impact_ns, r.findings[i].impact_ns);
  }
}

}  // namespace
