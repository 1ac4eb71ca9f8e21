// The end-to-end proof: each sample's mistake is named by loupe, at the
// line that makes it, with a cost; its fix is not; and where the fix is
// meant to make the program faster or smaller, it does.
//
// Every sample runs at CI size (--size ci) with --out, and its trace goes
// through load_trace and analyze(), as `loupe analyze` does. Expected lines
// come from the marker comments in the samples' sources ("MISTAKE: ...").
// Timings are compared where the fix changes them by a wide margin, as the
// loop's wall time per step (until the device has finished), so that a
// busy two-core machine cannot turn the result over.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <regex>

#include "sample_run.h"

namespace loupe::test {
namespace {

using prof::Finding;
using prof::Severity;

class Samples : public ::testing::Test {
 protected:
  // Checks that both variants in `runs` ran to the end and that the
  // mistake has exactly one finding of `rule`, kept in `finding`; a fatal
  // failure if not (call it inside ASSERT_NO_FATAL_FAILURE).
  void find_the_mistakes(const std::string& rule) {
    ASSERT_EQ(runs.mistake.command.exit_code, 0) << runs.mistake.command.err;
    ASSERT_EQ(runs.fixed.command.exit_code, 0) << runs.fixed.command.err;
    auto found = runs.mistake.findings(rule);
    ASSERT_EQ(found.size(), 1u) << rule;
    finding = found[0];
  }

