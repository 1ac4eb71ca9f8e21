#include "import/imported_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "loupe/prof/import.h"
#include "loupe/prof/trace_format.h"
#include "loupe/prof/trace_model.h"

namespace loupe::prof::import {

void assign_depths(std::vector<HostSpanRow>& spans) {
  std::vector<uint32_t> order(spans.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const HostSpanRow &x = spans[a], &y = spans[b];
    if (x.thread != y.thread) return x.thread < y.thread;
    if (x.start != y.start) return x.start < y.start;
    if (x.dur != y.dur) return x.dur > y.dur;
    return a < b;
  });
  std::vector<int64_t> open_ends;  // ends of the enclosing spans, innermost last
  uint32_t thread = std::numeric_limits<uint32_t>::max();
  for (uint32_t i : order) {
    HostSpanRow& s = spans[i];
    if (s.thread != thread) {
      open_ends.clear();
      thread = s.thread;
    }
    while (!open_ends.empty() && open_ends.back() <= s.start) open_ends.pop_back();
    s.depth = uint32_t(open_ends.size());
    open_ends.push_back(s.start + s.dur);
  }
}

namespace {

constexpr uint64_t kRowsPerCommit = uint64_t(1) << 18;

// Calls f(rows, table name) for each event table of the trace, in the
// order the file lists them.
template <typename F>
void for_each_table(ImportedTrace& t, F&& f) {
#define LOUPE_VISIT_TABLE(Row, Track, table, member) f(t.member, #table);
  LOUPE_EVENT_TABLES(LOUPE_VISIT_TABLE)
#undef LOUPE_VISIT_TABLE
}

// The time a row is placed at: its start, or its instant.
template <typename Row>
int64_t& time_of(Row& r) {
  if constexpr (requires { r.dur; }) return r.start;
  else return r.time;
}

// The pool's strings in the order of their ids. The writer numbers strings
// in the order it first sees them, from its own empty string at id 0, so
// each keeps its id and the rows need no renumbering.
void copy_strings(const StringPool& strings, TraceWriter& w) {
  for (StringId id = 1; id < strings.size(); ++id) {
    if (w.intern(strings.text(id)) != id) {
      throw std::logic_error(fmt::format("imported string {} got another id in the trace", id));
    }
  }
}

void copy_strings(const StringPool& strings, ModelBuilder& b) {
  std::vector<std::string> texts;
  texts.reserve(strings.size());
  texts.emplace_back();
  for (StringId id = 1; id < strings.size(); ++id) texts.emplace_back(strings.text(id));
  b.set_strings(std::move(texts));
}

// Adds every row of `rows` (shifted by `origin`) and frees the vector.
template <typename Sink, typename Row>
uint64_t add_all(Sink& w, std::vector<Row>& rows, int64_t origin) {
  uint64_t n = rows.size();
  for (Row& row : rows) {
    time_of(row) -= origin;
    if constexpr (requires { row.issued; }) {
      // A collective's issue time is a time too; one too far from the
      // origin to shift (a damaged source) becomes its start.
      if (__builtin_sub_overflow(row.issued, origin, &row.issued) || !is_trace_time(row.issued)) {
        row.issued = time_of(row);
      }
    }
    if constexpr (requires { row.recorded_at; }) {
      // The time an awaited event was recorded: unknown stays unknown.
      if (!is_trace_time(row.recorded_at) || !is_trace_time(row.recorded_at - origin)) {
        row.recorded_at = kUnknownTime;
      } else {
        row.recorded_at -= origin;
      }
    }
    w.add(std::move(row));
    if constexpr (requires { w.commit(); }) {
      if (w.staged() >= kRowsPerCommit) w.commit();
    }
  }
  std::vector<Row>().swap(rows);
  return n;
}

// The last time of a row: its end, or its instant.
template <typename Row>
bool ends_within(const Row& r, int64_t origin) {
  int64_t end = 0;
  if constexpr (requires { r.dur; }) {
    if (__builtin_add_overflow(r.start, r.dur, &end)) return false;
  } else {
    end = r.time;
  }
  // Source times lie within +-2^62 ns, so this difference cannot overflow.
  return is_trace_time(end) && end - origin < kMaxTraceTimeNs;
}

// Leaves out the rows that would end 2^62 ns or more after the origin
// (only a damaged source has such a spread); returns how many.
template <typename Row>
uint64_t drop_beyond(std::vector<Row>& rows, int64_t origin) {
  return uint64_t(std::erase_if(rows, [&](const Row& r) { return !ends_within(r, origin); }));
}

// Whether each of a row's count columns (byte counts, phase times:
// trace_tables.h) lies in [0, 2^60), as the reader requires of every value
// of such a column.
template <typename Row>
bool counts_in_range(const Row& r) {
  bool ok = true;
  for_each_count_column<Row>(
      [&](const char*, auto member) { ok = ok && int64_t(r.*member) >= 0 && int64_t(r.*member) < kMaxTableTotal; });
  return ok;
}

// Why the reader would refuse a row (docs/trace-format.md, "What a reader
// checks"), or nullptr: such rows are left out and counted, so that loupe
// never writes a trace it refuses to read.
template <typename Row>
const char* unreadable(const Row& r) {
  if constexpr (requires { r.dur; }) {
    if (r.dur < 0) return "events with a negative duration";
  }
  if (!counts_in_range(r)) {
    if constexpr (requires { r.in_bytes; }) return "collectives with a message size of 2^60 bytes or more";
    else if constexpr (requires { r.trace_ns; }) return "compiles with a phase time outside 0 to 2^60 ns";
    else return "events with a byte count outside 0 to 2^60";
  }
  if constexpr (requires { r.allocated; }) {
    if (r.allocated < 0 || r.allocated >= kMaxTableTotal || r.reserved < 0 || r.reserved >= kMaxTableTotal) {
      return "memory events with totals outside 0 to 2^60 bytes";
    }
  }
  if constexpr (requires { r.value; }) {
    if (!std::isfinite(r.value)) return "counter values that are not finite";
  }
  return nullptr;
}

template <typename Row>
void drop_unreadable(std::vector<Row>& rows, std::map<std::string, uint64_t>& skipped) {
  std::erase_if(rows, [&](const Row& r) {
    const char* why = unreadable(r);
    if (why != nullptr) ++skipped[why];
    return why != nullptr;
  });
}

// A table whose durations or count columns (byte counts, phase times)
// add up to 2^60 or more is not a real trace (trace_format.h): the import
// fails rather than write what the reader refuses.
template <typename Row>
void check_totals(const std::vector<Row>& rows, const char* table) {
  for_each_totalled_column<Row>([&](const char* column, auto member) {
    int64_t total = 0;
    for (const Row& r : rows) {
      if (!add_to_table_total(total, int64_t(r.*member))) {
        throw ImportError(
            fmt::format("the {} of the source's {} add up to 2^60 or more (36 years, or an exbibyte): not a real trace",
                        column, table));
      }
    }
  });
}

// Hands the trace's rows to `w` (a TraceWriter or a ModelBuilder), with
// what write_imported() says it sets.
template <typename Sink>
WriteSummary put_imported(ImportedTrace& t, const StringPool& strings, Sink& w) {
  copy_strings(strings, w);
  // The origin: the earliest time of any event.
  int64_t origin = std::numeric_limits<int64_t>::max();
  for_each_table(t, [&](auto& rows, const char*) {
    for (auto& r : rows) origin = std::min(origin, time_of(r));
  });
  if (origin == std::numeric_limits<int64_t>::max()) origin = 0;
  uint64_t beyond = 0;
  for_each_table(t, [&](auto& rows, const char*) { beyond += drop_beyond(rows, origin); });
  if (beyond > 0) t.skipped[kTimeOutOfRange] += beyond;
  for_each_table(t, [&](auto& rows, const char*) { drop_unreadable(rows, t.skipped); });
  for_each_table(t, [&](auto& rows, const char* table) { check_totals(rows, table); });

  for (const DeviceRow& d : t.devices) w.put(d);
  for (const StreamRow& s : t.streams) w.put(s);
  for (const ThreadRow& th : t.threads) w.put(th);
  for (const CallSiteRow& c : t.callsites) w.put(c);

  WriteSummary s;
  for_each_table(t, [&](auto& rows, const char* table) { s.rows_by_table[table] = add_all(w, rows, origin); });
  for (const auto& [table, n] : s.rows_by_table) s.rows += n;

  std::string detail;
  for (const auto& [why, n] : t.skipped) {
    if (n == 0) continue;
    s.skipped += n;
    detail += fmt::format("{}{}: {}", detail.empty() ? "" : "; ", why, n);
  }
  w.set_meta("status", "imported");
  w.set_meta("skipped_events", std::to_string(s.skipped));
  if (!detail.empty()) w.set_meta("skipped_detail", detail);
  w.set_meta("source_events", std::to_string(t.source_events));
  // A source's wall clock so far off that the origin cannot be placed on it
  // (an nsys utcEpochNs of 2^63 - 1) is no wall clock: unknown, 0.
  int64_t origin_wall = 0;
  if (t.wall_clock_known && __builtin_add_overflow(t.wall_ns_at_zero, origin, &origin_wall)) origin_wall = 0;
  w.set_meta("origin_wall_ns", std::to_string(origin_wall));
  w.set_meta("origin_monotonic_ns", "0");
  w.set_meta("source_origin_ns", std::to_string(origin));
  for (const auto& [key, value] : t.meta) w.set_meta(key, value);
  return s;
}

}  // namespace

WriteSummary write_imported(ImportedTrace& t, const StringPool& strings, TraceWriter& w) {
  WriteSummary s = put_imported(t, strings, w);
  w.close();
  return s;
}

TraceModel build_imported(ImportedTrace& t, const StringPool& strings, ModelBuilder& b, WriteSummary& summary) {
  summary = put_imported(t, strings, b);
  return b.finish();
}

}  // namespace loupe::prof::import
