// Builds a TraceModel from rows in memory: the model load_trace() reads
// back from a file that a TraceWriter wrote with the same calls, without
// SQLite in between. loupe reads other profilers' traces this way
// (import.h's import_model), so that `loupe analyze trace.json.gz` costs
// the parse and the analysis, not a write and a read.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loupe/prof/trace_model.h"
#include "loupe/prof/trace_rows.h"
#include "loupe/prof/trace_writer.h"

namespace loupe::prof {

class ModelBuilder {
 public:
  // `path` names the model's source (TraceModel::path, messages); the
  // options' producer, origin and meta are its first meta rows, as a
  // writer's are. The other options concern files and are ignored.
  ModelBuilder(std::string path, const WriterOptions& options);
  ~ModelBuilder();
  ModelBuilder(const ModelBuilder&) = delete;
  ModelBuilder& operator=(const ModelBuilder&) = delete;

  // The strings by id: strings[0] is the empty string.
  void set_strings(std::vector<std::string> strings);
  // Small tables: a row replaces an earlier one with the same key.
  void put(const DeviceRow& row);
  void put(const StreamRow& row);
  void put(const ThreadRow& row);
  void put(const CallSiteRow& row);
  void set_meta(std::string_view key, std::string_view value);

#define LOUPE_BUILDER_ADD(Row, Track, table, member) void add(Row row);
  LOUPE_EVENT_TABLES(LOUPE_BUILDER_ADD)
#undef LOUPE_BUILDER_ADD

  // The model: each track's events in time order, ties in the order they
  // were added, checked as load_trace() checks a file's rows. Throws
  // TraceError naming the path and what was wrong. Call it once.
  TraceModel finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace loupe::prof
