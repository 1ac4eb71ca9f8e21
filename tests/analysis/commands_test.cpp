// Budgets, diffs, the Chrome export and the findings as text, as library calls.
#include <gtest/gtest.h>

#include <map>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "loupe/prof/budget.h"
#include "loupe/prof/chrome_export.h"
#include "loupe/prof/report_format.h"
#include "loupe/prof/synth.h"
#include "loupe/prof/trace_diff.h"
#include "profiler/test_files.h"
#include "trace_builder.h"

using namespace loupe::prof;

namespace {

TEST(Budget, ParsesKnownKeysAndThresholds) {
  Budget b = parse_budget(
      "recompiles_after_warmup = 0\nidle_fraction_max = 0.15\nstep_time_ms_max = 25\n[thresholds]\nmin_gap = "
      "\"50us\"\n",
      "loupe.toml");
  ASSERT_EQ(b.limits.size(), 3u);
  EXPECT_EQ(b.limits[1].key, "idle_fraction_max");
  EXPECT_DOUBLE_EQ(b.limits[1].max, 0.15);
  ASSERT_EQ(b.thresholds.size(), 1u);
  EXPECT_EQ(b.thresholds[0].first, "min_gap");
}

std::string budget_error(const std::string& text) {
  try {
    parse_budget(text, "b.toml");
  } catch (const BudgetError& e) {
    return e.what();
  }
  return "";
}

TEST(Budget, MalformedBudgetsNameTheLineAndProblem) {
  EXPECT_NE(budget_error("idle_fraction_max = 0.1\nspeed = 3\n").find("b.toml:2: unknown budget 'speed'"),
            std::string::npos);
  EXPECT_NE(budget_error("idle_fraction_max = 'lots'\n").find("must be a non-negative number"), std::string::npos);
  EXPECT_NE(budget_error("idle_fraction_max = -1\n").find("must be a non-negative number"), std::string::npos);
  EXPECT_NE(budget_error("idle_fraction_max = \n").find("b.toml:1:"), std::string::npos);
  EXPECT_NE(budget_error("").find("no budgets"), std::string::npos);
  EXPECT_NE(budget_error("step_time_ms_max = 1\n[thresholds]\nmin_gap = \"3 parsecs\"\n").find("b.toml:3:"),
            std::string::npos);
}

TEST(Budget, ChecksAgainstTheReport) {
  AnalysisReport r;
  r.metrics.recompiles = 2;
  r.metrics.idle_fraction = 0.10;
  Budget b = parse_budget("recompiles_after_warmup = 0\nidle_fraction_max = 0.15\n", "b");
  auto results = check_budget(b, r);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_FALSE(results[0].passed);
  EXPECT_DOUBLE_EQ(results[0].actual, 2);
  EXPECT_TRUE(results[1].passed);
  std::string junit = budget_junit(results, "t.db");
  EXPECT_NE(junit.find("tests=\"2\" failures=\"1\""), std::string::npos);
  EXPECT_NE(junit.find("<failure message=\"recompiles_after_warmup is 2, over the budget of 0\""), std::string::npos);
}

TEST(Budget, EachBudgetedMetricHasItsKeyAndEarlierNamesStillRead) {
  // Every key `loupe check --help` lists is `<metric>_max` of a budgeted metric.
  size_t budgeted = 0;
  for (const auto& m : trace_metrics()) budgeted += m.budgeted;
  for (const auto& m : job_metrics()) budgeted += m.budgeted;
  ASSERT_EQ(budget_keys().size(), budgeted);
  for (const BudgetKey& k : budget_keys()) {
    EXPECT_EQ(k.key, k.metric + "_max");
    EXPECT_EQ(parse_budget(k.key + " = 1\n", "b").limits.at(0).metric, k.metric);
  }
  // A duration: ns, or a string with a unit; the earlier key in ms.
  Budget now = parse_budget("step_time_max = \"120ms\"\nrecompiles_max = 0\n", "b");
  Budget ns = parse_budget("step_time_max = 120000000\n", "b");
  Budget before = parse_budget("step_time_ms_max = 120\nrecompiles_after_warmup = 0\n", "b");
  EXPECT_DOUBLE_EQ(now.limits[0].max, 1.2e8);
  EXPECT_DOUBLE_EQ(ns.limits[0].max, 1.2e8);
  EXPECT_DOUBLE_EQ(before.limits[0].max, 1.2e8);
  EXPECT_EQ(before.limits[0].key, "step_time_ms_max");  // printed as the file writes it
  EXPECT_EQ(before.limits[1].metric, "recompiles");
  EXPECT_NE(budget_error("recompiles_max = \"3ms\"\n").find("must be a non-negative number"), std::string::npos);
  EXPECT_NE(budget_error("step_time_max = \"3 parsecs\"\n").find("a string with a unit"), std::string::npos);

  AnalysisReport r;
  r.metrics.step_time = 1.5e8;
  r.metrics.transfer_bytes_per_step = 3 * 1024 * 1024;
  auto results = check_budget(parse_budget("step_time_ms_max = 120\ntransfer_bytes_per_step_max = 1024\n", "b"), r);
  EXPECT_FALSE(results[0].passed);
  EXPECT_EQ(results[0].actual_text, "150.000 ms");
  EXPECT_EQ(results[0].limit_text, "120.000 ms");
  EXPECT_EQ(results[1].actual_text, "3.0 MiB");
  EXPECT_EQ(results[1].limit_text, "1.0 KiB");
}

TEST(Budget, AJobsKeyOnATraceIsRefused) {
  AnalysisReport r;
  EXPECT_THROW(check_budget(parse_budget("straggler_fraction_max = 0.1\n", "b"), r), BudgetError);
}

TEST(Metrics, TheJsonReportCarriesEveryMetricByItsName) {
  AnalysisReport r;
  r.metrics.kernels = 7;
  r.metrics.step_time = 2.5e6;
  nlohmann::json doc = nlohmann::json::parse(report_json(r));
  EXPECT_EQ(doc["schema"], kReportSchemaVersion);
  EXPECT_EQ(doc["metrics"].size(), trace_metrics().size());
  for (const auto& m : trace_metrics()) {
    ASSERT_TRUE(doc["metrics"].contains(m.name)) << m.name;
    EXPECT_DOUBLE_EQ(doc["metrics"][m.name].get<double>(), m.value(r.metrics)) << m.name;
  }
  EXPECT_EQ(doc["metrics"]["kernels"], 7);
  EXPECT_DOUBLE_EQ(metric_value(r.metrics, "step_time"), 2.5e6);
  EXPECT_THROW(metric_value(r.metrics, "speed"), std::invalid_argument);
}

TEST(Metrics, DiffRowsFollowTheListAndEarlierNamesStillRead) {
  TraceMetrics b, h;
  b.kernels = 10;
  h.kernels = 15;
  std::vector<DiffRow> rows = metric_rows(b, h, 0.01);
  std::vector<std::string> names = trace_diff_metrics();
  ASSERT_EQ(rows.size(), names.size());
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i].name, names[i]);
  EXPECT_EQ(std::find(names.begin(), names.end(), "step_time_mad"), names.end());  // not compared
  EXPECT_TRUE(fail_on_crossed(parse_fail_on("kernel_count:+4"), rows, nullptr));
  EXPECT_EQ(parse_fail_on("kernel_count:+4").metric, "kernels");
  EXPECT_THROW(parse_fail_on("recompiles_after_warmup:+0"), std::invalid_argument);  // a budget key's old name
}

