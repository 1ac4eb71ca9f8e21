// The input of the commands that read a trace (analyze, summary, check,
// diff, export, info): any file or folder open_input.h reads, with the
// option they share.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "loupe/prof/open_input.h"

namespace loupe::cli {

// What the FILE argument of a reading command takes, for its help.
inline constexpr const char* kTraceInputHelp =
    "a trace: loupe's, PyTorch/Kineto, JAX or Chrome JSON (.json, .json.gz), an Nsight Systems SQLite export, "
    "a PyTorch memory snapshot, a pprof memory profile, a JAX profile folder, or a job's folder";

struct InputArgs {
  bool no_cache = false;
};

void add_input_options(CLI::App& cmd, InputArgs& args);

// An opened input that, when it goes, waits for the cache's copy of the
// trace and says on stderr if it could not be kept.
class ReadInput {
 public:
  // `threads`: as InputOptions::threads.
  ReadInput(const std::string& path, const InputArgs& args, unsigned threads = 0);
  ~ReadInput();
  ReadInput(const ReadInput&) = delete;
  ReadInput& operator=(const ReadInput&) = delete;

  prof::OpenedInput& operator*() { return in_; }
  prof::OpenedInput* operator->() { return &in_; }
  const prof::TraceModel& model() const { return *in_.model; }

 private:
  prof::OpenedInput in_;
};

}  // namespace loupe::cli