  TempDir dir;
  VariantPair runs;                  // the sample's two variants
  const Finding* finding = nullptr;  // in runs.mistake: the one of the rule the sample is about
};

// ---- ragged_batches: recompile, shape change ---------------------------------

TEST_F(Samples, RaggedBatchesRecompileAndBucketsDoNot) {
  runs = run_both(dir, "ragged_batches", 3);
  ASSERT_NO_FATAL_FAILURE(find_the_mistakes("recompile"));
  const Finding& f = *finding;
  EXPECT_NE(f.title.find("`train_step`"), std::string::npos) << f.title;
  EXPECT_NE(f.title.find("(shape change)"), std::string::npos) << f.title;
  EXPECT_GT(f.impact_ns, 0);
  ASSERT_TRUE(names_marked_line(f, "called at", "ragged_batches", "MISTAKE: compiles for each new shape"));
  EXPECT_FALSE(evidence(f, "shape change").empty());
  EXPECT_GE(runs.mistake.report.metrics.recompiles, 10u);

  EXPECT_TRUE(runs.fixed.findings("recompile").empty());
  EXPECT_EQ(runs.fixed.report.metrics.recompiles, 0u);
  EXPECT_LT(runs.fixed_ns, runs.mistake_ns);
}

// ---- host_sync: transfer, synchronous read every step ------------------------

TEST_F(Samples, HostSyncReadsEveryStepAndTheFixReadsRarely) {
  runs = run_both(dir, "host_sync");
  ASSERT_NO_FATAL_FAILURE(find_the_mistakes("transfer"));
  const Finding& f = *finding;
  ASSERT_TRUE(names_marked_line(f, "call site", "host_sync", "MISTAKE: a synchronous read every step"));
  EXPECT_EQ(evidence(f, "direction"), std::vector<std::string>{"DtoH"});
  EXPECT_NE(f.title.find("synchronous device-to-host read"), std::string::npos) << f.title;
  EXPECT_GT(f.impact_ns, 0);  // the device idled after the reads
  // Its fix (the host no longer waits for the read) is one the replay
  // expresses: the finding carries a prediction, at most the whole step.
  ASSERT_TRUE(f.predicted);
  EXPECT_GE(f.predicted_saving_fraction, 0.0);
  EXPECT_LT(f.predicted_saving_fraction, 1.0);

  EXPECT_TRUE(runs.fixed.findings("transfer").empty());
  EXPECT_LT(runs.fixed.report.metrics.sync_transfers_per_step * 10,
            runs.mistake.report.metrics.sync_transfers_per_step);
  // No timing comparison here: what the fix saves is the overlap of the
  // host's dispatch with the device's work, and the CPU device runs its
  // work on the same cores as the host. On a GPU, or on idle cores, the
  // fixed loop is faster; on a busy two-core machine the two runs are
  // within noise of each other (see docs/guide.md).
}

// ---- jit_in_loop: recompile, new function object -----------------------------

TEST_F(Samples, JitInALoopRecompilesEveryStep) {
  runs = run_both(dir, "jit_in_loop", 3);
  ASSERT_NO_FATAL_FAILURE(find_the_mistakes("recompile"));
  const Finding& f = *finding;
  EXPECT_NE(f.title.find("(new function object)"), std::string::npos) << f.title;
  EXPECT_GT(f.impact_ns, 0);
  auto reasons = evidence(f, "reason");
  ASSERT_FALSE(reasons.empty());
  EXPECT_NE(reasons[0].find("new function object at the same call site"), std::string::npos) << reasons[0];
  ASSERT_TRUE(names_marked_line(f, "called at", "jit_in_loop", "MISTAKE: a new jit each step"));
  // Every step after the first compiled.
  EXPECT_EQ(runs.mistake.report.metrics.recompiles, runs.mistake.report.metrics.steps - 1);
  // What-if: compiling is most of each step (a fresh jit traces, optimises
  // and generates code), so the replay without the compiles predicts most
  // of the step saved, and never more than the step.
  ASSERT_TRUE(f.predicted);
  EXPECT_TRUE(f.predicted_per_step);
  EXPECT_GT(f.predicted_saving_fraction, 0.5);
  EXPECT_LT(f.predicted_saving_fraction, 1.0);

  EXPECT_TRUE(runs.fixed.findings("recompile").empty());
  EXPECT_EQ(runs.fixed.report.metrics.compiles, 1u);
  EXPECT_LT(runs.fixed_ns, runs.mistake_ns);
}

// ---- input_pipeline: idle-gap (host work) and transfer (pageable) -------------

int64_t host_work_ns(const SampleRun& r) {
  int64_t ns = 0;
  for (const prof::DeviceIdle& d : r.report.devices) ns += d.cause_ns[size_t(prof::GapCause::host_work)];
  return ns;
}
int64_t window_ns(const SampleRun& r) { return r.report.window_end - r.report.window_start; }

TEST_F(Samples, InputPipelineStarvesTheDeviceAndPrefetchingFeedsIt) {
  runs = run_both(dir, "input_pipeline", 3);
  // The device waited on the host's batch preparation, named by its range.
  ASSERT_NO_FATAL_FAILURE(find_the_mistakes("idle-gap"));
  const Finding& idle = *finding;
  const prof::AnalysisOptions defaults;
  EXPECT_GE(idle.severity, Severity::warning);
  EXPECT_GT(idle.impact_ns, 0);
  EXPECT_EQ(idle.suggestion.find("move that host work (`load batch`) off the critical path"), 0u) << idle.suggestion;
  bool named = false;
  for (const auto& [k, v] : idle.evidence)
    named |= k.rfind("gap at", 0) == 0 && v.find("host in `load batch`") != std::string::npos;
  EXPECT_TRUE(named);
  EXPECT_GE(double(host_work_ns(runs.mistake)), defaults.idle_warning_fraction * double(window_ns(runs.mistake)));
  // The upload from pageable memory every step, at its line.
  int upload = marked_line("input_pipeline", "MISTAKE: pageable upload");
  const Finding* pageable = nullptr;
  for (const Finding* f : runs.mistake.findings("transfer"))
    if (names_line(evidence(*f, "call site").at(0), "input_pipeline", upload)) pageable = f;
  ASSERT_NE(pageable, nullptr);
  EXPECT_NE(pageable->title.find("upload from pageable host memory"), std::string::npos) << pageable->title;
  EXPECT_GT(pageable->impact_ns, 0);

  // Fixed: no idle time to speak of from host work (below the idle-gap
  // rule's warning threshold), no pageable uploads, and a faster loop.
  EXPECT_LT(double(host_work_ns(runs.fixed)), defaults.idle_warning_fraction * double(window_ns(runs.fixed)));
  for (const Finding* f : runs.fixed.findings("idle-gap"))
    EXPECT_EQ(f->suggestion.find("move that host work"), std::string::npos);
  EXPECT_TRUE(runs.fixed.findings("transfer").empty());
  EXPECT_LT(runs.fixed_ns, runs.mistake_ns);
}

// ---- tiny_kernels: tiny-kernels, eager element-wise update -------------------

// Whether the CPU device's own thread was kept from running: most of the
// gap time is device waits (ops that started well after their launch
// returned). The CPU device runs each op on a thread of its own; when every
// core is busy (other tests running beside this one) that thread waits for
// a core, and the device's gaps are its own waits, not waits for launches.
// A run like that cannot show whether the program is launch-bound.
bool device_thread_starved(const SampleRun& r) {
  int64_t waits = 0, gaps = 0;
  for (const prof::DeviceIdle& d : r.report.devices) {
    waits += d.cause_ns[size_t(prof::GapCause::device_wait)];
    for (int64_t ns : d.cause_ns) gaps += ns;
  }
  return gaps > 0 && waits * 2 > gaps;
}

TEST_F(Samples, TinyKernelsFromAnEagerUpdateFuseUnderJit) {
  runs = run_both(dir, "tiny_kernels", 3);
  // Up to four more runs of the mistake for one whose device was not
  // starved of a core; if none, the finding cannot be judged here.
  for (int retry = 0; retry < 4 && device_thread_starved(runs.mistake); ++retry) {
    runs.mistake = run_sample(dir, "tiny_kernels", "mistake");
  }
  if (device_thread_starved(runs.mistake)) {
    GTEST_SKIP() << "the CPU device's thread waited for a core in every run (device waits are most of its idle "
                    "time): this machine is too busy to show launch-boundness";
  }
  ASSERT_NO_FATAL_FAILURE(find_the_mistakes("tiny-kernels"));
  const Finding& f = *finding;
  EXPECT_GT(f.impact_ns, 0);
  EXPECT_FALSE(evidence(f, "launched eagerly (outside jit)").empty());
  // The call sites named first are the lines of the eager update: the body
  // of the function under the marker comment.
  int first = marked_line("tiny_kernels", "MISTAKE when called outside jit") + 2;  // after the signature
  std::vector<int> update{first, first + 1, first + 2};
  auto sites = evidence(f, "call site");
  ASSERT_GE(sites.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    bool in_update = false;
    for (int line : update) in_update |= names_line(sites[i], "tiny_kernels", line);
    EXPECT_TRUE(in_update) << sites[i];
  }

  EXPECT_TRUE(runs.fixed.findings("tiny-kernels").empty());
  EXPECT_LT(runs.fixed.report.metrics.kernels, runs.mistake.report.metrics.kernels / 4);
  EXPECT_LT(runs.fixed_ns, runs.mistake_ns);
}

// ---- attention_memory: memory, the S x S scores --------------------------------

TEST_F(Samples, NaiveAttentionRunsOutOfMemoryAndFusedFits) {
  runs = run_both(dir, "attention_memory");
  const SampleRun& mistake = runs.mistake;
  const SampleRun& fixed = runs.fixed;
  EXPECT_EQ(mistake.command.exit_code, 1) << "the naive attention must run out of memory\n" << mistake.command.out;
  ASSERT_EQ(fixed.command.exit_code, 0) << fixed.command.err;
  EXPECT_NE(mistake.command.out.find("out of memory"), std::string::npos) << mistake.command.out;

  auto found = mistake.findings("memory");
  ASSERT_EQ(found.size(), 1u);
  const Finding& f = *found[0];
  EXPECT_EQ(f.severity, Severity::error);
  EXPECT_EQ(evidence(f, "out-of-memory"), std::vector<std::string>{"1"});
  EXPECT_GT(f.impact_ns, 0);  // time near capacity, and retrying
  // What was live at the peak: the attention's arrays, at its line, first.
  int line = marked_line("attention_memory", "MISTAKE: naive holds S x S scores");
  std::string top;
  for (const auto& [k, v] : f.evidence)
    if (top.empty() && k.rfind("live at peak: ", 0) == 0) top = k.substr(14);
  EXPECT_TRUE(names_line(top, "attention_memory", line)) << top;
  // The post-mortem, against the program's own message ("out of memory:
  // 64.0 MiB requested, 65.0 MiB in use, capacity 70.0 MiB"): the device
  // was full, not fragmented, and the request came from the scores' line.
  std::smatch said;
  ASSERT_TRUE(
      std::regex_search(mistake.command.out, said,
                        std::regex(R"(out of memory: (\S+ \S+) requested, (\S+ \S+) in use, capacity (\S+ \S+))")))
      << mistake.command.out;
  EXPECT_EQ(evidence(f, "verdict"),
            std::vector<std::string>{fmt::format("the device was full: {} allocated + {} requested exceeds its {}",
                                                 said[2].str(), said[1].str(), said[3].str())});
  std::vector<std::string> request = evidence(f, "out-of-memory request");
  ASSERT_EQ(request.size(), 1u);
  EXPECT_TRUE(request[0].starts_with(said[1].str() + " at ")) << request[0];
  EXPECT_TRUE(names_line(request[0].substr(said[1].str().size() + 4), "attention_memory", line)) << request[0];

  auto fixed_memory = fixed.findings("memory");
  ASSERT_EQ(fixed_memory.size(), 1u);
  EXPECT_EQ(fixed_memory[0]->severity, Severity::info);  // below memory_high, no retry, no OOM
  EXPECT_EQ(fixed_memory[0]->impact_ns, 0);
  EXPECT_LT(fixed.report.metrics.peak_memory * 4, mistake.report.metrics.peak_memory);
}

// ---- async_timing: async-timing, a stopwatch around dispatch ------------------

// Durations of the user ranges named `name`.
std::vector<int64_t> ranges_named(const SampleRun& r, const std::string& name) {
  std::vector<int64_t> out;
  for (const prof::HostSpans& h : r.model.host_spans)
    for (size_t i = 0; i < h.size(); ++i)
      if (r.model.str(h.name[i]) == name) out.push_back(h.dur[i]);
  return out;
}
int64_t median(std::vector<int64_t> v) {
  std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

TEST_F(Samples, AsyncTimingMeasuresDispatchUntilItWaits) {
  runs = run_both(dir, "async_timing");
  ASSERT_NO_FATAL_FAILURE(find_the_mistakes("async-timing"));
  const Finding& f = *finding;
  EXPECT_GT(f.impact_ns, 0);
  EXPECT_EQ(evidence(f, "timing"), std::vector<std::string>{"timed step"});
  ASSERT_TRUE(names_marked_line(f, "timing started at", "async_timing", "MISTAKE: stops when the call returns"));

  EXPECT_TRUE(runs.fixed.findings("async-timing").empty());
  // The stopwatch's readings: the mistake's is a small part of the real
  // step, which the fix's reading covers.
  int64_t wrong = median(ranges_named(runs.mistake, "timed step"));
  int64_t right = median(ranges_named(runs.fixed, "timed step"));
  EXPECT_LT(wrong * 4, right);
  EXPECT_LT(wrong * 4, int64_t(runs.mistake.loop_ns_per_step()));
}

// ---- kv_cache: memory (MHA against GQA and MQA), no recompiles when padded --

// The highest allocated total inside each user range named `generate *`.
std::map<std::string, int64_t> peak_per_range(const SampleRun& r) {
  std::map<std::string, int64_t> out;
  for (const prof::HostSpans& h : r.model.host_spans)
    for (size_t i = 0; i < h.size(); ++i) {
      std::string name = r.model.str(h.name[i]);
      if (name.rfind("generate ", 0) != 0) continue;
      int64_t peak = 0;
      for (const prof::MemoryEvents& m : r.model.memory)
        for (size_t k = 0; k < m.size(); ++k)
          if (m.time[k] >= h.start[i] && m.time[k] < h.end(i)) peak = std::max(peak, m.allocated[k]);
      out[name.substr(9)] = peak;
    }
  return out;
}

TEST_F(Samples, KvCacheMhaExhaustsMemoryAndPaddedGqaFits) {
  SampleRun mistake = run_sample(dir, "kv_cache", "mistake");
  SampleRun fixed = run_sample(dir, "kv_cache", "fixed");
  EXPECT_EQ(mistake.command.exit_code, 1) << "MHA's growing cache must not fit\n" << mistake.command.out;
  ASSERT_EQ(fixed.command.exit_code, 0) << fixed.command.err;

  // Memory: under pressure (retries, then out of memory), with the cache's
  // growth, at its line, what was live at the peak.
  auto found = mistake.findings("memory");
  ASSERT_EQ(found.size(), 1u);
  const Finding& f = *found[0];
  EXPECT_GE(f.severity, Severity::warning);
  EXPECT_GT(f.impact_ns, 0);
  int grow = marked_line("kv_cache", "MISTAKE: a new, longer cache every token");
  std::vector<std::string> live;
  for (const auto& [k, v] : f.evidence)
    if (k.rfind("live at peak: ", 0) == 0) live.push_back(k.substr(14));
  ASSERT_FALSE(live.empty());
  EXPECT_TRUE(names_line(live[0], "kv_cache", grow) || names_line(live[0], "kv_cache", grow + 1)) << live[0];
  // And the growing cache recompiles the decode step every token.
  int decode = marked_line("kv_cache", "MISTAKE: compiles for every new cache length");
  bool decode_recompiles = false;
  for (const Finding* r : mistake.findings("recompile")) {
    if (r->title.find("`decode MHA`") == std::string::npos) continue;
    decode_recompiles = r->impact_ns > 0 && r->title.find("(shape change)") != std::string::npos &&
                        names_line(evidence(*r, "called at").at(0), "kv_cache", decode);
  }
  EXPECT_TRUE(decode_recompiles);

  // Fixed: no pressure, no recompile after warm-up, less memory.
  auto fixed_memory = fixed.findings("memory");
  ASSERT_EQ(fixed_memory.size(), 1u);
  EXPECT_EQ(fixed_memory[0]->severity, Severity::info);
  EXPECT_EQ(fixed_memory[0]->impact_ns, 0);
  EXPECT_TRUE(fixed.findings("recompile").empty());
  EXPECT_EQ(fixed.report.metrics.recompiles, 0u);
  EXPECT_LT(fixed.report.metrics.peak_memory, mistake.report.metrics.peak_memory);
}

TEST_F(Samples, KvCacheMemoryRanksMhaGqaMqaWithTheSameOutputs) {
  SampleRun all = run_sample(dir, "kv_cache", "fixed", {"--attention", "all"});
  ASSERT_EQ(all.command.exit_code, 0) << all.command.err;
  std::map<std::string, int64_t> peak = peak_per_range(all);
  ASSERT_EQ(peak.size(), 3u);
  EXPECT_GT(peak["MHA"], peak["GQA"]);
  EXPECT_GT(peak["GQA"], peak["MQA"]);
  EXPECT_EQ(all.report.metrics.recompiles, 0u);
  // The same generated shape from each (printed once per round).
  std::vector<std::string> shapes;
  for (size_t at = all.command.out.find("generated "); at != std::string::npos;
       at = all.command.out.find("generated ", at + 1))
    shapes.push_back(all.command.out.substr(at, all.command.out.find(',', at) - at));
  ASSERT_EQ(shapes.size(), 6u) << all.command.out;
  for (const std::string& s : shapes) EXPECT_EQ(s, shapes[0]);
}

}  // namespace
}  // namespace loupe::test
