#include "loupe/prof/output_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "files/file_kind.h"

namespace loupe::prof {

namespace {

// SQLite's files beside a database, which belong to the content they sit
// beside: a stale -wal or hot -journal would be applied to a new file of
// the same name and corrupt it.
constexpr const char* kSidecars[] = {"-wal", "-shm", "-journal"};

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw FileError(fmt::format("{}: {}", path, what));
}

std::string folder_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The file an output path names, symbolic links resolved, and whether it
// exists; throws FileError if it exists and is not a regular file.
struct Target {
  std::string path;
  bool exists = false;
  struct stat st {};
};

Target resolve(const std::string& path, OutputLink link) {
  if (path.empty()) fail("''", "is no file name; name the file to write");
  Target t{path};
  struct stat link_st {};
  if (::lstat(path.c_str(), &link_st) != 0) {
    if (errno != ENOENT) fail(path, fmt::format("cannot write: {}", std::strerror(errno)));
    struct stat folder {};
    std::string dir = folder_of(path);
    if (::stat(dir.c_str(), &folder) != 0 || !S_ISDIR(folder.st_mode)) {
      fail(path, fmt::format("the folder {} does not exist", dir));
    }
    return t;  // a new file
  }
  t.st = link_st;
  if (S_ISLNK(link_st.st_mode) && link == OutputLink::refuse) {
    fail(path, "is a symbolic link; loupe does not write through one here");
  }
  if (S_ISLNK(link_st.st_mode)) {
    if (::stat(path.c_str(), &t.st) != 0) fail(path, "is a symbolic link to a file that does not exist");
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved) == nullptr)
      fail(path, fmt::format("cannot write: {}", std::strerror(errno)));
    t.path = resolved;
  }
  if (!S_ISREG(t.st.st_mode)) {
    fail(path,
         fmt::format("is {}, not a regular file; loupe writes only regular files", files::file_kind(t.st.st_mode)));
  }
  t.exists = true;
  return t;
}

void check_not_an_input(const std::string& path, const Target& t, const std::vector<std::string>& inputs) {
  if (!t.exists) return;
  for (const std::string& input : inputs) {
    struct stat in {};
    if (::stat(input.c_str(), &in) == 0 && in.st_dev == t.st.st_dev && in.st_ino == t.st.st_ino) {
      fail(path, fmt::format("is the same file as the input {}; write the output elsewhere", input));
    }
  }
}

// The paths removed on a signal. A signal handler may only read memory
// and call async-signal-safe functions (unlink), so each slot is a fixed
// buffer of atomic characters, and a sequence number, odd while a guard
// writes or clears the slot, tells the handler whether what it copied is
// whole: it removes a path only if the number was the same, even, before
// and after the copy.
constexpr size_t kGuardSlots = 64;
constexpr size_t kGuardPathMax = 4096;
struct GuardSlot {
  std::atomic<bool> taken{false};
  std::atomic<uint32_t> sequence{0};
  std::atomic<bool> live{false};
  std::atomic<char> path[kGuardPathMax];
};
GuardSlot g_guards[kGuardSlots];

// Removes a guarded path and its SQLite files; from a signal handler.
void remove_guarded(GuardSlot& slot) {
  uint32_t before = slot.sequence.load(std::memory_order_acquire);
  if ((before & 1) != 0 || !slot.live.load(std::memory_order_acquire)) return;
  char path[kGuardPathMax + 16];
  size_t n = 0;
  for (; n < kGuardPathMax && (path[n] = slot.path[n].load(std::memory_order_relaxed)) != '\0'; ++n) {
  }
  if (n == kGuardPathMax || slot.sequence.load(std::memory_order_acquire) != before) return;
  ::unlink(path);
  for (const char* s : kSidecars) {
    size_t k = 0;
    for (; s[k] != '\0'; ++k) path[n + k] = s[k];
    path[n + k] = '\0';
    ::unlink(path);
  }
}

constexpr int kCleanedSignals[] = {SIGINT, SIGTERM, SIGHUP};

void remove_and_die(int sig) {
  for (GuardSlot& slot : g_guards) remove_guarded(slot);
  // The handler was reset to the default on entry (SA_RESETHAND) and the
  // signal is not blocked in it (SA_NODEFER): this ends the process as
  // the signal would have.
  ::raise(sig);
}

}  // namespace

void remove_with_sidecars(const std::string& path) {
  ::unlink(path.c_str());
  for (const char* s : kSidecars) ::unlink((path + s).c_str());
}

