#include "loupe/prof/python_frames.h"

#include <charconv>

namespace loupe::prof {

bool is_python_frame(std::string_view name) { return parse_python_frame(name).has_value(); }

std::optional<PythonFrame> parse_python_frame(std::string_view name) {
  size_t open = name.find(".py(");
  if (open == std::string_view::npos) return std::nullopt;
  size_t close = name.find("): ", open);
  if (close == std::string_view::npos || close <= open + 4) return std::nullopt;
  PythonFrame f{.file = name.substr(0, open + 3), .function = name.substr(close + 3)};
  std::string_view digits = name.substr(open + 4, close - open - 4);
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), f.line);
  if (error != std::errc() || end != digits.data() + digits.size()) f.line = 0;  // named, but no line to tell
  return f;
}

bool is_library_file(std::string_view path) {
  static constexpr std::string_view kLibraries[] = {
      "torch/",       "torchvision/", "torchaudio/",   "triton/",          "transformers/", "accelerate/", "numpy/",
      "scipy/",       "PIL/",         "pandas/",       "multiprocessing/", "concurrent/",   "importlib/",  "asyncio/",
      "threading.py", "runpy.py",     "contextlib.py", "functools.py",     "selectors.py",  "queue.py",    "socket.py"};
  if (path.starts_with("<") || path.find("site-packages/") != std::string_view::npos ||
      path.find("dist-packages/") != std::string_view::npos || path.find("/lib/python") != std::string_view::npos) {
    return true;
  }
  for (std::string_view lib : kLibraries) {
    if (path.starts_with(lib)) return true;
  }
  return false;
}

}  // namespace loupe::prof
