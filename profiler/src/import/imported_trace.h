// What every importer builds before anything is written: the loupe rows of
// the whole trace, with times still on the source's clock (nanoseconds).
// write_imported() then picks the origin (the earliest event), shifts all
// times onto it and writes the file through TraceWriter; build_imported()
// does the same into a model in memory.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "import/string_pool.h"
#include "loupe/prof/model_builder.h"
#include "loupe/prof/trace_model.h"
#include "loupe/prof/trace_rows.h"
#include "loupe/prof/trace_writer.h"

namespace loupe::prof::import {

// Why an event was left out: a time that a trace cannot hold (outside
// +-2^62 ns, trace_format.h), in the source or after the shift to the
// trace's origin.
inline constexpr const char* kTimeOutOfRange = "events with times outside +-2^62 ns (146 years)";

struct ImportedTrace {
  std::vector<DeviceRow> devices;
  std::vector<StreamRow> streams;
  std::vector<ThreadRow> threads;
  std::vector<CallSiteRow> callsites;  // ids from 1, strings of the pool

  // One vector per event table, named as in TraceModel.
#define LOUPE_IMPORTED_ROWS(Row, Track, table, member) std::vector<Row> member;
  LOUPE_EVENT_TABLES(LOUPE_IMPORTED_ROWS)
#undef LOUPE_IMPORTED_ROWS

  uint64_t source_events = 0;               // events (rows) read from the input
  std::map<std::string, uint64_t> skipped;  // source events not imported, by reason
  // Wall-clock time (ns since the Unix epoch) at source time 0, if known.
  bool wall_clock_known = false;
  int64_t wall_ns_at_zero = 0;
  std::map<std::string, std::string> meta;  // extra meta rows (source_format, clock, ...)
};

// Sets HostSpanRow::depth: the nesting level of each span among the spans
// of its thread (0 outermost). A span is inside another that starts no
// later and ends after it starts; at equal starts the longer one is outside.
void assign_depths(std::vector<HostSpanRow>& spans);

struct WriteSummary {
  uint64_t rows = 0;
  uint64_t skipped = 0;
  std::map<std::string, uint64_t> rows_by_table;
};

// Writes the strings of `strings` under the ids they have there, then
// `trace` (consuming its rows), and closes the writer. Sets meta
// status = "imported", skipped_events and skipped_detail, the origin, and
// every entry of trace.meta.
WriteSummary write_imported(ImportedTrace& trace, const StringPool& strings, TraceWriter& writer);

// The same rows and meta, made into a model without a file: the model
// load_trace() would read back from what write_imported() writes. Sets
// `summary` as write_imported() returns it; throws TraceError.
TraceModel build_imported(ImportedTrace& trace, const StringPool& strings, ModelBuilder& builder,
                          WriteSummary& summary);

}  // namespace loupe::prof::import
