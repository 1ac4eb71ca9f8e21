// Predictions over a graph already built, for the rules that predict what
// fixing their finding would save (whatif.h gives the public entry).
#pragma once

#include <vector>

#include "analysis/dependency_graph.h"
#include "analysis/replay.h"
#include "loupe/prof/whatif.h"

namespace loupe::prof::analysis {

// What every prediction from one graph shares is worked out once: the
// replay's basis, each step's last op per stream, the recorded step times.
class Predictor {
 public:
  explicit Predictor(const DependencyGraph& graph);
  // Throws std::invalid_argument for a regex that does not compile.
  Prediction predict(const WhatIf& change) const;

 private:
  template <typename HostTime, typename OpEnd>
  std::vector<int64_t> step_times(HostTime host, OpEnd op_end) const;
  void read_times(const Replay& replay, Prediction& p) const;
  template <typename HostTime>
  int64_t run_end(HostTime host, int64_t last_op_end) const;

  const DependencyGraph& graph_;
  ReplayBasis basis_;
  std::vector<std::vector<OpRef>> step_ops_;  // per step of the Context: the last op it launched on each stream
  std::vector<int64_t> measured_;             // per step: its recorded time
  std::vector<Interval> extents_;             // per thread: its first event's start to its last event's end
  int64_t measured_last_op_end_ = INT64_MIN;
};

}  // namespace loupe::prof::analysis
