// Python frames as the profilers name them ("train.py(12): step"), and
// which files are the user's code rather than Python's or a framework's:
// the call site an engineer edits is the innermost frame in a user file.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace loupe::prof {

// Whether `name` is a Python frame named "FILE.py(LINE): FUNCTION".
bool is_python_frame(std::string_view name);

// A Python frame's parts; nullopt for a name that is not one.
struct PythonFrame {
  std::string_view file;
  uint32_t line = 0;
  std::string_view function;
};
std::optional<PythonFrame> parse_python_frame(std::string_view name);

// Whether a file (a path, or a frame's name, which begins with its path)
// belongs to Python itself or to a library (torch/, site-packages/, ...),
// or is no file at all ("<string>", "<frozen ...>"), not the user's program.
bool is_library_file(std::string_view path);

}  // namespace loupe::prof
