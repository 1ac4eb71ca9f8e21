// Writing a job's folder as one unit (docs/trace-format.md, "How a job is
// written").
//
// A writer locks the folder (flock on the folder itself: a second writer
// is refused at once, and a writer that dies takes its lock with it),
// checks that it is empty or holds a job loupe wrote, removes what a
// writer that died left there, and writes its traces under names no
// earlier generation of the folder used. Only when every trace is written
// and the new index passes the reader's own checks does the index replace
// the old one, in one rename; the old traces are removed after. A reader
// holding the old index reads only old traces, one holding the new index
// only new ones. Until the rename, any failure removes what was written
// and leaves the old job as it was, byte for byte.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "loupe/prof/job.h"
#include "loupe/prof/output_file.h"

namespace loupe::prof {

class JobWrite {
 public:
  // Takes the folder `dir` (created if needed) for a new job. Throws
  // JobError when it cannot: another writer holds it, it holds files that
  // are not a job's, its index is not one loupe wrote.
  explicit JobWrite(const std::string& dir);
  // Removes every file written unless commit() succeeded; unlocks.
  ~JobWrite();
  JobWrite(const JobWrite&) = delete;
  JobWrite& operator=(const JobWrite&) = delete;

  const std::string& dir() const { return dir_; }
  int64_t generation() const { return generation_; }
  // The name rank `rank`'s trace takes in this generation:
  // rank-00003.g2.db.
  std::string trace_name(int64_t rank) const;
  // The path a file of this write goes to, by its name in the folder;
  // the file is removed again unless commit() succeeds, and if the
  // process is stopped by a signal (loupe's CLI). A staging name for
  // the n-th input, for files whose rank is not known yet, is
  // staging_name(n).
  std::string add_file(const std::string& name);
  std::string staging_name(size_t n) const;
  // Gives a file of this write (by name) its final name, which must be
  // free: nothing in the folder is ever replaced. Throws FileError.
  void rename(const std::string& from, const std::string& to);

  // The job's index, checked as a reader checks it, replaces the old one;
  // the old job's traces are removed. Sets job.generation. Throws JobError
  // or FileError, leaving the old job in place.
  void commit(Job& job);

 private:
  void check_folder();
  void remove_unkept(const Job& job);

  std::string dir_;
  int lock_fd_ = -1;
  std::optional<Job> old_;  // the job the folder held
  int64_t generation_ = 1;
  std::mutex mu_;                     // add_file() is called from several threads
  std::vector<std::string> written_;  // names of this write's files
  std::vector<RemovedOnSignal> guards_;
  bool committed_ = false;
};

}  // namespace loupe::prof
