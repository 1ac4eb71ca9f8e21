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

// Names longer than this are cut (with "... (N bytes cut)"), so that the
// export of any trace stays within a bound of its event count: a trace
// with one 100 MB name used by a thousand kernels would otherwise export
// as 100 GB of JSON.
inline constexpr size_t kExportNameLimit = 4096;

struct ChromeExportStats {
  uint64_t events = 0;        // JSON events written
  uint64_t names_cut = 0;     // distinct names longer than kExportNameLimit
  uint64_t invalid_utf8 = 0;  // invalid UTF-8 sequences replaced by U+FFFD
};

// Writes to `out` as it goes (constant memory), as valid UTF-8 JSON;
// throws std::runtime_error naming the cause if the stream cannot be
// written.
ChromeExportStats export_chrome_trace(const TraceModel& model, std::FILE* out);

}  // namespace loupe::prof
