// loupe export FILE --chrome OUT.json: for Perfetto and chrome://tracing.
#include <fmt/format.h>

#include "commands.h"
#include "loupe/prof/chrome_export.h"
#include "loupe/prof/output_file.h"
#include "loupe/prof/trace_reader.h"
#include "text_format.h"
#include "trace_input.h"

namespace loupe::cli {

namespace {

struct ExportArgs {
  std::string path, chrome;
  InputArgs input;
};

// The options of `loupe export`.
void add_options(CLI::App& cmd, ExportArgs& args) {
  cmd.description("Export a trace to another format (Chrome Trace Event JSON)");
  cmd.add_option("FILE", args.path, kTraceInputHelp)->required();
  cmd.add_option("--chrome", args.chrome, "write Chrome Trace Event JSON to this file")->required();
  add_input_options(cmd, args.input);
}

int run_export(const ExportArgs& args) {
  prof::OutputFile out(args.chrome, {args.path});  // refused before any work
  ReadInput in(args.path, args.input);
  if (in->is_job()) throw std::invalid_argument(fmt::format("{} is a job; export one rank's trace", args.path));
  prof::ChromeExportStats stats;
  try {
    stats = prof::export_chrome_trace(in.model(), out.stream());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("{}: {}", args.chrome, e.what()));
  }
  out.commit();
  fmt::print("wrote {}: {} events (open it in https://ui.perfetto.dev or chrome://tracing)\n", args.chrome,
             format_count(stats.events));
  if (stats.names_cut > 0) {
    fmt::print("cut {} name{} longer than {} to that length\n", format_count(stats.names_cut),
               stats.names_cut == 1 ? "" : "s", format_bytes(int64_t(prof::kExportNameLimit)));
  }
  if (stats.invalid_utf8 > 0) {
    fmt::print("replaced {} invalid UTF-8 sequence{} in names with U+FFFD\n", format_count(stats.invalid_utf8),
               stats.invalid_utf8 == 1 ? "" : "s");
  }
  return kExitOk;
}

}  // namespace

Command add_export_command(CLI::App& app) { return make_command(app, "export", add_options, run_export); }

}  // namespace loupe::cli
