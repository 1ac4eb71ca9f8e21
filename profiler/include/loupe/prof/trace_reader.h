// Reads a trace file into a TraceModel.
//
// Trace files are untrusted input (people mail them to each other). The
// reader opens them read-only with SQLite's defensive settings and
// trusted_schema off, checks that the file is a loupe trace of a major
// version it knows and that every table is a real table of the expected
// shape, and validates every reference while loading. Anything wrong raises
// TraceError with one line naming the file and the problem.
#pragma once

#include <stdexcept>
#include <string>

#include "loupe/prof/trace_model.h"

namespace loupe::prof {

class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ReadOptions {
  // Threads reading tables in parallel; 0 = one per core, at most 4.
  unsigned threads = 0;
};

TraceModel load_trace(const std::string& path, const ReadOptions& options = {});

}  // namespace loupe::prof
