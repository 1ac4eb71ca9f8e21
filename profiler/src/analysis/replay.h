// The run replayed over its dependency graph (docs/analyses.md, "What-if"):
// each device op starts after what it depends on (its launch, the op
// before it on its stream, the op its stream was made to wait for), each
// host wait ends after what it waited for, and between its waits a host
// thread runs as recorded. Every delay is kept as measured from the
// dependency that bound it (the one that came last), so that, unchanged,
// the replay gives back the recorded times; a dependency that did not bind
// gets the delay its kind typically has on that stream, at most the slack
// it had. A device-side wait (an event wait op) lasts until the op on
// another stream that ended last within it has, as the host's waits do.
// Changes shorten ops, remove waits and cut host time, and the replay
// moves what came after.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/dependency_graph.h"
#include "analysis/intervals.h"

namespace loupe::prof::analysis {

enum class WaitChange : uint8_t { none, removed, asynchronous };

struct ReplayChanges {
  // Per thread, per HostWait of the graph (same order); empty: none.
  std::vector<std::vector<WaitChange>> waits;
  // Per stream, per op: its duration's factor (0 removes it); empty: 1.
  std::vector<std::vector<float>> op_factor;
  // Per thread: host time the replay skips; empty: none.
  std::vector<IntervalSet> host_cuts;
  // Per thread: how long a call that only queues work takes (an
  // asynchronous copy's return).
  std::vector<int64_t> queue_call_ns;
};

// What every replay of one graph shares, worked out once: per stream the
// typical delays, per thread its waits in the order of their ends.
struct ReplayBasis {
  explicit ReplayBasis(const DependencyGraph& graph);
  const DependencyGraph& graph;
  struct Typical {
    int64_t launch_ns = 0, follow_ns = 0;  // an op's delay after its launch, after the op before it
  };
  std::vector<Typical> typical;
  std::vector<std::vector<uint32_t>> waits_by_end;
};

class Replay {
 public:
  Replay(const ReplayBasis& basis, const ReplayChanges& changes);

  // The replayed time of measured time t on a host thread.
  int64_t host_time(uint32_t thread, int64_t t) const;
  int64_t op_end(OpRef op) const { return end_[op.stream][op.index]; }
  // The last replayed end of any op; INT64_MIN without ops.
  int64_t last_op_end() const { return last_op_end_; }

 private:
  struct ThreadState {
    std::vector<int64_t> wait_ends;  // measured ends of the waits replayed so far, ascending
    std::vector<int64_t> offsets;    // host_time(t) = t - cut_before(t) + offsets[k], k the last wait ended <= t
    size_t next = 0;                 // into the basis' waits_by_end
  };
  void run();
  void replay_op(uint32_t stream, uint32_t index);
  void replay_wait(uint32_t thread, uint32_t index);
  int64_t cut_before(uint32_t thread, int64_t t) const;
  int64_t duration(uint32_t stream, uint32_t index, int64_t start) const;
  // When an op is replayed: at its start, or for a device-side wait (an
  // event wait op) at its end, once what it waited for has been.
  int64_t replayed_at(uint32_t stream, uint32_t index) const;

  const ReplayBasis& b_;
  const DependencyGraph& g_;
  const ReplayChanges& c_;
  std::vector<std::vector<int64_t>> end_;  // per stream, per op: replayed end
  std::vector<uint32_t> done_;             // per stream: ops replayed
  std::vector<ThreadState> threads_;
  int64_t last_op_end_ = INT64_MIN;
};

}  // namespace loupe::prof::analysis
