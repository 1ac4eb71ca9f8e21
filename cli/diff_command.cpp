// loupe diff BASE HEAD: what changed between two runs (two traces, or two
// jobs), and whether it is beyond noise; --fail-on turns chosen changes
// into exit code 1.
#include <fmt/format.h>

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
  std::vector<std::string> fail_on;
  size_t limit = 15;
  AnalysisArgs analysis;
  InputArgs input;
};

// The options of `loupe diff`.
void add_options(CLI::App& cmd, DiffArgs& args) {
  cmd.description("Compare two runs: metrics, device ops and host spans, with noise marked");
  cmd.add_option("BASE", args.base, "baseline: a trace (as analyze takes it), or a job's folder")->required();
  cmd.add_option("HEAD", args.head, "the trace (or job) to compare with it")->required();
  cmd.add_option("--format", args.format, "text, json or markdown")->check(CLI::IsMember({"text", "json", "markdown"}));
  cmd.add_option("--fail-on", args.fail_on,
                 "exit 1 when a metric moves past a threshold, e.g. 'step_time:+5%', 'recompiles:+0', "
                 "'peak_memory:+10%' (repeatable)");
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

int run_diff(const DiffArgs& args) {
  bool base_job = prof::plan_input(args.base).is_job(), head_job = prof::plan_input(args.head).is_job();
  if (base_job != head_job) {
    throw std::invalid_argument(
        fmt::format("{} and {}: compare two jobs or two traces, not one of each", args.base, args.head));
  }
  if (base_job) return run_diff_jobs(args);
  prof::AnalysisOptions options = make_analysis_options(args.analysis);
  std::vector<prof::FailOn> rules;
  for (const std::string& f : args.fail_on) rules.push_back(prof::parse_fail_on(f));  // throws on bad input
  // The two traces open and analyse independently: side by side.
  std::unique_ptr<ReadInput> base, head;
  prof::AnalysisReport base_report, head_report;
  std::exception_ptr head_error;
  std::thread other([&] {
    try {
      head = std::make_unique<ReadInput>(args.head, args.input, 1);
      head_report = prof::analyze(head->model(), options);
    } catch (...) {
      head_error = std::current_exception();
    }
  });
  try {
    base = std::make_unique<ReadInput>(args.base, args.input, 1);
    base_report = prof::analyze(base->model(), options);
  } catch (...) {
    other.join();
    throw;
  }
  other.join();
  if (head_error) std::rethrow_exception(head_error);

  prof::TraceDiff d = prof::diff_traces(base->model(), base_report, head->model(), head_report);
  return print_diff(args, d, {prof::diff_json, prof::diff_markdown, prof::diff_text}, rules);
}

}  // namespace

Command add_diff_command(CLI::App& app) { return make_command(app, "diff", add_options, run_diff); }

}  // namespace loupe::cli
