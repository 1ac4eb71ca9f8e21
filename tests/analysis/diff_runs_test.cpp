// `loupe diff` by step and over several runs a side, as library calls: the
// tables of one step or of the median step, and the rank test over steps
// blocked by run that tells a change from run-to-run noise.
#include <gtest/gtest.h>

#include <map>

#include "loupe/prof/analysis.h"
#include "loupe/prof/trace_diff.h"
#include "profiler/test_files.h"
#include "trace_builder.h"

namespace loupe::prof {
namespace {

// A run of 10 back-to-back steps, each running a `matmul` kernel of
// `kernel_ns` (+0, 10 or 20 ns of spread) and lasting 1 us longer; with
// `checkpoint_step`, that step also runs a 50 us `save` kernel.
TraceModel run(loupe::test::TempDir& dir, const std::string& name, int64_t kernel_ns, int checkpoint_step = -1) {
  loupe::test::TraceBuilder t(dir.file(name));
  t.device(0);
  int64_t at = 0;
  for (int s = 0; s < 10; ++s) {
    int64_t k = kernel_ns + (s % 3) * 10, extra = s == checkpoint_step ? 50'000 : 0;
    t.step(0, s, at, k + extra + 1000);
    t.op(0, 0, at, k, 0, DeviceOpKind::kernel, "matmul");
    if (extra > 0) t.op(0, 0, at + k, extra, 0, DeviceOpKind::kernel, "save");
    at += k + extra + 1000;
  }
  return t.load();
}

const DiffRow& row(const std::vector<DiffRow>& rows, const std::string& name) {
  for (const DiffRow& r : rows) {
    if (r.name == name) return r;
  }
  throw std::runtime_error("no row " + name);
}

// A kernel in one step of ten (a checkpoint) is not in the median step:
// the tables show what a typical step runs, and --step shows that step.
TEST(DiffByStep, TheMedianStepAndOneStep) {
  loupe::test::TempDir dir;
  TraceModel base = run(dir, "base.db", 4000), head = run(dir, "head.db", 4000, 6);
  AnalysisReport rb = analyze(base), rh = analyze(head);
  TraceDiff median = diff_traces(base, rb, head, rh);
  EXPECT_EQ(median.step, -1);
  EXPECT_EQ(row(median.device_ops, "save").change, "unchanged");  // 0 in the median step of both
  EXPECT_DOUBLE_EQ(row(median.device_ops, "matmul").base, 4010);  // of 4000, 4010, 4020 a step
  TraceDiff six = diff_traces(base, rb, head, rh, {.step = 6});
  EXPECT_EQ(six.step, 6);
  EXPECT_EQ(row(six.device_ops, "save").change, "added");
  EXPECT_DOUBLE_EQ(row(six.device_ops, "save").head, 50'000);
  EXPECT_DOUBLE_EQ(row(six.device_op_counts, "save").head, 1);
  EXPECT_DOUBLE_EQ(row(six.device_ops, "matmul").base, 4000);  // step 6: 6 % 3 == 0
  try {
    diff_traces(base, rb, head, rh, {.step = 10});
    ADD_FAILURE() << "step 10 is in neither run";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("has no step 10 (its steps: 0 to 9)"), std::string::npos) << e.what();
  }
}

struct Runs {
  std::vector<TraceModel> models;
  std::vector<AnalysisReport> reports;
  std::vector<DiffRun> runs() const {
    std::vector<DiffRun> out;
    for (size_t i = 0; i < models.size(); ++i) out.push_back({models[i], reports[i], models[i].path});
    return out;
  }
};

Runs runs(loupe::test::TempDir& dir, const std::string& prefix, std::vector<int64_t> kernel_ns) {
  Runs r;
  for (size_t i = 0; i < kernel_ns.size(); ++i) {
    r.models.push_back(run(dir, prefix + std::to_string(i) + ".db", kernel_ns[i]));
  }
  for (const TraceModel& m : r.models) r.reports.push_back(analyze(m));
  return r;
}

// Runs of one program differ by more than the steps within a run (base's
// kernels run 4,000, 4,200 or 4,400 ns; head's 4,250, 4,300 or 4,350): the
// median step moves +2.4% (4,210 -> 4,310 of the median runs' medians), far
// beyond the step-to-step spread, but head's runs lie among base's. Run
// mean ranks: base 5.5, 15.5, 55.5; head 25.5, 35.5, 45.5: t = 0.61 on 4
// degrees of freedom, p = 0.57 (as scipy.stats.ttest_ind on them gives).
TEST(DiffRuns, RunToRunNoiseIsNotAChange) {
  loupe::test::TempDir dir;
  Runs base = runs(dir, "a", {4000, 4200, 4400}), head = runs(dir, "b", {4250, 4300, 4350});
  std::vector<DiffRun> b = base.runs(), h = head.runs();
  TraceDiff d = diff_runs(b, h);
  EXPECT_EQ(d.base_runs, 3u);
  EXPECT_DOUBLE_EQ(d.significance, 0.05);
  const DiffRow& step = row(d.metrics, "step_time");
  EXPECT_DOUBLE_EQ(step.base, 5210);  // 4,210 of kernel, 1 us after it
  EXPECT_DOUBLE_EQ(step.head, 5310);
  EXPECT_NEAR(step.p_value, 0.5734, 1e-3);
  EXPECT_FALSE(step.beyond_noise);
  EXPECT_EQ(step.change, "unchanged");
  EXPECT_NEAR(row(d.device_ops, "matmul").p_value, 0.5734, 1e-3);
  EXPECT_EQ(d.verdict, "");
  std::string why;
  EXPECT_FALSE(fail_on_crossed(parse_fail_on("step_time:+1%"), d.metrics, &why));
  EXPECT_NE(why.find("beyond the limit +1% but not significant (p 0.573)"), std::string::npos) << why;
  // One run a side, the same change is beyond the steps' spread.
  TraceDiff single = diff_runs(std::span(b).first(1), std::span(h).first(1));
  EXPECT_DOUBLE_EQ(single.significance, 0);
  EXPECT_TRUE(row(single.metrics, "step_time").beyond_noise);
}

// A 5% slowdown (200 ns on 4,000) in every run, runs varying by 40 ns:
// every head run above every base run, run mean ranks 5.5, 15.5, 25.5
// against 35.5, 45.5, 55.5: t = 3.67 on 4 degrees of freedom, p = 0.021.
TEST(DiffRuns, ASlowdownInEveryRunIsSignificant) {
  loupe::test::TempDir dir;
  Runs base = runs(dir, "a", {4000, 4040, 4080}), head = runs(dir, "b", {4200, 4240, 4280});
  TraceDiff d = diff_runs(base.runs(), head.runs());
  const DiffRow& step = row(d.metrics, "step_time");
  EXPECT_NEAR(step.p_value, 0.02131, 1e-4);
  EXPECT_TRUE(step.beyond_noise);
  EXPECT_EQ(step.change, "increased");
  EXPECT_DOUBLE_EQ(step.delta, 200);
  const DiffRow& matmul = row(d.device_ops, "matmul");
  EXPECT_TRUE(matmul.beyond_noise);
  EXPECT_DOUBLE_EQ(matmul.delta, 200);
  EXPECT_TRUE(fail_on_crossed(parse_fail_on("step_time:+3%"), d.metrics, nullptr));
  EXPECT_FALSE(fail_on_crossed(parse_fail_on("step_time:+5%"), d.metrics, nullptr));  // 200 / 5,050: +3.96%
  EXPECT_NE(d.verdict.find("step_time +200 ns a step (+4.0%)"), std::string::npos) << d.verdict;
  std::string text = diff_text(d, "base", "head", 10);
  EXPECT_NE(text.find("* increased, p 0.021"), std::string::npos) << text;
  EXPECT_NE(text.find("median step by run: base 5.010 us, 5.050 us, 5.090 us; head 5.210 us, 5.250 us, 5.290 us"),
            std::string::npos)
      << text;
  EXPECT_NE(diff_json(d, "base", "head").find("\"p_value\""), std::string::npos);
}

// Base's steps are host work alone; head's launch a kernel and wait for
// it. The step shrinks less than the host's share of the path does (the
// kernel and the launch now lie on it): the verdict says so rather than
// "of it", which would not add up.
TEST(DiffVerdict, APartOfThePathThatShrankMoreThanTheStep) {
  loupe::test::TempDir dir;
  auto build = [&](const std::string& name, bool device) {
    loupe::test::TraceBuilder t(dir.file(name));
    t.device(0);
    int64_t at = 0;
    for (int s = 0; s < 20; ++s) {
      int64_t spread = (s % 3) * 10;
      if (!device) {
        t.step(0, s, at, 1000 + spread);
        at += 1000 + spread;
        continue;
      }
      t.step(0, s, at, 680 + spread);
      t.launch(0, at, 10, uint64_t(s + 1));
      t.op(0, 0, at + 20, 600, uint64_t(s + 1), DeviceOpKind::kernel, "matmul");
      t.span(0, at + 10, 620, "cudaStreamSynchronize", SpanKind::wait);
      t.sync(0, at + 10, 620, SyncKind::stream, 0);
      at += 680 + spread;
    }
    return t.load();
  };
  TraceModel base = build("base.db", false), head = build("head.db", true);
  TraceDiff d = diff_traces(base, analyze(base), head, analyze(head));
  // Median steps 1,010 and 690 ns: -320. Host compute on the path: 1,010
  // (the whole step) and 60 (the step's last 50 ns and its spread): -950;
  // the rest (launch 20, kernel 600, wake-up 10) +630. The part named is
  // host work, so no device op is.
  EXPECT_EQ(d.verdict,
            "step_time -320 ns a step (-31.7%), the critical path's host compute -950 ns a step and its other "
            "parts +630 ns")
      << d.verdict;
}

}  // namespace
}  // namespace loupe::prof
