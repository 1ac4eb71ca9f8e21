// Running the program that `loupe record` and `loupe capture` observe: it
// gets the signals meant for it, loupe waits for it, and loupe ends the
// way it ended, so that a shell or a job scheduler sees no difference.
#pragma once

#include <sys/stat.h>

#include <optional>
#include <string>
#include <vector>

namespace loupe::cli {

// Starts `argv` (searched on PATH) with environment `env` and waits for it.
// SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to loupe while it runs are
// passed on to it. Returns its wait status; throws std::runtime_error
// naming the program if it cannot be started.
int run_child(const std::vector<std::string>& argv, const std::vector<std::string>& env);

// The exit code a shell would report for a wait status (128 + signal).
int exit_code_of(int status);

// Returns `code` for a program that exited; for one killed by a signal,
// kills loupe with the same signal.
int end_like(int status, int code);

// Our environment without the variables named in `drop` (prefixes such as
// "LOUPE_TRACE="), followed by `add`.
std::vector<std::string> child_environment(const std::vector<std::string>& drop, const std::vector<std::string>& add);

// What identifies one version of a file: a new file put in its place (by
// rename, as loupe writes traces) differs even when its size does not.
struct FileVersion {
  dev_t device = 0;
  ino_t inode = 0;
  int64_t mtime_ns = 0;
  int64_t size = 0;
  bool operator==(const FileVersion&) const = default;
};
std::optional<FileVersion> file_version(const std::string& path);

}  // namespace loupe::cli
