// One plain struct per table row of the trace file, as the writer takes
// them; the event tables' rows follow from trace_tables.h. Times are
// nanoseconds since the trace's origin (meta origin_*); names are string
// ids from TraceWriter::intern(). docs/trace-format.md describes each
// column.
#pragma once

#include <cstdint>
#include <string>

#include "loupe/prof/trace_format.h"
#include "loupe/prof/trace_tables.h"

namespace loupe::prof {

using StringId = uint32_t;

struct DeviceRow {
  uint32_t id = 0;
  std::string name;
  DeviceKind kind = DeviceKind::cpu;
  int64_t memory_capacity = 0;
  int64_t copy_bandwidth = 0;
  std::string detail;  // what runs its kernels ("OpenBLAS 0.3.21, SkylakeX kernels (...)"); "" unknown
  bool operator==(const DeviceRow&) const = default;
};

struct StreamRow {
  uint32_t device = 0, stream = 0;
  std::string name;
  bool operator==(const StreamRow&) const = default;
};

struct ThreadRow {
  uint32_t id = 0;
  int64_t process = 0;  // OS process id
  int64_t os_tid = 0;   // OS thread id
  std::string name;
  uint64_t dropped_events = 0;
  bool operator==(const ThreadRow&) const = default;
};

// A frame and the call site it was called from: the rows make a tree, and
// following `parent` from an event's call site gives its whole stack,
// innermost frame first (Perfetto's callsites, with the frame in the row).
struct CallSiteRow {
  uint32_t id = 0;  // > 0
  StringId file = 0;
  uint32_t line = 0;
  StringId function = 0;
  uint32_t parent = 0;  // the caller's call site; 0 for the outermost frame or one recorded alone
  bool operator==(const CallSiteRow&) const = default;
};

// The event rows, one struct per table of trace_tables.h, fields in its
// column order (without `id`): HostSpanRow, InstantRow, CounterRow,
// DeviceOpRow, LaunchRow, TransferRow, MemoryEventRow, CompileRow, StepRow,
// CollectiveRow, SyncRow.
#define LOUPE_ROW_FIELD(name, type, check, init) type name = init;
#define LOUPE_ROW_SPAN(start, dur) int64_t start = 0, dur = 0;
#define LOUPE_ROW_POINT(time) int64_t time = 0;
#define LOUPE_ROW_STRUCT(Row, Track, table, member)                                          \
  struct Row {                                                                               \
    LOUPE_COLUMNS_##table(LOUPE_ROW_FIELD, LOUPE_ROW_SPAN, LOUPE_ROW_POINT, LOUPE_ROW_FIELD) \
  };
LOUPE_EVENT_TABLES(LOUPE_ROW_STRUCT)
#undef LOUPE_ROW_STRUCT
#undef LOUPE_ROW_POINT
#undef LOUPE_ROW_SPAN
#undef LOUPE_ROW_FIELD

}  // namespace loupe::prof
