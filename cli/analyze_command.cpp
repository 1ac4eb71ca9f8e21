// loupe analyze FILE: findings ordered by impact.
#include <fmt/format.h>
#include <unistd.h>

#include "commands.h"
#include "loupe/prof/analysis.h"
#include "loupe/prof/report_format.h"
#include "loupe/prof/trace_reader.h"
#include "options.h"

namespace loupe::cli {

namespace {

struct AnalyzeArgs {
  std::string path;
  std::string format = "text";
  AnalysisArgs analysis;
};

// The options of `loupe analyze`.
void add_options(CLI::App& cmd, AnalyzeArgs& args) {
  cmd.description(
      "Find what made a run slow: recompiles, transfers, idle gaps, memory, "
      "tiny kernels, async timing, steps, communication (docs/analyses.md)");
  cmd.add_option("FILE", args.path, "trace file")->required();
  cmd.add_option("--format", args.format, "text, json or markdown")->check(CLI::IsMember({"text", "json", "markdown"}));
  add_analysis_options(cmd, args.analysis);
}

int run_analyze(const AnalyzeArgs& args) {
  prof::AnalysisOptions options = make_analysis_options(args.analysis);  // throws on bad values
  prof::TraceModel model = prof::load_trace(args.path);
  prof::AnalysisReport report = prof::analyze(model, options);
  std::string out;
  if (args.format == "json") out = prof::report_json(report);
  else if (args.format == "markdown") out = prof::report_markdown(report);
  else out = prof::report_text(report, isatty(STDOUT_FILENO) && !std::getenv("NO_COLOR"));
  std::fputs(out.c_str(), stdout);
  return kExitOk;
}

}  // namespace

Command add_analyze_command(CLI::App& app) { return make_command(app, "analyze", add_options, run_analyze); }

}  // namespace loupe::cli
