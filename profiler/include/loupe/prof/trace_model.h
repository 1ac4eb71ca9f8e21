// TraceModel: a whole trace in memory, laid out for fast reading.
//
// Each event table is split into tracks (a host thread, a device stream, a
// device's memory, a counter); each track stores its events in columns
// (one contiguous array per field) sorted by start time, so that the events
// in a time range are found by binary search and scanned without touching
// other fields. Strings are resolved once into `strings`; rows refer to them
// by index. The analyses and the viewer both read this model.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "loupe/prof/trace_format.h"
#include "loupe/prof/trace_rows.h"

namespace loupe::prof {

// A stretch of trace time, [start, end).
struct TimeRange {
  int64_t start = 0, end = 0;
};

struct TraceInfo {
  int format_major = 0, format_minor = 0;
  std::string producer;
  std::string status;          // "complete", "recording" (never finished), ...
  int64_t origin_wall_ns = 0;  // wall-clock time (Unix epoch) at time 0
  int64_t capture_end_ns = 0;  // the last commit's time, 0 if unknown
  uint64_t dropped_events = 0;
  uint64_t lost_events = 0;
  std::map<std::string, std::string> meta;  // every meta row, as written
};

// The rows of the small tables, as written.
using Device = DeviceRow;
using Stream = StreamRow;
using Thread = ThreadRow;
using CallSite = CallSiteRow;

// A model column's element type: a flag is a byte (never vector<bool>).
template <typename T>
struct ColumnOf {
  using type = T;
};
template <>
struct ColumnOf<bool> {
  using type = uint8_t;
};

// One track struct per event table of trace_tables.h: HostSpans,
// Instants, Counter, DeviceOps, Launches, Transfers, MemoryEvents,
// Compiles, Steps, Collectives, Syncs. The key columns are the track's fields; every other
// column is an array, listed in columns() so that generic code (loading,
// merging, sizing) can visit them all. size() counts the events; a track
// of spans also has end(i).
#define LOUPE_TRACK_KEY(name, type, check, init) type name = init;
#define LOUPE_TRACK_SPAN(start, dur)           \
  std::vector<int64_t> start, dur;             \
  size_t size() const { return start.size(); } \
  int64_t end(size_t i) const { return start[i] + dur[i]; }
#define LOUPE_TRACK_POINT(time) \
  std::vector<int64_t> time;    \
  size_t size() const { return time.size(); }
#define LOUPE_TRACK_COLUMN(name, cpp_type, check, init) std::vector<ColumnOf<cpp_type>::type> name;
#define LOUPE_TIE_SPAN(start, dur) std::tie(start, dur),
#define LOUPE_TIE_POINT(time) std::tie(time),
#define LOUPE_TIE_COLUMN(name, type, check, init) std::tie(name),
#define LOUPE_TRACK_STRUCT(Row, Track, table, member)                                                                \
  struct Track {                                                                                                     \
    LOUPE_COLUMNS_##table(LOUPE_TRACK_KEY, LOUPE_TRACK_SPAN, LOUPE_TRACK_POINT, LOUPE_TRACK_COLUMN) auto columns() { \
      return std::tuple_cat(LOUPE_COLUMNS_##table(LOUPE_IGNORE, LOUPE_TIE_SPAN, LOUPE_TIE_POINT, LOUPE_TIE_COLUMN)   \
                                std::tuple<>());                                                                     \
    }                                                                                                                \
  };
LOUPE_EVENT_TABLES(LOUPE_TRACK_STRUCT)
#undef LOUPE_TRACK_STRUCT
#undef LOUPE_TIE_COLUMN
#undef LOUPE_TIE_POINT
#undef LOUPE_TIE_SPAN
#undef LOUPE_TRACK_COLUMN
#undef LOUPE_TRACK_POINT
#undef LOUPE_TRACK_SPAN
#undef LOUPE_TRACK_KEY

// Calls f(column, member) for each count column of T's table (trace_tables.h:
// byte counts, phase times), in column order. T is the table's row struct
// or its track, and member points into T, so that an importer holds the
// rows it writes to the columns the reader checks.
template <typename T, typename F>
void for_each_count_column(F&& f) {
#define LOUPE_COUNT_COLUMN(name, type, check, init)         \
  if constexpr (ColumnCheck::check == ColumnCheck::count) { \
    f(#name, &T::name);                                     \
  }
#define LOUPE_COUNT_COLUMNS(Row, Track, table, member)                                  \
  if constexpr (std::is_same_v<T, Row> || std::is_same_v<T, Track>) {                   \
    LOUPE_COLUMNS_##table(LOUPE_IGNORE, LOUPE_IGNORE, LOUPE_IGNORE, LOUPE_COUNT_COLUMN) \
  }
  LOUPE_EVENT_TABLES(LOUPE_COUNT_COLUMNS)
#undef LOUPE_COUNT_COLUMNS
#undef LOUPE_COUNT_COLUMN
}

// The columns whose values add up to less than kMaxTableTotal in a table
// (trace_format.h): a span's duration, then the count columns.
template <typename T, typename F>
void for_each_totalled_column(F&& f) {
  if constexpr (requires { &T::dur; }) f("dur", &T::dur);
  for_each_count_column<T>(f);
}

struct TraceModel {
  std::string path;
  TraceInfo info;
  std::vector<std::string> strings;  // indexed by StringId
  std::vector<Device> devices;       // sorted by id
  std::vector<Stream> streams;       // sorted by (device, stream)
  std::vector<Thread> threads;       // sorted by id
  std::vector<CallSite> callsites;   // sorted by id

  // One entry per track, sorted by the track's key; events sorted by time.
#define LOUPE_MODEL_TABLE(Row, Track, table, member) std::vector<Track> member;
  LOUPE_EVENT_TABLES(LOUPE_MODEL_TABLE)
#undef LOUPE_MODEL_TABLE

  // Earliest start and latest end over all events (0, 0 when empty).
  int64_t start_ns = 0, end_ns = 0;

  const std::string& str(StringId id) const { return strings[id]; }
  // Lookups by id; nullptr when the trace does not describe it.
  const Device* device(uint32_t id) const;
  const Thread* thread(uint32_t id) const;
  const CallSite* callsite(uint32_t id) const;
  const Stream* stream(uint32_t device, uint32_t stream) const;

  // Event counts per table, as in `loupe info`.
  uint64_t count_host_spans() const;
  uint64_t count_device_ops() const;
  uint64_t total_events() const;
  // Bytes held by the event columns and strings.
  uint64_t memory_bytes() const;
};

// The index of the first event whose start (or time) is >= t, for any
// sorted time column: the start of a visible range.
inline size_t lower_bound_time(const std::vector<int64_t>& times, int64_t t) {
  return size_t(std::lower_bound(times.begin(), times.end(), t) - times.begin());
}

}  // namespace loupe::prof
