#include "job/job_folder.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <regex>
#include <set>

#include "job/job_index.h"
#include "loupe/prof/input_file.h"
#include "loupe/prof/safe_text.h"

namespace loupe::prof {

namespace {

// The files loupe writes in a job's folder, by name: rank traces
// (rank-00003.db before generations, rank-00003.g2.db since), inputs
// staged before their rank is known (stage-4.g2.db), the temporary files
// beside each (NAME.loupe-tmp-PID-N) and SQLite's files beside them. Older
// loupes staged inputs as .import-N.db.
const std::regex& trace_pattern() {
  static const std::regex pattern(R"(rank-[0-9]{5,7}(\.g[0-9]{1,16})?\.db)");
  return pattern;
}
const std::regex& written_pattern() {
  static const std::regex pattern(
      R"(((rank-[0-9]{5,7}|stage-[0-9]{1,20})(\.g[0-9]{1,16})?\.db|\.import-[0-9]{1,20}\.db|job\.json)(\.loupe-tmp-[0-9]+-[0-9]+(-old)?)?(-wal|-shm|-journal)?)");
  return pattern;
}

bool is_trace_name(const std::string& name) { return std::regex_match(name, trace_pattern()); }
bool is_written_name(const std::string& name) { return std::regex_match(name, written_pattern()); }

[[noreturn]] void refuse(const std::string& dir, const std::string& why) {
  throw JobError(fmt::format(
      "{}: {}; a job is written into an empty folder or over a job loupe wrote: remove the folder or write elsewhere",
      printable(dir), why));
}

struct stat lstat_of(const std::string& path, bool* exists) {
  struct stat st {};
  *exists = ::lstat(path.c_str(), &st) == 0;
  return st;
}

// The names in the folder, but . and ..
std::vector<std::string> entries_of(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) throw JobError(fmt::format("{}: cannot read the folder: {}", printable(dir), std::strerror(errno)));
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  ::closedir(d);
  return names;
}

}  // namespace

JobWrite::JobWrite(const std::string& dir) : dir_(dir) {
  if (dir.empty()) throw JobError("'': is no folder name; name the job's folder");
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw JobError(fmt::format("{}: cannot create the folder: {}", printable(dir), ec.message()));
  } else if (!S_ISDIR(st.st_mode)) {
    throw JobError(fmt::format("{}: is not a folder", printable(dir)));
  }
  lock_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock_fd_ < 0) throw JobError(fmt::format("{}: cannot open the folder: {}", printable(dir), std::strerror(errno)));
  // A file system without locks (some network ones) still takes a job:
  // the write is then as safe as its one writer at a time.
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0 && errno != ENOLCK && errno != EOPNOTSUPP && errno != EINVAL) {
    int err = errno;
    ::close(lock_fd_);
    lock_fd_ = -1;
    if (err == EWOULDBLOCK) {
      throw JobError(fmt::format("{}: another loupe is writing a job into this folder; run again once it is done",
                                 printable(dir)));
    }
    throw JobError(fmt::format("{}: cannot lock the folder: {}", printable(dir), std::strerror(err)));
  }
  try {
    check_folder();
  } catch (...) {
    ::close(lock_fd_);
    throw;
  }
}

