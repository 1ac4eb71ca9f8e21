// Reads a trace file into a TraceModel.
//
// Trace files are untrusted input (people mail them to each other). The
// reader opens them read-only with SQLite's defensive settings and
// trusted_schema off, checks that the file is a loupe trace of a major
// version it knows and that every table is a real table of the expected
// shape, and validates every reference while loading. Anything wrong raises
// TraceError with one line naming the file and the problem.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "loupe/prof/trace_model.h"

namespace loupe::prof {

class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ReadOptions {
  // Threads reading tables in parallel; 0 = one per core, at most 4.
  unsigned threads = 0;
  // The event tables to read, by name (trace_tables.h); the others stay
  // empty, and start_ns and end_ns span only those read. Unset: all of
  // them. The meta, strings and small tables are always read. Throws
  // std::invalid_argument for a name that is not an event table.
  std::optional<std::vector<std::string>> tables;
};

TraceModel load_trace(const std::string& path, const ReadOptions& options = {});

}  // namespace loupe::prof
