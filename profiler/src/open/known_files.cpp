#include "open/known_files.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string_view>

#include "loupe/prof/open_input.h"

namespace loupe::prof::open {

namespace {

struct KnownFile {
  std::string_view suffix;  // the file name's ending, lower case ("" when known by its bytes)
  std::string_view magic;   // its first bytes ("" when known by its name)
  std::string_view what;
  std::string_view to_do;  // {} is the path
};

constexpr KnownFile kKnownFiles[] = {
    {".nsys-rep", "", "an Nsight Systems report (.nsys-rep)",
     "export it with `nsys export --type sqlite --output report.sqlite {}` first, then open report.sqlite"},
    {".qdrep", "", "an Nsight Systems report (.qdrep)",
     "export it with `nsys export --type sqlite --output report.sqlite {}` first, then open report.sqlite"},
    {".ncu-rep", "", "an Nsight Compute report (.ncu-rep)",
     "loupe reads timelines: profile the run with Nsight Systems (`nsys profile`), PyTorch's or JAX's profiler"},
    {".pftrace", "", "a Perfetto protobuf trace",
     "loupe reads JSON traces: convert it with Perfetto's `traceconv json {} trace.json`"},
    {".perfetto-trace", "", "a Perfetto protobuf trace",
     "loupe reads JSON traces: convert it with Perfetto's `traceconv json {} trace.json`"},
    {".pt", "", "a PyTorch file saved by torch.save (a model or tensors), not a trace",
     "record a trace with torch.profiler (export_chrome_trace) or `loupe capture -- python ...`"},
    {".pth", "", "a PyTorch file saved by torch.save (a model or tensors), not a trace",
     "record a trace with torch.profiler (export_chrome_trace) or `loupe capture -- python ...`"},
    {"",
     "\x7f"
     "ELF",
     "a program, not a trace", "record what it does with `loupe record -o trace.db -- {}`"},
    {"", "PK\x03\x04", "a zip archive", "unpack it and open the trace inside"},
};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return out;
}

}  // namespace

void refuse_known_non_trace(const std::string& path, const std::string& head) {
  std::string name = lower(path);
  for (const KnownFile& k : kKnownFiles) {
    bool by_name = !k.suffix.empty() && name.ends_with(k.suffix);
    bool by_bytes = !k.magic.empty() && std::string_view(head).starts_with(k.magic);
    if (by_name || by_bytes) {
      throw InputError(fmt::format("{}: {}; {}", path, k.what, fmt::format(fmt::runtime(k.to_do), path)));
    }
  }
}

}  // namespace loupe::prof::open
