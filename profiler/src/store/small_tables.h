// The small tables of a trace (meta, strings, devices, streams, threads,
// call sites, tracks), read and checked in one place for every reader:
// load_trace(), summarize_trace() and the importers' tests read them the
// same way. Each throws StoreError naming the table and the bad value.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "loupe/prof/trace_model.h"
#include "loupe/prof/trace_writer.h"
#include "store/sqlite.h"

namespace loupe::prof::store {

// The meta rows every trace starts with (its format's version, producer,
// clock and origin), then options.meta: what a writer writes first, and
// what a model built without a file holds (model_builder.h).
std::vector<std::pair<std::string, std::string>> first_meta(const WriterOptions& options);
// The figures of TraceInfo, from every meta row of a trace.
TraceInfo trace_info(std::map<std::string, std::string> meta);

TraceInfo read_meta(sqlite3* db);
std::vector<std::string> read_strings(sqlite3* db);  // dense ids from 0
std::vector<Device> read_devices(sqlite3* db);
std::vector<Stream> read_streams(sqlite3* db);
std::vector<Thread> read_threads(sqlite3* db);
// The meta table and the machine it describes, read into any record that
// holds them (TraceModel, TraceSummary): what every reader of a trace
// reads first.
template <typename Out>
void read_machine(sqlite3* db, Out& out) {
  out.info = read_meta(db);
  out.devices = read_devices(db);
  out.streams = read_streams(db);
  out.threads = read_threads(db);
}
// Call sites whose strings are in `strings`.
std::vector<CallSite> read_callsites(sqlite3* db, size_t strings);
// Throws StoreError unless every parent a call site names is an earlier one.
void check_parents(const std::vector<CallSite>& callsites);

// What the tracks table claims about one track of an event table. The
// table is an index the writer keeps so that readers can plan their work;
// it is trusted only after it is checked against the events themselves.
struct TrackClaim {
  int64_t a = 0, b = 0;  // the track's key: (thread), (device, stream), ...
  int64_t rows = 0, first = 0, last = 0;
};
// Claims by event table name; a claim for a table that is not an event
// table, or that is not a track a writer could have written, is refused.
std::map<std::string, std::vector<TrackClaim>> read_tracks(sqlite3* db);

}  // namespace loupe::prof::store