void remove_temporaries_on_signal() {
  for (int sig : kCleanedSignals) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_IGN) continue;
    struct sigaction sa {};
    sa.sa_handler = remove_and_die;
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

RemovedOnSignal::RemovedOnSignal(const std::string& path) {
  if (path.size() >= kGuardPathMax) return;
  for (size_t i = 0; i < kGuardSlots; ++i) {
    bool free = false;
    if (!g_guards[i].taken.compare_exchange_strong(free, true)) continue;
    GuardSlot& slot = g_guards[i];
    slot.sequence.fetch_add(1, std::memory_order_acq_rel);
    for (size_t k = 0; k < path.size(); ++k) slot.path[k].store(path[k], std::memory_order_relaxed);
    slot.path[path.size()].store('\0', std::memory_order_relaxed);
    slot.live.store(true, std::memory_order_release);
    slot.sequence.fetch_add(1, std::memory_order_acq_rel);
    slot_ = int(i);
    return;
  }
}

RemovedOnSignal::~RemovedOnSignal() {
  if (slot_ < 0) return;
  GuardSlot& slot = g_guards[slot_];
  slot.sequence.fetch_add(1, std::memory_order_acq_rel);
  slot.live.store(false, std::memory_order_release);
  slot.sequence.fetch_add(1, std::memory_order_acq_rel);
  slot.taken.store(false, std::memory_order_release);
}

void check_output_path(const std::string& path, const std::vector<std::string>& inputs) {
  check_not_an_input(path, resolve(path, OutputLink::write_through), inputs);
}

OutputFile::OutputFile(const std::string& path, const std::vector<std::string>& inputs, OutputLink link)
    : path_(path), inputs_(inputs), link_(link) {
  Target t = resolve(path, link);
  check_not_an_input(path, t, inputs);
  target_ = t.path;
  // A name of our own beside the target: same folder, so the final rename
  // is atomic; O_EXCL, so nothing that exists is ever opened.
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0;; ++attempt) {
    temp_ = fmt::format("{}.loupe-tmp-{}-{}", target_, ::getpid(), counter.fetch_add(1));
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0) break;
    if (errno != EEXIST || attempt > 100)
      fail(path, fmt::format("cannot create a file beside it: {}", std::strerror(errno)));
  }
  guard_.emplace(temp_);
  // A replaced file keeps its permissions.
  if (t.exists) ::fchmod(fd_, t.st.st_mode & 07777);
}

OutputFile::~OutputFile() {
  if (stream_ != nullptr) {
    std::fclose(stream_);
  } else if (fd_ >= 0) {
    ::close(fd_);
  }
  if (!committed_) remove_with_sidecars(temp_);
}

std::FILE* OutputFile::stream() {
  if (stream_ == nullptr) {
    stream_ = ::fdopen(fd_, "wb");
    if (stream_ == nullptr) fail(path_, fmt::format("cannot write: {}", std::strerror(errno)));
  }
  return stream_;
}

void OutputFile::commit() {
  auto write_error = [&](int err) { fail(path_, fmt::format("cannot write: {}", std::strerror(err))); };
  if (stream_ != nullptr && (std::fflush(stream_) != 0 || std::ferror(stream_))) write_error(errno ? errno : EIO);
  if (::fsync(fd_) != 0) write_error(errno);
  int closed = stream_ != nullptr ? std::fclose(stream_) : ::close(fd_);
  stream_ = nullptr;
  fd_ = -1;
  if (closed != 0) write_error(errno);

  // The target may have changed since the constructor looked at it.
  Target t = resolve(path_, link_);
  check_not_an_input(path_, t, inputs_);
  // The old content's SQLite files are moved aside first (a reader never
  // sees the new file with them), and removed once the new file is in.
  std::vector<std::pair<std::string, std::string>> moved;  // (where it was, where it is)
  for (const char* s : kSidecars) {
    std::string old = target_ + s, aside = temp_ + "-old" + s;
    if (::rename(old.c_str(), aside.c_str()) == 0) moved.push_back({old, aside});
  }
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    int err = errno;
    for (const auto& [old, aside] : moved) ::rename(aside.c_str(), old.c_str());
    write_error(err);
  }
  committed_ = true;
  guard_.reset();
  for (const auto& [old, aside] : moved) ::unlink(aside.c_str());
  int dir = ::open(folder_of(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);  // the rename itself survives a power loss
    ::close(dir);
  }
}

}  // namespace loupe::prof
