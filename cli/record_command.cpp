// loupe record -o FILE -- PROGRAM [ARGS...]: runs a program built on the
// runtime with LOUPE_TRACE=FILE, so that it records itself without code
// changes, forwards its exit code, then prints what the trace holds.
#include <fmt/format.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "commands.h"

extern char** environ;

namespace loupe::cli {

namespace {

struct RecordArgs {
  std::string out;
  std::vector<std::string> command;
  bool quiet = false;
};

int run_record(const RecordArgs& args) {
  // The child's environment: ours, with LOUPE_TRACE replaced.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "LOUPE_TRACE=", 12) != 0) env_strings.emplace_back(*e);
  env_strings.push_back("LOUPE_TRACE=" + args.out);
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings = args.command;
  std::vector<char*> argv;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  ::unlink(args.out.c_str());  // a stale trace must not pass for this run's
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data());
  if (rc != 0) {
    fmt::print(stderr, "loupe: cannot run '{}': {}\n", args.command[0], std::strerror(rc));
    return kExitBadInput;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

  struct stat st;
  if (::stat(args.out.c_str(), &st) != 0) {
    fmt::print(stderr,
               "loupe: '{}' exited with {} without writing {} (is it built on loupe's runtime, or does it start a "
               "capture of its own?)\n",
               args.command[0], code, args.out);
    return code != 0 ? code : kExitFailed;
  }
  if (!args.quiet) {
    fmt::print("\n");
    std::fflush(stdout);
    int info = print_info(args.out);
    if (info != kExitOk && code == 0) return info;
  }
  if (code != 0) fmt::print(stderr, "loupe: '{}' exited with {}\n", args.command[0], code);
  return code;
}

}  // namespace

Command add_record_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "record", "Run a program built on loupe's runtime with recording on (LOUPE_TRACE), then show the trace");
  auto args = std::make_shared<RecordArgs>();
  cmd->add_option("-o,--out", args->out, "trace file to write")->required();
  cmd->add_flag("-q,--quiet", args->quiet, "do not print the trace summary after the run");
  cmd->add_option("command", args->command, "the program and its arguments (after --)")->required();
  cmd->footer("Example: loupe record -o trace.db -- build/bin/train_mlp --epochs 5\n"
              "The exit code is the program's.");
  return {cmd, [args] { return run_record(*args); }};
}

}  // namespace loupe::cli