TEST(Diff, ATraceAgainstItselfChangesNothing) {
  loupe::test::TempDir dir;
  std::string path = dir.file("s.db");
  write_synthetic_trace(path, {.events = 40'000, .seed = 5});
  TraceModel m = load_trace(path);
  AnalysisReport r = analyze(m);
  TraceDiff d = diff_traces(m, r, m, r);
  for (const auto* rows : {&d.metrics, &d.device_ops, &d.device_op_counts, &d.host_spans, &d.launches}) {
    for (const DiffRow& row : *rows) {
      EXPECT_EQ(row.delta, 0) << row.name;
      EXPECT_FALSE(row.beyond_noise) << row.name;
      EXPECT_EQ(row.change, "unchanged") << row.name;
    }
  }
  EXPECT_FALSE(d.launches.empty());
  EXPECT_FALSE(fail_on_crossed(parse_fail_on("step_time:+0%"), d.metrics, nullptr));
}

TEST(Diff, AChangedKernelAndStepTime) {
  loupe::test::TempDir dir;
  auto build = [&](const std::string& name, int64_t kernel_ns) {
    loupe::test::TraceBuilder t(dir.file(name));
    t.device(0);
    for (int s = 0; s < 20; ++s) {
      int64_t base = s * 10'000;
      t.step(0, s, base, kernel_ns + 1000 + (s % 3) * 10);  // a little spread
      t.op(0, 0, base, kernel_ns, 0, DeviceOpKind::kernel, "matmul");
    }
    return t.load();
  };
  TraceModel base = build("base.db", 4000), head = build("head.db", 5000);
  AnalysisReport rb = analyze(base), rh = analyze(head);
  TraceDiff d = diff_traces(base, rb, head, rh);
  const DiffRow* step = nullptr;
  for (const DiffRow& r : d.metrics) {
    if (r.name == "step_time") step = &r;
  }
  ASSERT_NE(step, nullptr);
  EXPECT_DOUBLE_EQ(step->base, 5010);  // median of 5000, 5010, 5020
  EXPECT_DOUBLE_EQ(step->head, 6010);
  EXPECT_TRUE(step->beyond_noise);
  ASSERT_FALSE(d.device_ops.empty());
  EXPECT_EQ(d.device_ops[0].name, "matmul");
  EXPECT_DOUBLE_EQ(d.device_ops[0].delta, 1000);  // per step
  // As text, a metric's name comes first and a kernel's last (it can be
  // hundreds of characters long), after the change's mark.
  std::string text = diff_text(d, "base.db", "head.db", 10);
  EXPECT_NE(text.find("\n  step_time  "), std::string::npos) << text;
  EXPECT_NE(text.find("+1.000 us   +25.0%  * increased  matmul\n"), std::string::npos) << text;
  EXPECT_EQ(d.device_ops[0].change, "increased");
  std::string why;
  EXPECT_TRUE(fail_on_crossed(parse_fail_on("step_time:+5%"), d.metrics, &why));
  EXPECT_NE(why.find("beyond the limit +5%"), std::string::npos) << why;
  EXPECT_FALSE(fail_on_crossed(parse_fail_on("step_time:+25%"), d.metrics, nullptr));
  EXPECT_FALSE(fail_on_crossed(parse_fail_on("step_time:-1%"), d.metrics, nullptr));
  EXPECT_TRUE(fail_on_crossed(parse_fail_on("step_time:+900"), d.metrics, nullptr));  // absolute ns
  EXPECT_FALSE(fail_on_crossed(parse_fail_on("step_time:+1000"), d.metrics, nullptr));
}

// Back-to-back steps, each launching a kernel 20 ns after it starts,
// waiting for it in cudaStreamSynchronize and ending 50 ns (plus a little
// spread) after the wait returns: steps of 4,090 ns (median) with a 4 us
// kernel on the critical path. Head's kernel takes 1 us longer, and so do
// its steps (+1,000 / 4,090 = +24.4%): all of it in the path's kernels.
TEST(Diff, TheVerdictNamesWhereOnTheCriticalPathTheStepTimeMoved) {
  loupe::test::TempDir dir;
  auto build = [&](const std::string& name, int64_t kernel_ns) {
    loupe::test::TraceBuilder t(dir.file(name));
    t.device(0);
    int64_t at = 0;
    for (int s = 0; s < 20; ++s) {
      int64_t wait_end = at + 20 + kernel_ns + 10;
      int64_t end = wait_end + 50 + (s % 3) * 10;
      t.step(0, s, at, end - at);
      t.launch(0, at, 10, uint64_t(s + 1));
      t.op(0, 0, at + 20, kernel_ns, uint64_t(s + 1), DeviceOpKind::kernel, "matmul");
      t.span(0, at + 10, wait_end - at - 10, "cudaStreamSynchronize", SpanKind::wait);
      t.sync(0, at + 10, wait_end - at - 10, SyncKind::stream, 0);
      at = end;
    }
    return t.load();
  };
  TraceModel base = build("base.db", 4000), head = build("head.db", 5000);
  TraceDiff d = diff_traces(base, analyze(base), head, analyze(head));
  ASSERT_FALSE(d.critical_path.empty());
  EXPECT_EQ(d.critical_path[0].name, "kernels");
  EXPECT_DOUBLE_EQ(d.critical_path[0].delta, 1000);
  EXPECT_EQ(d.verdict,
            "step_time +1.000 us a step (+24.4%), +1.000 us of it on the critical path in kernels, +1.000 us in "
            "`matmul`");
  ASSERT_FALSE(d.critical_path_ops.empty());
  EXPECT_EQ(d.critical_path_ops[0].name, "matmul");
  EXPECT_DOUBLE_EQ(d.critical_path_ops[0].base, 4000);
  EXPECT_NE(diff_text(d, "base.db", "head.db", 10).find(d.verdict), std::string::npos);
  EXPECT_NE(diff_json(d, "base.db", "head.db").find("\"verdict\""), std::string::npos);
  // Against itself: no verdict.
  EXPECT_EQ(diff_traces(base, analyze(base), base, analyze(base)).verdict, "");
}

// Counts by name, launches included, in HTA's trace diff's five kinds of
// change. Per step (2 steps each): base launches cudaLaunchKernel twice and
// cudaMemcpyAsync once, and runs a zero-duration kernel `fill`; head
// launches cudaLaunchKernel twice, cudaMemcpyAsync three times and
// cudaGraphLaunch once, and no `fill`.
TEST(Diff, CountsOfEveryNameInFiveKindsOfChange) {
  loupe::test::TempDir dir;
  auto build = [&](const std::string& name, bool head) {
    loupe::test::TraceBuilder t(dir.file(name));
    t.device(0);
    uint64_t corr = 0;
    for (int s = 0; s < 2; ++s) {
      int64_t at = s * 10'000;
      t.step(0, s, at, 9000);
      auto launch = [&](const std::string& call, int n) {
        for (int k = 0; k < n; ++k, at += 100) {
          t.launch(0, at, 50, ++corr, 0, 0, call);
          t.op(0, 0, at + 60, 30, corr, DeviceOpKind::kernel, "gemm");
        }
      };
      launch("cudaLaunchKernel", 2);
      launch("cudaMemcpyAsync", head ? 3 : 1);
      if (head) launch("cudaGraphLaunch", 1);
      if (!head) t.op(0, 0, at + 5000, 0, 0, DeviceOpKind::kernel, "fill");
    }
    return t.load();
  };
  TraceModel base = build("base.db", false), head = build("head.db", true);
  TraceDiff d = diff_traces(base, analyze(base), head, analyze(head));
  std::map<std::string, const DiffRow*> launches, ops;
  for (const DiffRow& r : d.launches) launches[r.name] = &r;
  for (const DiffRow& r : d.device_op_counts) ops[r.name] = &r;
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_EQ(launches["cudaGraphLaunch"]->change, "added");
  EXPECT_DOUBLE_EQ(launches["cudaGraphLaunch"]->head, 1);
  EXPECT_EQ(launches["cudaMemcpyAsync"]->change, "increased");
  EXPECT_DOUBLE_EQ(launches["cudaMemcpyAsync"]->base, 1);
  EXPECT_DOUBLE_EQ(launches["cudaMemcpyAsync"]->head, 3);
  EXPECT_EQ(launches["cudaLaunchKernel"]->change, "unchanged");
  EXPECT_EQ(launches["cudaLaunchKernel"]->unit, "count");
  // The zero-duration kernel shows by its count, as time it would not.
  ASSERT_EQ(ops.count("fill"), 1u);
  EXPECT_EQ(ops["fill"]->change, "deleted");
  EXPECT_DOUBLE_EQ(ops["fill"]->base, 1);
  EXPECT_EQ(ops["gemm"]->change, "increased");  // 3 -> 6 a step
  EXPECT_DOUBLE_EQ(ops["gemm"]->head, 6);
  std::string json = diff_json(d, "base.db", "head.db");
  EXPECT_NE(json.find("\"launches\""), std::string::npos);
  EXPECT_NE(json.find("\"change\": \"added\""), std::string::npos);
}

TEST(Diff, FailOnSyntax) {
  FailOn f = parse_fail_on("peak_memory:+10%");
  EXPECT_EQ(f.metric, "peak_memory");
  EXPECT_TRUE(f.increase);
  EXPECT_TRUE(f.relative);
  EXPECT_DOUBLE_EQ(f.threshold, 0.10);
  for (const char* bad : {"step_time", "step_time:", "step_time:5%", "nope:+5%", "step_time:+x%", "step_time:+-5"}) {
    EXPECT_THROW(parse_fail_on(bad), std::invalid_argument) << bad;
  }
}

TEST(ChromeExport, ParsesAsJsonWithTheExpectedEvents) {
  loupe::test::TempDir dir;
  loupe::test::TraceBuilder t(dir.file("t.db"));
  t.device(0);
  t.span(0, 1000, 500, "step \"one\"", SpanKind::user);
  t.launch(0, 1100, 20, 9);
  t.op(0, 0, 1234, 1001, 9, DeviceOpKind::kernel, "gemm");
  t.memory(0, 1300, MemoryEventKind::alloc, 64, 1, 64, 128);
  t.compile(0, 10, 50, "f", CompileKind::miss, "first compile");
  t.compile(0, 2000, 50, "f", CompileKind::miss, "arg 0 `x`: now f32[2], before f32[3]");
  TraceModel m = t.load();
  std::string path = dir.file("out.json");
  std::FILE* out = std::fopen(path.c_str(), "wb");
  ChromeExportStats st = export_chrome_trace(m, out);
  std::fclose(out);
  std::FILE* in = std::fopen(path.c_str(), "rb");
  nlohmann::json doc = nlohmann::json::parse(in);
  std::fclose(in);
  const auto& ev = doc["traceEvents"];
  EXPECT_EQ(ev.size(), st.events);
  int spans = 0, kernels = 0, flows_start = 0, flows_end = 0, counters = 0, recompiles = 0;
  for (const auto& e : ev) {
    std::string ph = e["ph"];
    if (ph == "X" && e["name"] == "step \"one\"") {
      ++spans;
      EXPECT_EQ(e["ts"].get<double>(), 1.0);
      EXPECT_EQ(e["dur"].get<double>(), 0.5);
    }
    if (ph == "X" && e["name"] == "gemm") {
      ++kernels;
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 1.234);  // ns precision kept
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 1.001);
    }
    flows_start += ph == "s";
    flows_end += ph == "f";
    counters += ph == "C";
    recompiles += ph == "i" && e["cat"] == "recompile";
  }
  EXPECT_EQ(spans, 1);
  EXPECT_EQ(kernels, 1);
  EXPECT_EQ(flows_start, 1);
  EXPECT_EQ(flows_end, 1);
  EXPECT_EQ(counters, 1);
  EXPECT_EQ(recompiles, 1);  // the first compile is not a recompile
}

}  // namespace

// Evidence values line up after the keys; a key that names a whole chain
// of ops is followed by its value at once, so that it does not push every
// other value of the finding off the screen.
TEST(FindingsText, ALongKeyDoesNotPushTheOtherValuesAway) {
  Finding f;
  f.rule = "memory";
  f.title = "peak";
  f.evidence = {{"peak allocated", "1.00 GiB"},
                {"out-of-memory", "0"},
                {"live at peak: " + std::string(60, 'x'), "989.4 MiB in 143 blocks"}};
  std::string text = findings_text({f}, {.all = true});
  EXPECT_NE(text.find("\n    peak allocated  1.00 GiB\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n    out-of-memory   0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n    live at peak: " + std::string(60, 'x') + "  989.4 MiB in 143 blocks\n"), std::string::npos)
      << text;
}
