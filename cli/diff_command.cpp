// loupe diff BASE HEAD, or --base A1 A2 ... --head B1 B2 ...: what changed
// between two runs (two traces, or two jobs) or two sets of runs, and
// whether it is beyond noise; --fail-on turns chosen changes into exit
// code 1.
#include <fmt/format.h>

#include <atomic>
#include <memory>
#include <thread>

#include "commands.h"
#include "loupe/prof/analysis.h"
#include "loupe/prof/job.h"
#include "loupe/prof/job_analysis.h"
#include "loupe/prof/trace_diff.h"
#include "loupe/prof/trace_reader.h"
#include "options.h"
#include "trace_input.h"

namespace loupe::cli {

namespace {

struct DiffArgs {
  std::string base, head, format = "text";
  std::vector<std::string> base_runs, head_runs;
  int64_t step = -1;
  double significance = 0.05;
  std::vector<std::string> fail_on;
  size_t limit = 15;
  AnalysisArgs analysis;
  InputArgs input;
};

// The options of `loupe diff`.
void add_options(CLI::App& cmd, DiffArgs& args) {
  cmd.description(
      "Compare two runs, or two sets of runs: metrics, and per step the device ops, host spans and launch calls "
      "by name, with noise marked");
  cmd.add_option("BASE", args.base, "baseline: a trace (as analyze takes it), or a job's folder");
  cmd.add_option("HEAD", args.head, "the trace (or job) to compare with it");
  cmd.add_option("--base", args.base_runs,
                 "several runs of the baseline (traces), instead of BASE: step times and times by name are then "
                 "tested with a rank test over steps blocked by run")
      ->expected(1, -1);
  cmd.add_option("--head,--test", args.head_runs, "several runs to compare with them, instead of HEAD")
      ->expected(1, -1);
  cmd.add_option("--step", args.step, "compare this step of each run by name (default: each name's median step)")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--significance", args.significance,
                 "with several runs a side, the rank test's level below which a change is marked (default 0.05)")
      ->check(CLI::Range(1e-9, 0.5));
  cmd.add_option("--format", args.format, "text, json or markdown")->check(CLI::IsMember({"text", "json", "markdown"}));
  cmd.add_option("--fail-on", args.fail_on,
                 "exit 1 when a metric moves past a threshold and beyond noise (significantly, with several runs), "
                 "e.g. 'step_time:+5%', 'recompiles:+0', 'peak_memory:+10%' (repeatable)");
  cmd.add_option("--limit", args.limit, "rows per name table (default 15)");
  add_analysis_options(cmd, args.analysis);
  add_input_options(cmd, args.input);
}

// Prints each --fail-on verdict; true when any is crossed.
bool any_crossed(const std::vector<prof::FailOn>& rules, const std::vector<prof::DiffRow>& metrics) {
  bool failed = false;
  for (const prof::FailOn& rule : rules) {
    std::string why;
    bool crossed = prof::fail_on_crossed(rule, metrics, &why);
    failed |= crossed;
    fmt::print(stderr, "{} --fail-on {}: {}\n", crossed ? "FAIL" : "pass", rule.text, why);
  }
  return failed;
}

// The formats of a trace's or a job's diff.
template <typename Diff>
struct DiffFormats {
  std::string (*json)(const Diff&, const std::string& base, const std::string& head);
  std::string (*markdown)(const Diff&, const std::string& base, const std::string& head, size_t limit);
  std::string (*text)(const Diff&, const std::string& base, const std::string& head, size_t limit);
};

// Prints the diff in the format asked for, then each --fail-on verdict.
template <typename Diff>
int print_diff(const DiffArgs& args, const Diff& d, const DiffFormats<Diff>& formats,
               const std::vector<prof::FailOn>& rules) {
  std::string out;
  if (args.format == "json") out = formats.json(d, args.base, args.head);
  else if (args.format == "markdown") out = formats.markdown(d, args.base, args.head, args.limit);
  else out = formats.text(d, args.base, args.head, args.limit);
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
  return any_crossed(rules, d.metrics) ? kExitFailed : kExitOk;
}

// Two jobs, each analysed as `loupe analyze job/` does.
int run_diff_jobs(const DiffArgs& args) {
  std::vector<prof::FailOn> rules;
  for (const std::string& f : args.fail_on) rules.push_back(prof::parse_fail_on(f, prof::job_diff_metrics()));
  prof::JobAnalysisOptions job_options = make_job_options(args.analysis);
  ReadInput base(args.base, args.input), head(args.head, args.input);
  prof::JobDiff d =
      prof::diff_jobs(prof::analyze_job(base->job_dir, job_options), prof::analyze_job(head->job_dir, job_options));
  return print_diff(args, d, {prof::job_diff_json, prof::job_diff_markdown, prof::job_diff_text}, rules);
}

// One trace read and analysed.
struct AnalysedRun {
  std::unique_ptr<ReadInput> input;
  prof::AnalysisReport report;
};

// Every run read and analysed, two at a time (each reads on one thread);
// the first error, after all have stopped.
std::vector<AnalysedRun> analyse_all(const std::vector<std::string>& paths, const DiffArgs& args) {
  prof::AnalysisOptions options = make_analysis_options(args.analysis);
  std::vector<AnalysedRun> runs(paths.size());
  std::vector<std::exception_ptr> errors(paths.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < paths.size();) {
      try {
        runs[i].input = std::make_unique<ReadInput>(paths[i], args.input, 1);
        runs[i].report = prof::analyze(runs[i].input->model(), options);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::thread other(work);
  work();
  other.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return runs;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The runs of each side, from BASE HEAD or --base/--head.
std::pair<std::vector<std::string>, std::vector<std::string>> sides_of(const DiffArgs& args) {
  bool positional = !args.base.empty() || !args.head.empty();
  bool several = !args.base_runs.empty() || !args.head_runs.empty();
  if (positional && several) throw std::invalid_argument("loupe diff: give BASE HEAD or --base/--head, not both");
  if (several && (args.base_runs.empty() || args.head_runs.empty())) {
    throw std::invalid_argument("loupe diff: --base and --head each need at least one run");
  }
  if (!several && (args.base.empty() || args.head.empty())) {
    throw std::invalid_argument("loupe diff: give BASE and HEAD, or --base RUN... --head RUN...");
  }
  if (several) return {args.base_runs, args.head_runs};
  return {{args.base}, {args.head}};
}

int run_diff(const DiffArgs& args) {
  auto [base_paths, head_paths] = sides_of(args);
  auto is_job = [](const std::string& p) { return prof::plan_input(p).is_job(); };
  bool base_job = std::any_of(base_paths.begin(), base_paths.end(), is_job);
  bool head_job = std::any_of(head_paths.begin(), head_paths.end(), is_job);
  if (base_job != head_job) {
    throw std::invalid_argument(fmt::format("{} and {}: compare two jobs or two traces, not one of each",
                                            joined(base_paths), joined(head_paths)));
  }
  if (base_job && (base_paths.size() > 1 || head_paths.size() > 1)) {
    throw std::invalid_argument("loupe diff: jobs compare one folder a side (BASE HEAD)");
  }
  if (base_job && args.step >= 0) throw std::invalid_argument("loupe diff: --step compares traces, not jobs");
  if (base_job) return run_diff_jobs(args);
  std::vector<prof::FailOn> rules;
  for (const std::string& f : args.fail_on) rules.push_back(prof::parse_fail_on(f));  // throws on bad input
  std::vector<std::string> paths = base_paths;
  paths.insert(paths.end(), head_paths.begin(), head_paths.end());
  std::vector<AnalysedRun> analysed = analyse_all(paths, args);
  std::vector<prof::DiffRun> runs;
  for (size_t i = 0; i < analysed.size(); ++i)
    runs.push_back({analysed[i].input->model(), analysed[i].report, paths[i]});
  std::span<const prof::DiffRun> all(runs);
  prof::TraceDiff d = prof::diff_runs(all.first(base_paths.size()), all.subspan(base_paths.size()),
                                      {.step = args.step, .significance = args.significance});
  DiffArgs named = args;
  named.base = joined(base_paths);
  named.head = joined(head_paths);
  return print_diff(named, d, {prof::diff_json, prof::diff_markdown, prof::diff_text}, rules);
}

}  // namespace

Command add_diff_command(CLI::App& app) { return make_command(app, "diff", add_options, run_diff); }

}  // namespace loupe::cli
