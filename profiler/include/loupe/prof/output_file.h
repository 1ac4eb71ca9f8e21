// The one way loupe writes an output file (a trace, an export, a report).
//
// The new content goes to a temporary file beside the target and replaces
// it only when complete: flushed, fsync'd, then renamed over it, so that
// the target holds either the previous file or the new one, never a part;
// a failure leaves the previous file and removes the temporary one. A
// target that exists must be a regular file (or a symbolic link to one,
// which is written through); a device node, FIFO or directory is refused,
// and so is a target that is the same file as one of the command's inputs.
// SQLite's files beside the target (-wal, -shm, -journal) belong to the
// old content and go with it. A command stopped by Ctrl-C leaves no
// temporary file (remove_temporaries_on_signal). docs/reliability.md
// states these promises.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "loupe/prof/input_file.h"  // FileError

namespace loupe::prof {

// Checks that `path` may be written as an output: absent, or a regular
// file that is none of `inputs` (compared by device and inode). Throws
// FileError naming the path and the problem.
void check_output_path(const std::string& path, const std::vector<std::string>& inputs = {});

// Removes `path` and SQLite's files beside it (-wal, -shm, -journal),
// which belong to its content; what does not exist is skipped.
void remove_with_sidecars(const std::string& path);

// What an output path that is a symbolic link gets.
enum class OutputLink : uint8_t {
  write_through,  // the file it names is replaced; the link stays
  refuse,         // refused: a file of a folder loupe owns (a job's index) is never a link
};

// Ctrl-C (SIGINT), SIGTERM and SIGHUP first remove the temporary files
// being written (every OutputFile's, and the paths a RemovedOnSignal
// guards, with their SQLite files), then end the process as the signal
// would have. Installed by loupe's own commands, never in a program loupe
// records, whose signals are its own; a signal that was ignored stays
// ignored.
void remove_temporaries_on_signal();

// Guards `path` for removal on those signals while it lives: a file being
// written that is not complete. At most 64 paths are guarded at once; one
// beyond that is not (whoever writes there next removes it).
class RemovedOnSignal {
 public:
  explicit RemovedOnSignal(const std::string& path);
  ~RemovedOnSignal();
  RemovedOnSignal(RemovedOnSignal&& other) noexcept : slot_(other.slot_) { other.slot_ = -1; }
  RemovedOnSignal& operator=(RemovedOnSignal&&) = delete;
  RemovedOnSignal(const RemovedOnSignal&) = delete;

 private:
  int slot_ = -1;
};

class OutputFile {
 public:
  // Checks the target (as check_output_path) and creates the temporary
  // file beside it. Throws FileError.
  explicit OutputFile(const std::string& path, const std::vector<std::string>& inputs = {},
                      OutputLink link = OutputLink::write_through);
  // Removes the temporary file (and any SQLite files beside it) unless
  // commit() succeeded.
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  const std::string& path() const { return path_; }       // as given
  const std::string& target() const { return target_; }   // symbolic links resolved
  const std::string& temp_path() const { return temp_; }  // where the content goes
  // The temporary file as a stdio stream, for writers of text; opened on
  // first use. A writer that opens temp_path() itself (SQLite) must close
  // it before commit().
  std::FILE* stream();

  // Flushes and fsyncs the temporary file, renames it over the target and
  // fsyncs the folder. Throws FileError naming the target on any failure
  // (a full disk, a file size limit), leaving the target as it was.
  void commit();

 private:
  std::string path_, target_, temp_;
  std::vector<std::string> inputs_;
  OutputLink link_;
  std::optional<RemovedOnSignal> guard_;
  int fd_ = -1;
  std::FILE* stream_ = nullptr;
  bool committed_ = false;
};

}  // namespace loupe::prof
