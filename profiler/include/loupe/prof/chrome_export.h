// Exports a trace as Chrome Trace Event JSON, which Perfetto and
// chrome://tracing open: one process per device with a thread per stream,
// the program's host threads with their nested spans, flows from launches
// to the device operations they started, memory and counters as counter
// tracks, and recompiles as instant events. Times are microseconds with
// nanosecond precision (three decimals), as the format expects.
#pragma once

#include <cstdio>
#include <string>

#include "loupe/prof/trace_model.h"

namespace loupe::prof {

struct ChromeExportStats {
  uint64_t events = 0;  // JSON events written
};

// Writes to `out` as it goes (constant memory); throws std::runtime_error
// if the stream cannot be written.
ChromeExportStats export_chrome_trace(const TraceModel& model, std::FILE* out);

}  // namespace loupe::prof
