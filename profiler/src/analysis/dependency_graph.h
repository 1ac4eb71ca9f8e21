// The dependencies between a run's events that the critical path follows
// (docs/analyses.md, "Critical path"), found on demand from sorted arrays:
//   stream order   an op starts after the op before it on its stream ends;
//   launch         an op starts after the host call that launched it began;
//   stream wait    an op starts after the op its stream was made to wait for
//                  (cudaStreamWaitEvent: the last op launched on the
//                  event's stream before the event was recorded) ends;
//   host order     a thread's work follows its earlier work;
//   host wait      a thread's wait ends when the device work it waited for
//                  does: a synchronising call (syncs: device, stream,
//                  event), a synchronous copy, or, without a record, a wait
//                  span matched by time to the op that ended last within it.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "analysis/context.h"

namespace loupe::prof::analysis {

// A device op by stream (an index into DependencyGraph::streams) and row.
struct OpRef {
  uint32_t stream = UINT32_MAX;  // UINT32_MAX: none
  uint32_t index = 0;
  bool valid() const { return stream != UINT32_MAX; }
};

inline constexpr uint32_t kNoThread = UINT32_MAX;

// One stream's ops, with when each was launched.
struct StreamOps {
  const DeviceOps* ops = nullptr;
  std::vector<int64_t> launched;      // the launch call's start; the op's start without one
  std::vector<uint32_t> launcher;     // the launching thread; kNoThread for none
  std::vector<int64_t> launched_max;  // running maximum of launched, for binary search
  std::vector<int64_t> end_max;       // running maximum of the ops' ends
  std::vector<uint32_t> waits;        // indices into DependencyGraph::stream_waits on this stream, by start
};

// A host thread's blocking call: while it ran the thread made no progress,
// and it ended when `awaited` did (or, with none, on its own).
struct HostWait {
  int64_t start = 0, end = 0;
  OpRef awaited;
  bool by_time = false;  // `awaited` was matched by time, not by a record
};

class DependencyGraph;
// The evidence the graph lacks, each costing its edges some truth (as
// CriticalPath::missing says it).
std::vector<std::string_view> missing_evidence(const DependencyGraph& g);

class DependencyGraph {
 public:
  explicit DependencyGraph(const Context& ctx);

  const Context& ctx;
  std::vector<StreamOps> streams;
  struct StreamWait {
    int64_t start = 0;  // when the call made the stream wait
    OpRef awaited;      // the op the event completes with; none when unknown
  };
  std::vector<StreamWait> stream_waits;
  // Per thread id: its waits sorted by start, and its launch calls as intervals.
  std::vector<std::vector<HostWait>> waits;
  std::vector<IntervalSet> launch_calls, data_loading;
  bool has_sync_records = false;

  // The op of this stream launched last at or before t (none if none).
  OpRef last_launched_by(uint32_t stream, int64_t t) const;
  // Of the ops launched at or before t on the device's streams (every
  // device for kUnknownDevice), the one that ends last.
  OpRef last_ending_launched_by(uint32_t device, int64_t t) const;
  // Of the stream waits that apply to op `index` of `stream` (made after
  // the op before it was launched and no later than it was), the awaited
  // op that ends last; none if none.
  OpRef stream_wait_before(uint32_t stream, uint32_t index) const;
  // The thread's last wait that started before t; null if none.
  const HostWait* wait_before(uint32_t thread, int64_t t) const;
  // The op that ended last within [a, b] on the device's streams (all
  // devices for kUnknownDevice) other than `skip`: what a wait without a
  // record most likely waited for.
  OpRef ended_last_within(int64_t a, int64_t b, uint32_t device = kUnknownDevice, uint32_t skip = UINT32_MAX) const;
  // The stream index of (device, stream); UINT32_MAX if no ops ran there.
  uint32_t stream_index(uint32_t device, uint32_t stream) const;
  int64_t end(OpRef op) const { return streams[op.stream].ops->end(op.index); }
  int64_t start(OpRef op) const { return streams[op.stream].ops->start[op.index]; }

 private:
  void index_streams();
  void index_ends();
  void index_stream_waits();
  void index_host_waits();
  void index_host_work();
  OpRef awaited_by(const SyncRow& row) const;
  OpRef ended_last_on(size_t device, int64_t a, int64_t b, uint32_t skip) const;
  // Per device that ran ops (by_end_devices_, ascending): its ops sorted
  // by end, so that the op that ended last before a time is one binary
  // search whatever the number of streams.
  std::vector<uint32_t> by_end_devices_;
  std::vector<std::vector<OpRef>> by_end_;
};

}  // namespace loupe::prof::analysis
