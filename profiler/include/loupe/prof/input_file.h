// The one gate every file loupe reads passes first: traces, budgets, the
// inputs of an import. Only a regular file (or a symbolic link to one) is
// read. A FIFO would block open() until a writer came, a device can yield
// bytes forever, and a directory is a mistake; each is refused at once
// with a message naming the file and what it is.
#pragma once

#include <stdexcept>
#include <string>

namespace loupe::prof {

// A file that cannot be read or written as asked; the message names it.
class FileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Opens `path` for reading without ever blocking (O_NONBLOCK, then fstat)
// and returns the descriptor, close-on-exec and back in blocking mode; the
// caller closes it. Throws FileError ("PATH: is a FIFO (a pipe), not a
// regular file...", "PATH: cannot open: No such file or directory").
int open_input_file(const std::string& path);

// open_input_file for a reader with an error class of its own (TraceError,
// ImportError, BudgetError): the FileError's message, thrown as `Error`.
template <typename Error>
int open_input_file_or_throw(const std::string& path) {
  try {
    return open_input_file(path);
  } catch (const FileError& e) {
    throw Error(e.what());
  }
}

// The same check for readers that open the file themselves (SQLite): opens
// it as above, and closes it again.
void check_input_file(const std::string& path);

// The whole of a small text file (a budget, a job's index), opened as
// above. Throws FileError for a file that cannot be read or holds more
// than `max_bytes` ("PATH: larger than 1.0 MiB, too large for a budget
// file", with `what` = "a budget file").
std::string read_small_input_file(const std::string& path, size_t max_bytes, const std::string& what);

// read_small_input_file for a reader with an error class of its own.
template <typename Error>
std::string read_small_input_file_or_throw(const std::string& path, size_t max_bytes, const std::string& what) {
  try {
    return read_small_input_file(path, max_bytes, what);
  } catch (const FileError& e) {
    throw Error(e.what());
  }
}

}  // namespace loupe::prof
