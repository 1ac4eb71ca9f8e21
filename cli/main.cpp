// loupe: the command-line face of the profiler.
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <exception>
#include <string>

#include "commands.h"
#include "loupe/prof/output_file.h"
#include "loupe/prof/safe_text.h"

namespace {

using namespace loupe::cli;

int run_loupe(int argc, char** argv) {
  CLI::App app{"loupe: a profiler for array programs on GPUs. Reads and writes loupe trace files.", "loupe"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "loupe 0.1.0");
  const Command commands[] = {
      add_info_command(app),  add_analyze_command(app), add_summary_command(app), add_check_command(app),
      add_diff_command(app),  add_export_command(app),  add_capture_command(app), add_sql_command(app),
      add_synth_command(app), add_import_command(app),  add_record_command(app),  add_whatif_command(app),
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line: what was wrong, and where the usage is.
    std::string help = "loupe --help";
    for (const Command& command : commands) {
      if (command.app->parsed()) help = "loupe " + command.app->get_name() + " --help";
    }
    std::fprintf(stderr, "loupe: %s (see '%s')\n", loupe::prof::printable(e.what()).c_str(), help.c_str());
    return kExitBadInput;
  }
  // A write past the file size limit then fails with EFBIG, which the
  // command reports, instead of killing loupe half-way through a file.
  std::signal(SIGXFSZ, SIG_IGN);
  // Ctrl-C during an import or an export leaves no temporary file.
  loupe::prof::remove_temporaries_on_signal();
  for (const Command& command : commands) {
    if (!command.app->parsed()) continue;
    try {
      return command.run();
    } catch (const std::exception& e) {
      // Messages quote file names and content from the trace: escaped.
      std::fprintf(stderr, "loupe: %s\n", loupe::prof::printable(e.what()).c_str());
      return kExitBadInput;
    }
  }
  return kExitBadInput;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run_loupe(argc, argv);
  } catch (const std::exception& e) {
    // Setting up the commands failed (out of memory): nothing has run yet.
    std::fprintf(stderr, "loupe: %s\n", loupe::prof::printable(e.what()).c_str());
  } catch (...) {
    std::fprintf(stderr, "loupe: an unknown error\n");
  }
  return kExitBadInput;
}
