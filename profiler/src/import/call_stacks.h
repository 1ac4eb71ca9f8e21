// Python stacks of an imported trace as a tree of call sites, as the
// trace keeps them (a call site is a frame under its caller's call site):
// for the formats whose events carry whole stacks (PyTorch memory
// snapshots, pprof profiles).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "import/string_pool.h"
#include "loupe/prof/python_frames.h"
#include "loupe/prof/trace_rows.h"

namespace loupe::prof::import {

class CallStacks {
 public:
  // The frames nearest the user's code kept of a deeper stack.
  static constexpr size_t kMaxFrames = 64;

  CallStacks(StringPool& strings, std::vector<CallSiteRow>& out) : strings_(strings), out_(out) {}

  // Adds the next frame of a stack being read innermost first: frames of
  // Python and of libraries before the innermost one of the user's code
  // are left out, and those past kMaxFrames.
  static void keep(std::vector<PythonFrame>& stack, const PythonFrame& f) {
    if (stack.size() < kMaxFrames && (!stack.empty() || !is_library_file(f.file))) stack.push_back(f);
  }
  // The call site of a stack so kept (innermost first): each frame interned
  // under its caller's call site, outermost first; 0 for an empty stack.
  uint32_t site_of(const std::vector<PythonFrame>& stack);

 private:
  StringPool& strings_;
  std::vector<CallSiteRow>& out_;
  std::unordered_map<std::string, uint32_t> ids_;  // file, line, function, parent -> call site
};

}  // namespace loupe::prof::import
