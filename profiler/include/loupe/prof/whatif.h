// What a change to a run would make of its step times: the run's
// dependency graph (docs/analyses.md, "Critical path") replayed with the
// change (docs/analyses.md, "What-if"). Every gap the trace measured
// between an event and what it waited for is kept; a change removes or
// shortens events, and the replay moves everything that depended on them.
// Unchanged, the replay gives back the measured times; the prediction is
// as good as the graph's edges, and says which ones the trace lacked.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loupe/prof/trace_model.h"

namespace loupe::prof {

struct AnalysisOptions;  // analysis.h

// The changes to replay. A site is "FILE:LINE" (FILE matched as the end of
// the path) or "FILE": it matches a host call whose call site, or one of
// whose callers, or one of the Python frames ("train.py(12): step") open
// around it on its thread, is there.
struct WhatIf {
  // Host waits there (synchronising calls, synchronous copies, wait spans)
  // are gone: the thread goes on at once.
  std::vector<std::string> remove_syncs_at;
  // Transfers there are gone, host call and device copy.
  std::vector<std::string> remove_transfers_at;
  // Synchronous copies there become asynchronous: the host goes on after
  // queueing the copy (as long as a launch takes on its thread), the copy
  // still runs on its stream.
  std::vector<std::string> async_copies_at;
  // The same for the waits that start inside these ranges, and host time
  // inside them taking none, on the threads listed (all when none are):
  // how a finding names the events its fix changes.
  std::vector<TimeRange> remove_syncs_within, async_copies_within, remove_host_within;
  std::vector<uint32_t> within_threads;
  // Compiles after warm-up (the recompile rule's) take no time.
  bool drop_recompiles = false;
  // The host's own time between its calls that touch the device (launches,
  // waits, copies, compiles) takes none: a host as fast as the device
  // calls allow.
  bool remove_host_gaps = false;
  // Device ops whose name matches the ECMAScript regex take `factor` times
  // as long; on a (device, stream) the same.
  struct KernelScale {
    std::string regex;
    double factor = 1;
  };
  std::vector<KernelScale> scale_kernels;
  struct StreamScale {
    uint32_t device = 0, stream = 0;
    double factor = 1;
  };
  std::vector<StreamScale> scale_streams;

  bool empty() const {
    return remove_syncs_at.empty() && remove_transfers_at.empty() && async_copies_at.empty() &&
           remove_syncs_within.empty() && async_copies_within.empty() && remove_host_within.empty() &&
           !drop_recompiles && !remove_host_gaps && scale_kernels.empty() && scale_streams.empty();
  }
};

// A step's time as the steps rule judges it on the device (analysis.h,
// StepStats): from the end of the previous step's window on its thread to
// when the device finished the work the step launched, or the step ended
// if later; as recorded and replayed.
struct StepPrediction {
  int64_t number = 0;
  int64_t measured_ns = 0, predicted_ns = 0;
};

struct Prediction {
  // From the trace's first event to the last end of an op or a host
  // event, as recorded and replayed.
  int64_t measured_ns = 0, predicted_ns = 0;
  std::vector<StepPrediction> steps;
  // Over the steps after the first `warmup_steps` (AnalysisOptions; 0
  // without steps): the mean step, as recorded and replayed, and what the
  // change saves a step (negative: it costs). The mean, not the median: a
  // host that gains a lead on its device spends it over the next steps,
  // which a median of the steps would not see; the steps' total, and so
  // their mean, holds the lead and its spending.
  int64_t mean_measured_ns = 0, mean_predicted_ns = 0;
  size_t warmup_steps = 0;  // the steps left out of the mean
  int64_t saved_per_step_ns() const { return mean_measured_ns - mean_predicted_ns; }
  // Events the change touched: waits removed or made asynchronous,
  // transfers removed, compiles dropped, device ops scaled, stretches of
  // host time removed (the host's gaps, or the ranges a finding names).
  uint64_t waits_changed = 0, transfers_removed = 0, compiles_dropped = 0, ops_scaled = 0, host_stretches_removed = 0;
  uint64_t changed() const {
    return waits_changed + transfers_removed + compiles_dropped + ops_scaled + host_stretches_removed;
  }
  // The evidence the replay lacked (as CriticalPath::missing), and sites
  // the change names that match nothing.
  std::vector<std::string> missing;
  std::vector<std::string> unmatched;
};

// With the analyses' defaults, or the thresholds of `options` (the
// recompile rule's warm-up, the wait that counts as a stream wait).
// Throws std::invalid_argument for a regex that does not compile.
Prediction what_if(const TraceModel& model, const WhatIf& change);
Prediction what_if(const TraceModel& model, const WhatIf& change, const AnalysisOptions& options);

// Whether a site ("FILE:LINE" or "FILE") names this file and line.
bool site_matches(std::string_view site, std::string_view file, uint32_t line);

}  // namespace loupe::prof