// The folder is empty, or holds a job loupe wrote and what writers that
// died left (which goes now). Nothing else is ever removed or replaced.
void JobWrite::check_folder() {
  std::string index = index_path(dir_);
  bool has_index = false;
  struct stat st = lstat_of(index, &has_index);
  std::set<std::string> job_files;
  if (has_index) {
    if (!S_ISREG(st.st_mode)) refuse(dir_, fmt::format("its {} is not a regular file", kJobIndexName));
    try {
      old_ = parse_job_index(read_index_text(dir_), dir_);
    } catch (const JobError& e) {
      refuse(dir_, fmt::format("it holds a {} that is not a loupe job's ({})", kJobIndexName, e.what()));
    }
    for (const JobRank& r : old_->ranks) {
      bool exists = false;
      struct stat trace = lstat_of(old_->trace_path(r), &exists);
      if (!is_trace_name(r.trace) || (exists && !S_ISREG(trace.st_mode))) {
        refuse(dir_, fmt::format("its index names {} as rank {}'s trace, which is not a file loupe wrote",
                                 printable(r.trace, kTextNameLimit), r.rank));
      }
      job_files.insert(r.trace);
    }
    generation_ = old_->generation + 1;
  }
  std::vector<std::string> leftovers;
  for (const std::string& name : entries_of(dir_)) {
    if (name == kJobIndexName || job_files.count(name) != 0) continue;
    bool exists = false;
    struct stat entry = lstat_of(dir_ + "/" + name, &exists);
    if (!exists) continue;
    if (!is_written_name(name) || !S_ISREG(entry.st_mode)) {
      refuse(dir_, fmt::format("it holds {}, which is not part of a job", printable(name, kTextNameLimit)));
    }
    leftovers.push_back(name);
  }
  // No writer holds the lock: these are a dead writer's.
  for (const std::string& name : leftovers) ::unlink((dir_ + "/" + name).c_str());
}

JobWrite::~JobWrite() {
  if (!committed_) {
    for (const std::string& name : written_) remove_with_sidecars(dir_ + "/" + name);
  }
  guards_.clear();
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

std::string JobWrite::trace_name(int64_t rank) const { return fmt::format("rank-{:05}.g{}.db", rank, generation_); }

std::string JobWrite::staging_name(size_t n) const { return fmt::format("stage-{}.g{}.db", n, generation_); }

std::string JobWrite::add_file(const std::string& name) {
  std::string path = dir_ + "/" + name;
  std::lock_guard lock(mu_);
  written_.push_back(name);
  guards_.emplace_back(path);
  return path;
}

void JobWrite::rename(const std::string& from, const std::string& to) {
  std::string target = add_file(to);
  std::string source = dir_ + "/" + from;
  // RENAME_NOREPLACE: whatever is at the target stays, and this fails. A
  // file system without it gets a hard link, which never replaces either.
  int rc = ::renameat2(AT_FDCWD, source.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE);
  if (rc != 0 && (errno == EINVAL || errno == ENOSYS)) {
    rc = ::link(source.c_str(), target.c_str());
    if (rc == 0) ::unlink(source.c_str());
  }
  if (rc != 0) throw FileError(fmt::format("{}: cannot write: {}", printable(target), std::strerror(errno)));
}

void JobWrite::commit(Job& job) {
  job.dir = dir_;
  job.generation = generation_;
  job.missing = missing_ranks(job);
  std::string text = job_index_text(job);
  // What a reader would refuse is never written.
  Job read_back = parse_job_index(text, dir_);
  check_traces(read_back);
  OutputFile out(index_path(dir_), {}, OutputLink::refuse);
  if (std::fwrite(text.data(), 1, text.size(), out.stream()) != text.size()) {
    throw FileError(fmt::format("{}: cannot write: {}", printable(index_path(dir_)), std::strerror(errno)));
  }
  out.commit();
  committed_ = true;
  remove_unkept(job);
}

// What this write made that the new job does not keep (the staging file
// of a source that failed) and, the old job's traces (every one, as
// names are new each generation).
void JobWrite::remove_unkept(const Job& job) {
  std::set<std::string> kept;
  for (const JobRank& r : job.ranks) kept.insert(r.trace);
  for (const std::string& name : written_) {
    if (kept.count(name) == 0) remove_with_sidecars(dir_ + "/" + name);
  }
  if (old_) {
    for (const JobRank& r : old_->ranks) {
      if (kept.count(r.trace) == 0) remove_with_sidecars(old_->trace_path(r));
    }
  }
  ::fsync(lock_fd_);  // the removals survive a power loss
}

}  // namespace loupe::prof
