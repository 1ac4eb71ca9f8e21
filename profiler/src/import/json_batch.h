// A run of a JSON trace's events, parsed apart from the rest (on a worker
// thread) and merged back in file order.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "import/chrome_events.h"

namespace loupe::prof::import {

// A run of complete events, copied out of the reading buffer and framed as
// one JSON array ("[" events "]") in a padded buffer of its own, and what
// parsing it produced. String and lane ids in the results are local to the
// batch (0 is ""); merging maps them onto the trace's, in file order.
struct Batch {
  uint64_t offset = 0;  // document offset of the byte framed as '['
  std::vector<char> bytes;
  size_t length = 0;

  std::vector<ChromeEvent> events;
  std::vector<ChromeCounter> counters;
  std::vector<ChromeComm> comms;
  std::vector<ChromeAwaited> awaited;
  std::vector<std::string_view> strings;  // local string id -> text, in bytes or owned
  std::deque<std::string> owned;          // unescaped and composed strings
  std::vector<Lane> lanes;                // local lane id -> (pid, tid); string ids local
  struct Meta {
    enum Kind : uint8_t { process_name, process_labels, thread_name } kind;
    LaneId pid, tid;
    uint32_t value;  // local string id
  };
  std::vector<Meta> metadata;
  std::map<std::string, uint64_t> skipped;
  uint64_t total_events = 0, metadata_events = 0, begin_end_events = 0;
  int64_t min_ts = std::numeric_limits<int64_t>::max();
  bool failed = false;
  uint64_t error_offset = 0;
  std::string error;

  void clear_results() {
    events.clear();
    counters.clear();
    comms.clear();
    awaited.clear();
    strings.clear();
    owned.clear();
    lanes.clear();
    metadata.clear();
    skipped.clear();
    total_events = metadata_events = begin_end_events = 0;
    min_ts = std::numeric_limits<int64_t>::max();
    failed = false;
    error.clear();
  }
};

}  // namespace loupe::prof::import
