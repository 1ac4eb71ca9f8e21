// Chrome trace-event JSON as the JSON reader hands it to the format
// mappings (Kineto, JAX, plain Chrome): one compact record per event with
// the fields and arguments loupe uses, times already in integer
// nanoseconds, strings interned in the importers' StringPool.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "loupe/prof/trace_rows.h"

namespace loupe::prof::import {

// A pid or tid: a number, or (rarely, e.g. Kineto's "Spans") a string.
struct LaneId {
  int64_t value = 0;
  bool is_string = false;  // then value is a StringId
  bool operator==(const LaneId&) const = default;
  auto operator<=>(const LaneId&) const = default;
};

// One (pid, tid) pair: a host thread, or a device stream lane.
struct Lane {
  LaneId pid, tid;
};

inline constexpr int64_t kNone = std::numeric_limits<int64_t>::min();

struct ChromeEvent {
  int64_t ts = 0;       // ns, on the file's clock
  int64_t dur = kNone;  // ns; kNone when the event has no "dur"
  uint32_t lane = 0;    // index into ChromeTrace::lanes
  StringId name = 0, cat = 0;
  char ph = 0;
  char bp = 0;  // flow binding point ("bp": "e")
  // Arguments (args.*) loupe reads; kNone when absent.
  int64_t device = kNone;                                   // device, device_id, Device Id, device_ordinal
  int64_t device_type = kNone;                              // Device Type ([memory] events)
  int64_t stream = kNone;                                   // stream, stream_id
  int64_t correlation = kNone;                              // correlation, correlation_id; a flow's id
  int64_t external = kNone;                                 // External id: Kineto's number of a host op
  int64_t bytes = kNone;                                    // bytes, Bytes, size
  int64_t total_allocated = kNone, total_reserved = kNone;  // [memory] totals
  int64_t addr = kNone;                                     // Addr
  int64_t step = kNone;                                     // step_num (JAX StepTraceAnnotation)
  double bandwidth = 0;                                     // GB/s, Kineto's "memory bandwidth (GB/s)"; 0 when absent
  StringId arg_kind = 0;                                    // cuda_sync_kind, kind, memcpy_details or memset_details
  StringId arg_name = 0;                                    // args.name (metadata value, XLA module name)
  uint32_t comm = 0;    // a collective's arguments: 1 + index into the trace's comms; 0 when none
  uint32_t awaits = 0;  // a sync record's event: 1 + index into the trace's awaited; 0 when none
};

// The event a Kineto cuda_sync record waited for: the stream it was
// recorded on ("wait_on_stream") and the correlation of the
// cudaEventRecord call that recorded it
// ("wait_on_cuda_event_record_corr_id"); kNone when absent or -1.
struct ChromeAwaited {
  int64_t stream = kNone, record_correlation = kNone;
};

// A collective's arguments, as PyTorch's profiler writes them on
// record_param_comms and repeats on NCCL kernels: "Collective name",
// "Process Group Name", "dtype", "In msg nelems", "Out msg nelems",
// "Group size".
struct ChromeComm {
  StringId name = 0, group = 0, dtype = 0;
  int64_t in_nelems = kNone, out_nelems = kNone, group_size = kNone;
};

// A Chrome counter event ("ph": "C"): one sample per series.
struct ChromeCounter {
  int64_t ts = 0;
  uint32_t lane = 0;
  StringId name = 0;  // "name" or "name.series"
  double value = 0;
};

struct ChromeTrace {
  std::vector<ChromeEvent> events;  // every event but metadata and counters, in file order
  std::vector<ChromeCounter> counters;
  std::vector<ChromeComm> comms;       // ChromeEvent::comm indexes them
  std::vector<ChromeAwaited> awaited;  // ChromeEvent::awaits indexes them
  std::vector<Lane> lanes;
  std::map<LaneId, std::string> process_names, process_labels;  // by pid
  std::map<uint32_t, std::string> thread_names;                 // by lane
  std::vector<DeviceRow> device_properties;                     // Kineto deviceProperties
  int64_t base_time_ns = kNone;                                 // Kineto baseTimeNanoseconds: wall time of ts 0
  bool has_schema_version = false;                              // Kineto's schemaVersion
  // Kineto's distributedInfo (a rank of a torch.distributed job): its rank,
  // world size and backend, and the whole object as JSON text.
  struct Distributed {
    int64_t rank = kNone, world_size = kNone;
    std::string backend, json;
  };
  std::optional<Distributed> distributed;
  std::string host_name;  // Kineto's host_name
  bool top_level_array = false;
  uint64_t bytes = 0;                                    // JSON bytes read
  uint64_t total_events = 0;                             // elements of traceEvents read, of any phase
  uint64_t metadata_events = 0;                          // "ph": "M" events read
  uint64_t begin_end_events = 0;                         // "ph": "B" and "E" events read
  int64_t min_ts = std::numeric_limits<int64_t>::max();  // earliest ts of the events
  std::map<std::string, uint64_t> skipped;               // events the reader itself dropped, by reason

  // The lane of (pid, tid), created on first use.
  uint32_t lane(LaneId pid, LaneId tid) {
    auto [it, inserted] = lane_index_.try_emplace(LaneKey{pid, tid}, uint32_t(lanes.size()));
    if (inserted) lanes.push_back({pid, tid});
    return it->second;
  }

 private:
  struct LaneKey {
    LaneId pid, tid;
    bool operator==(const LaneKey&) const = default;
  };
  struct LaneKeyHash {
    size_t operator()(const LaneKey& k) const {
      uint64_t a = uint64_t(k.pid.value) * 2 + k.pid.is_string, b = uint64_t(k.tid.value) * 2 + k.tid.is_string;
      return size_t(a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull + (a << 6) + (a >> 2)));
    }
  };
  std::unordered_map<LaneKey, uint32_t, LaneKeyHash> lane_index_;
};

}  // namespace loupe::prof::import
