// loupe export FILE --chrome OUT.json: for Perfetto and chrome://tracing.
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "commands.h"
#include "loupe/prof/chrome_export.h"
#include "loupe/prof/trace_reader.h"
#include "text_format.h"

namespace loupe::cli {

namespace {

struct ExportArgs {
  std::string path, chrome;
};

int run_export(const ExportArgs& args) {
  prof::TraceModel model = prof::load_trace(args.path);
  std::FILE* out = std::fopen(args.chrome.c_str(), "wb");
  if (out == nullptr) throw std::runtime_error(fmt::format("cannot create '{}': {}", args.chrome, std::strerror(errno)));
  prof::ChromeExportStats stats;
  try {
    stats = prof::export_chrome_trace(model, out);
  } catch (const std::exception& e) {
    std::fclose(out);
    std::remove(args.chrome.c_str());
    throw std::runtime_error(fmt::format("{}: {}", args.chrome, e.what()));
  }
  if (std::fclose(out) != 0) throw std::runtime_error(fmt::format("cannot write '{}'", args.chrome));
  fmt::print("wrote {}: {} events (open it in https://ui.perfetto.dev or chrome://tracing)\n", args.chrome,
             format_count(stats.events));
  return kExitOk;
}

}  // namespace

Command add_export_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("export", "Export a trace to another format (Chrome Trace Event JSON)");
  auto args = std::make_shared<ExportArgs>();
  cmd->add_option("FILE", args->path, "trace file")->required();
  cmd->add_option("--chrome", args->chrome, "write Chrome Trace Event JSON to this file")->required();
  return {cmd, [args] { return run_export(*args); }};
}

}  // namespace loupe::cli
