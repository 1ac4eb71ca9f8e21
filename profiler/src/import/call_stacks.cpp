#include "import/call_stacks.h"

#include <fmt/format.h>

namespace loupe::prof::import {

uint32_t CallStacks::site_of(const std::vector<PythonFrame>& stack) {
  uint32_t site = 0;
  for (auto f = stack.rbegin(); f != stack.rend(); ++f) {
    std::string key = fmt::format("{}\n{}\n{}\n{}", f->file, f->line, f->function, site);
    auto [it, added] = ids_.emplace(std::move(key), uint32_t(out_.size() + 1));
    if (added) {
      // A caller is interned first, so its id is the smaller, as the
      // format asks of a parent.
      out_.push_back({.id = it->second,
                      .file = strings_.intern(f->file),
                      .line = f->line,
                      .function = strings_.intern(f->function),
                      .parent = site});
    }
    site = it->second;
  }
  return site;
}

}  // namespace loupe::prof::import
