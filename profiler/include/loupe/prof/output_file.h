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
// old content and go with it. docs/reliability.md states these promises.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "loupe/prof/input_file.h"  // FileError

namespace loupe::prof {

// Checks that `path` may be written as an output: absent, or a regular
// file that is none of `inputs` (compared by device and inode). Throws
// FileError naming the path and the problem.
void check_output_path(const std::string& path, const std::vector<std::string>& inputs = {});

class OutputFile {
 public:
  // Checks the target (as check_output_path) and creates the temporary
  // file beside it. Throws FileError.
  explicit OutputFile(const std::string& path, const std::vector<std::string>& inputs = {});
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
  int fd_ = -1;
  std::FILE* stream_ = nullptr;
  bool committed_ = false;
};

}  // namespace loupe::prof
