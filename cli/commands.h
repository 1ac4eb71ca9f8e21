// The subcommands of `loupe`. Each registers its options on the CLI11 app
// and returns the function that runs it (exit code as result).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <string>

namespace loupe::cli {

// Exit codes shared by every command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;    // a check or budget failed
inline constexpr int kExitBadInput = 2;  // bad usage, a bad file

struct Command {
  CLI::App* app;             // the subcommand, with its options
  std::function<int()> run;  // runs it once parsed; returns the exit code
};

// Adds the subcommand `name`: `options(cmd, args)` describes it and
// registers its options, which fill an Args that lives as long as the
// command does; `run(args)` runs it once they are parsed.
template <typename Args, typename Options>
Command make_command(CLI::App& app, const std::string& name, Options&& options, int (*run)(const Args&)) {
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(name);
  options(*cmd, *args);
  return {cmd, [args, run] { return run(*args); }};
}

Command add_info_command(CLI::App& app);
Command add_sql_command(CLI::App& app);
Command add_synth_command(CLI::App& app);
Command add_analyze_command(CLI::App& app);
Command add_summary_command(CLI::App& app);
Command add_check_command(CLI::App& app);
Command add_diff_command(CLI::App& app);
Command add_export_command(CLI::App& app);
Command add_capture_command(CLI::App& app);
Command add_import_command(CLI::App& app);
Command add_record_command(CLI::App& app);
Command add_whatif_command(CLI::App& app);

// Prints `loupe info` of a trace (shared by info and record).
int print_info(const std::string& path);

}  // namespace loupe::cli
