// loupe check FILE --budget loupe.toml: exit 1 when a budget is exceeded;
// of a job's folder, the job's budgets and a trace's on every rank.
#include <fmt/format.h>

#include <memory>

#include "commands.h"
#include "loupe/prof/analysis.h"
#include "loupe/prof/budget.h"
#include "loupe/prof/job.h"
#include "loupe/prof/job_analysis.h"
#include "loupe/prof/output_file.h"
#include "loupe/prof/trace_reader.h"
#include "text_format.h"
#include "trace_input.h"

namespace loupe::cli {

namespace {

struct CheckArgs {
  std::string path, budget, junit;
  InputArgs input;
};

// The options of `loupe check`.
void add_options(CLI::App& cmd, CheckArgs& args) {
  cmd.description("Check a trace against budgets (TOML); exit 1 if any is exceeded");
  cmd.add_option("FILE", args.path, kTraceInputHelp)->required();
  std::string keys;
  for (const auto& k : prof::budget_keys()) keys += fmt::format("\n  {}: {}", k.key, k.description);
  cmd.add_option("--budget", args.budget, "budget file (TOML) with any of:" + keys)->required();
  cmd.add_option("--junit", args.junit, "also write the results as JUnit XML to this file");
  add_input_options(cmd, args.input);
}

// The job's budgets, and on stderr the ranks left out of them (a job none
// of whose ranks can be read throws JobError: exit 2, never a pass).
std::vector<prof::BudgetResult> checked_job(const prof::Budget& budget, const std::string& path) {
  prof::JobAnalysisOptions options;
  options.rank = prof::analysis_options(budget);
  prof::JobReport report = prof::analyze_job(path, options);
  if (report.metrics.ranks_left_out > 0) {
    fmt::print(stderr, "loupe: {} of the job's {} ranks are left out of the check (ranks_left_out_max limits them):\n",
               report.metrics.ranks_left_out, report.world_size);
    for (const std::string& p : report.problems) fmt::print(stderr, "  {}\n", shown(p));
  }
  return prof::check_job_budget(budget, report);
}

// The budget against the trace, or the job (its thresholds set each
// rank's analysis). A job's key on a trace is a usage error.
std::vector<prof::BudgetResult> checked(const prof::Budget& budget, const CheckArgs& args) {
  ReadInput in(args.path, args.input);
  try {
    if (!in->is_job()) return prof::check_budget(budget, in.model());
    return checked_job(budget, in->job_dir);
  } catch (const prof::BudgetError& e) {
    throw std::invalid_argument(e.what());
  }
}

int run_check(const CheckArgs& args) {
  // The report is refused before any work if it could not be written.
  std::unique_ptr<prof::OutputFile> junit;
  if (!args.junit.empty()) junit = std::make_unique<prof::OutputFile>(args.junit, std::vector{args.path, args.budget});
  prof::Budget budget;
  try {
    budget = prof::read_budget_file(args.budget);
  } catch (const prof::BudgetError& e) {
    throw std::invalid_argument(e.what());
  }
  std::vector<prof::BudgetResult> results = checked(budget, args);
  size_t failed = 0;
  for (const prof::BudgetResult& r : results) {
    if (r.passed) {
      fmt::print("pass  {:<28} {} <= {}\n", r.key, r.actual_text, r.limit_text);
    } else {
      ++failed;
      std::string by = r.limit > 0 ? fmt::format("{:.2f}x the budget", r.actual / r.limit) : "budget is 0";
      fmt::print("FAIL  {:<28} {} > {} ({})\n", r.key, r.actual_text, r.limit_text, by);
    }
  }
  fmt::print("{}: {} of {} budgets exceeded\n", shown(args.path), failed, results.size());
  if (junit) {
    std::string xml = prof::budget_junit(results, args.path);
    std::fwrite(xml.data(), 1, xml.size(), junit->stream());
    junit->commit();  // throws, naming the file, if any of it failed
  }
  return failed > 0 ? kExitFailed : kExitOk;
}

}  // namespace

Command add_check_command(CLI::App& app) { return make_command(app, "check", add_options, run_check); }

}  // namespace loupe::cli
