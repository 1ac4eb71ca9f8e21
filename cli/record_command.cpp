// loupe record -o FILE -- PROGRAM [ARGS...]: runs a program built on the
// runtime with LOUPE_TRACE=FILE, so that it records itself without code
// changes, forwards its exit code and signals, then prints what the trace
// holds.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "child_process.h"
#include "commands.h"
#include "loupe/prof/output_file.h"

namespace loupe::cli {

namespace {

struct RecordArgs {
  std::string out;
  std::vector<std::string> command;
  bool quiet = false;
};

// The options of `loupe record`.
void add_options(CLI::App& cmd, RecordArgs& args) {
  cmd.description("Run a program built on loupe's runtime with recording on (LOUPE_TRACE), then show the trace");
  cmd.add_option("-o,--out", args.out, "trace file to write")->required();
  cmd.add_flag("-q,--quiet", args.quiet, "do not print the trace summary after the run");
  cmd.add_option("command", args.command, "the program and its arguments (after --)")->required();
  cmd.footer(
      "Example: loupe record -o trace.db -- build/bin/train_mlp --epochs 5\n"
      "The exit code is the program's; SIGINT, SIGTERM and SIGHUP sent to loupe are passed on to it.");
}

int run_record(const RecordArgs& args) {
  // Refused before the program starts: a path the capture could not write.
  prof::check_output_path(args.out);
  // The previous trace stays until the program's capture replaces it; one
  // still there afterwards is not this run's.
  std::optional<FileVersion> before = file_version(args.out);
  int status = run_child(args.command, child_environment({"LOUPE_TRACE="}, {"LOUPE_TRACE=" + args.out}));
  int code = exit_code_of(status);

  std::optional<FileVersion> after = file_version(args.out);
  if (!after || after == before) {
    fmt::print(stderr,
               "loupe: '{}' exited with {} without writing {} (is it built on loupe's runtime, or does it start a "
               "capture of its own?)\n",
               args.command[0], code, args.out);
    return end_like(status, code != 0 ? code : kExitFailed);
  }
  if (!args.quiet) {
    fmt::print("\n");
    std::fflush(stdout);
    int info = print_info(args.out);
    if (info != kExitOk && code == 0) return info;
  }
  if (code != 0) fmt::print(stderr, "loupe: '{}' exited with {}\n", args.command[0], code);
  return end_like(status, code);
}

}  // namespace

Command add_record_command(CLI::App& app) { return make_command(app, "record", add_options, run_record); }

}  // namespace loupe::cli
