// What a path that is not a regular file is, for the messages of the input
// and output gates.
#pragma once

#include <sys/stat.h>

#include <string_view>

namespace loupe::prof::files {

inline std::string_view file_kind(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (a pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "a special file";
}

}  // namespace loupe::prof::files
