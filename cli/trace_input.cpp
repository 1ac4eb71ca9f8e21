#include "trace_input.h"

#include <fmt/format.h>

#include "loupe/prof/safe_text.h"

namespace loupe::cli {

void add_input_options(CLI::App& cmd, InputArgs& args) {
  cmd.add_flag("--no-cache", args.no_cache,
               "read another profiler's trace without the cache of imported traces (LOUPE_CACHE_DIR; "
               "docs/import.md)");
}

ReadInput::ReadInput(const std::string& path, const InputArgs& args, unsigned threads)
    : in_(prof::open_input(path, {.use_cache = !args.no_cache, .threads = threads})) {
  for (const std::string& note : in_.plan.notes) fmt::print(stderr, "loupe: {}\n", prof::printable(note));
}

ReadInput::~ReadInput() {
  std::string why = in_.wait_for_cache();
  if (!why.empty()) {
    fmt::print(stderr, "loupe: the trace was read, but its copy in the cache could not be written: {}\n",
               prof::printable(why));
  }
}

}  // namespace loupe::cli
