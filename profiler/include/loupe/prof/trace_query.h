// Read-only SQL over a trace file, and the summary `loupe info` prints.
// Both open the file through the same defensive gate as load_trace().
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "loupe/prof/trace_model.h"

namespace loupe::prof {

using QueryRow = std::vector<std::optional<std::string>>;  // nullopt is NULL

// How long a query may run inside SQLite by default (time spent handing
// rows to the caller, such as a terminal that is slow to take them, does
// not count): a bound for a query that would never end (an infinite
// recursive view), long enough for any real one on a large trace.
inline constexpr double kDefaultQueryTimeoutSeconds = 300;

// Runs one read-only statement on a file that passes the same checks as
// load_trace(); `on_columns` is called once with the column names, then
// `on_row` for each row. A statement that would modify the file, is not
// valid SQL, runs longer than `timeout_seconds` (0: no limit; a century at
// most), or makes a value larger than 64 MiB raises TraceError with the
// reason.
void query_trace(const std::string& path, const std::string& sql,
                 const std::function<void(const std::vector<std::string>&)>& on_columns,
                 const std::function<void(const QueryRow&)>& on_row,
                 double timeout_seconds = kDefaultQueryTimeoutSeconds);

struct TableCount {
  std::string table;
  uint64_t rows = 0;
};

struct TraceSummary {
  TraceInfo info;
  std::vector<Device> devices;
  std::vector<Stream> streams;
  std::vector<Thread> threads;
  std::vector<TableCount> counts;  // every event table, in schema order
  int64_t start_ns = 0, end_ns = 0;
  uint64_t file_bytes = 0;
};

// Meta, devices, threads and exact row counts, without loading events.
TraceSummary summarize_trace(const std::string& path);
// The same of a model in memory (another profiler's trace, imported):
// file_bytes is 0, the caller knows what the source file holds.
TraceSummary summarize_model(const TraceModel& m);

}  // namespace loupe::prof
