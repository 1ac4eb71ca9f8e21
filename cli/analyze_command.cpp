// loupe analyze FILE: findings ordered by impact; of a job's folder, the
// ranks compared (docs/analyses.md, "Jobs").
#include <fmt/format.h>
#include <unistd.h>

#include "commands.h"
#include "loupe/prof/analysis.h"
#include "loupe/prof/job.h"
#include "loupe/prof/job_analysis.h"
#include "loupe/prof/report_format.h"
#include "loupe/prof/trace_reader.h"
#include "options.h"
#include "trace_input.h"

namespace loupe::cli {

namespace {

struct AnalyzeArgs {
  std::string path;
  std::string format = "text";
  bool all = false;
  AnalysisArgs analysis;
  InputArgs input;
};

// The options of `loupe analyze`.
void add_options(CLI::App& cmd, AnalyzeArgs& args) {
  cmd.description(
      "Find what made a run slow: recompiles, transfers, idle gaps, memory, "
      "tiny kernels, async timing, steps, communication (docs/analyses.md)");
  cmd.add_option("FILE", args.path, kTraceInputHelp)->required();
  cmd.add_option("--format", args.format, "text, json or markdown")->check(CLI::IsMember({"text", "json", "markdown"}));
  cmd.add_flag("--all", args.all, "text: findings of information in full, not one line each");
  add_analysis_options(cmd, args.analysis);
  add_input_options(cmd, args.input);
}

int run_analyze_job(const AnalyzeArgs& args) {
  prof::JobAnalysisOptions options = make_job_options(args.analysis);  // throws on bad values
  ReadInput in(args.path, args.input);
  prof::JobReport report = prof::analyze_job(in->job_dir, options);
  std::string out;
  if (args.format == "json") out = prof::format_job_json(report);
  else if (args.format == "markdown") out = prof::format_job_markdown(report);
  else out = prof::format_job_text(report);
  std::fputs(out.c_str(), stdout);
  return kExitOk;
}

int run_analyze(const AnalyzeArgs& args) {
  if (prof::plan_input(args.path).is_job()) return run_analyze_job(args);
  prof::AnalysisOptions options = make_analysis_options(args.analysis);  // throws on bad values
  ReadInput in(args.path, args.input);
  prof::AnalysisReport report = prof::analyze(in.model(), options);
  std::string out;
  if (args.format == "json") out = prof::report_json(report);
  else if (args.format == "markdown") out = prof::report_markdown(report);
  else out = prof::report_text(report, {.color = isatty(STDOUT_FILENO) && !std::getenv("NO_COLOR"), .all = args.all});
  std::fputs(out.c_str(), stdout);
  return kExitOk;
}

}  // namespace

Command add_analyze_command(CLI::App& app) { return make_command(app, "analyze", add_options, run_analyze); }

}  // namespace loupe::cli
