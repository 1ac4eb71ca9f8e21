// Writes a trace file: the one place that knows how rows reach SQLite.
// The capture's background thread, `loupe synth` and the importers all
// write through it, so every trace has the same schema and layout.
//
// Rows are staged in memory and written by commit() in one transaction,
// sorted by (track, start) and inserted 50 rows per prepared statement into
// tables clustered on that key; see docs/trace-format.md for why.
// Not thread-safe: one thread owns a writer.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "loupe/prof/trace_model.h"
#include "loupe/prof/trace_rows.h"

namespace loupe::prof {

// Any failure to create or write a trace file.
class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct WriterOptions {
  std::string producer = "loupe";
  // Wall-clock time (ns since the Unix epoch) and CLOCK_MONOTONIC time at
  // the trace's origin: row times are nanoseconds after it.
  int64_t origin_wall_ns = 0;
  int64_t origin_monotonic_ns = 0;
  // How the file reaches its path (both through OutputFile: the previous
  // file there is replaced only by a complete, valid trace).
  // true (a capture): the file takes the path as soon as its schema and
  // meta are written, and every commit is durable in it (WAL), so it can
  // be read while it grows and after the process dies.
  // false (an import, `loupe synth`): written beside the path with no
  // journal or syncs, and moved into place by close(); a failure before
  // then leaves the path as it was.
  bool live = true;
  // Files this trace is made from; the path must not be one of them.
  std::vector<std::string> inputs;
  // Meta rows the file holds from its first appearance on.
  std::vector<std::pair<std::string, std::string>> meta;
  // SQLite page size in bytes (a power of two, 512 to 65536). Large pages
  // suit large traces; small ones make small files (test and fuzz seeds).
  int page_size = 16384;
};

class TraceWriter {
 public:
  // Creates the file with the full schema (":memory:" for a trace only in
  // memory); throws StoreError naming the path.
  TraceWriter(const std::string& path, const WriterOptions& options);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  StringId intern(std::string_view text);
  // The text of an interned string (importers look names up by id).
  std::string_view text(StringId id) const;

  // Small tables: written (or replaced) at the next commit.
  void put(const DeviceRow& row);
  void put(const StreamRow& row);
  void put(const ThreadRow& row);
  void put(const CallSiteRow& row);
  void set_meta(std::string_view key, std::string_view value);

  // Event rows: staged until the next commit.
#define LOUPE_WRITER_ADD(Row, Track, table, member) void add(Row row);
  LOUPE_EVENT_TABLES(LOUPE_WRITER_ADD)
#undef LOUPE_WRITER_ADD

  // Event rows staged and not yet committed.
  uint64_t staged() const;
  // Event rows committed so far.
  uint64_t committed() const;

  // Writes everything staged in one transaction; throws StoreError (the
  // staged rows are then discarded and counted by the caller as lost).
  void commit();
  // After a failed commit (a full disk): frees what space the write-ahead
  // log holds and commits only the meta rows, so that the file can still
  // say what was lost. Throws StoreError if even that fails.
  void commit_meta_only();
  // Commits, then leaves the file self-contained (no -wal file beside it)
  // and, unless live, moves it into place. Throws StoreError; a writer
  // destroyed without close() leaves a live file as last committed and
  // removes any other.
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Writes the whole of `m` (strings, small tables, events and every meta
// row) through `w`, then closes it: the file load_trace() reads back as
// `m`, but for its path. The writer must be new (nothing added yet).
// Throws StoreError.
void write_model(const TraceModel& m, TraceWriter& w);

}  // namespace loupe::prof
