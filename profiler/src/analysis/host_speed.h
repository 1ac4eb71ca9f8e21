// How fast the host ran the framework's bookkeeping: the ops that only
// describe a tensor (aten::view, aten::as_strided, aten::t, aten::empty...)
// do the same few microseconds of work in every program, whatever the model
// or the data, so their durations measure the host itself. When they all
// run many times slower than in a typical profiled run, every op on that
// host is slow (CPU contention, a frequency cap, profiler overhead), and
// the host work the device waited on is no one op's fault.
#pragma once

#include <cstdint>
#include <string>

#include "loupe/prof/trace_model.h"

namespace loupe::prof::analysis {

struct HostSpeed {
  bool judged = false;  // enough calls of enough bookkeeping ops to tell
  double slowdown = 0;  // median over those ops of (its median / typical)
  size_t ops = 0;       // distinct bookkeeping ops counted
  uint64_t calls = 0;   // their calls
  std::string detail;   // "aten::view median 22.6 us (typical 1.0 us), ..."
};

// Each bookkeeping op with at least 20 calls counts; three such ops are
// needed for a judgement.
HostSpeed host_speed(const TraceModel& model);

}  // namespace loupe::prof::analysis
