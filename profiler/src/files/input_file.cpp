#include "loupe/prof/input_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace loupe::prof {

namespace {

// What a file that is not a regular file is, for the message.
std::string not_regular(mode_t mode) {
  if (S_ISDIR(mode)) return "is a directory, not a regular file";
  if (S_ISFIFO(mode)) {
    return "is a FIFO (a pipe), not a regular file; loupe reads a file it can seek in: save it to a file first";
  }
  if (S_ISCHR(mode)) return "is a character device, not a regular file";
  if (S_ISBLK(mode)) return "is a block device, not a regular file";
  if (S_ISSOCK(mode)) return "is a socket, not a regular file";
  return "is not a regular file";
}

}  // namespace

int open_input_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading returns at once instead of
  // waiting for a writer; fstat then says what it is.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) throw FileError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  struct stat st{};
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

}  // namespace loupe::prof
