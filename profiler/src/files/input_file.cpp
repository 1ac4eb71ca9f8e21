#include "loupe/prof/input_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "files/file_kind.h"

namespace loupe::prof {

namespace {

std::string not_regular(mode_t mode) {
  std::string what = fmt::format("is {}, not a regular file", files::file_kind(mode));
  // A pipe is what `<(zcat trace.json.gz)` gives: say what to do instead.
  if (S_ISFIFO(mode)) what += "; loupe reads a file it can seek in: save it to a file first";
  return what;
}

}  // namespace

int open_input_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading returns at once instead of
  // waiting for a writer; fstat then says what it is.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) throw FileError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    throw FileError(fmt::format("{}: cannot open: {}", path, std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw FileError(fmt::format("{}: {}", path, not_regular(st.st_mode)));
  }
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

void check_input_file(const std::string& path) { ::close(open_input_file(path)); }

std::string read_small_input_file(const std::string& path, size_t max_bytes, const std::string& what) {
  int fd = open_input_file(path);
  std::string text;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0 && text.size() + size_t(n) > max_bytes) {
      ::close(fd);
      throw FileError(fmt::format("{}: larger than {} bytes, too large for {}", path, max_bytes, what));
    }
    if (n > 0) {
      text.append(buf, size_t(n));
    } else if (n == 0 || errno != EINTR) {
      int err = n < 0 ? errno : 0;
      ::close(fd);
      if (err != 0) throw FileError(fmt::format("{}: cannot read: {}", path, std::strerror(err)));
      return text;
    }
  }
}

}  // namespace loupe::prof
