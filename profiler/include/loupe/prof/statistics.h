// The tables people expect from `nsys stats`, computed from a TraceModel:
// device operations, transfers, host spans and compiles by name, memory
// peaks per device. `loupe summary` prints them and the viewer's statistics
// panel shows them, sortable.
#pragma once

#include <string>
#include <vector>

#include "loupe/prof/trace_model.h"

namespace loupe::prof {

struct StatCell {
  std::string text;  // as shown: "1.234 ms"
  double value = 0;  // for sorting and machine output: 1234000 (ns, bytes, counts)
  bool numeric = false;
};

struct StatTable {
  std::string name;  // "device_ops", "transfers", "host_spans", "compiles", "memory"
  std::string title;
  std::vector<std::string> columns;
  std::vector<std::vector<StatCell>> rows;  // sorted by total time (or bytes), largest first
};

std::vector<StatTable> trace_statistics(const TraceModel& model);

}  // namespace loupe::prof
