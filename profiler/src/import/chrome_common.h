// Pieces shared by the Chrome-JSON mappings (Kineto, JAX, plain Chrome).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "import/chrome_events.h"
#include "import/imported_trace.h"
#include "loupe/prof/trace_writer.h"

namespace loupe::prof::import {

// Host threads: a loupe thread per (pid, tid) lane that carries host
// events, numbered from 1 in order of first use, named from the trace's
// thread_name / process_name metadata.
class LaneThreads {
 public:
  LaneThreads(const ChromeTrace& raw, TraceWriter& strings) : raw_(raw), strings_(strings) {}
  uint32_t thread(uint32_t lane);
  void emit(ImportedTrace& out) const;

 private:
  const ChromeTrace& raw_;
  TraceWriter& strings_;
  std::unordered_map<uint32_t, uint32_t> by_lane_;
  std::vector<uint32_t> lanes_;  // by thread id - 1
};

// A pid or tid as text ("783658", "Spans").
std::string lane_id_text(LaneId id, const TraceWriter& strings);
// Its number, if it is one.
inline std::optional<int64_t> lane_number(LaneId id) {
  return id.is_string ? std::nullopt : std::optional<int64_t>(id.value);
}

// Timestamps that read as microseconds since the Unix epoch (after the year
// 2000) are taken as wall-clock time, as Kineto and most tools write them.
void guess_wall_clock(const ChromeTrace& raw, ImportedTrace& out);

// Turns each "B" event and the next "E" event of its lane into one "X"
// event (the "E" is dropped); unmatched ones are counted as skipped.
void complete_begin_end(ChromeTrace& raw);

}  // namespace loupe::prof::import
