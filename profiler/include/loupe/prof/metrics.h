// The metrics: the figures of a run that `loupe check` budgets, `loupe diff`
// compares, the JSON reports carry and docs/ci.md lists. Each is described
// once, in the lists below; the structs, the JSON keys, the diff rows, the
// budget keys and the docs' table all follow from them, so a metric has one
// name everywhere. Adding one is a line here plus the code that computes it
// (analyze.cpp for a trace's, job_reducer.cpp for a job's).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace loupe::prof {

enum class MetricUnit : uint8_t { count, ns, bytes, fraction };
std::string_view name_of(MetricUnit u);  // "count", "ns", "bytes", "fraction"

// How `loupe diff` compares a metric: a timed one carries the step-to-step
// noise of the run; an exact one (a count, bytes) changes only when the run
// did; some are reported but not compared.
enum class MetricCompare : uint8_t { timed, exact, not_compared };

// X(name, C++ type, unit, compare, budgeted, description). A budgeted metric
// has the budget key `<name>_max`. The order is the diff's.
#define LOUPE_TRACE_METRICS(X)                                                                                      \
  X(step_time, double, ns, timed, true, "median step time")                                                         \
  X(idle_fraction, double, fraction, timed, true, "device idle time over the active window, summed over devices")   \
  X(compiles, uint64_t, count, exact, false, "compiles of jitted functions (cache misses)")                         \
  X(recompiles, uint64_t, count, exact, true, "compiles of jitted functions after the warm-up steps")               \
  X(sync_transfers_per_step, double, count, exact, true, "synchronous transfers per step (in total without steps)") \
  X(transfer_bytes_per_step, double, bytes, exact, true, "bytes copied between host and device per step")           \
  X(peak_memory, int64_t, bytes, exact, false, "the highest peak of allocated memory on any device")                \
  X(kernels, uint64_t, count, exact, false, "kernels in the trace")                                                 \
  X(kernels_per_step, double, count, exact, false, "kernels per step (in total without steps)")                     \
  X(tiny_kernel_fraction, double, fraction, exact, true, "kernels shorter than their launch, over all kernels")     \
  X(steps, uint64_t, count, exact, false, "distinct step numbers")                                                  \
  X(step_time_mad, double, ns, not_compared, false, "median absolute deviation of the step times")                  \
  X(peak_memory_fraction, double, fraction, not_compared, true, "peak allocated memory over the device's capacity") \
  X(device_ops, uint64_t, count, not_compared, false, "device operations: kernels, copies and memsets")

// A job's own (`loupe analyze job/`); a trace's budgets hold for each of
// its ranks besides.
#define LOUPE_JOB_METRICS(X)                                                                                    \
  X(step_time, double, ns, timed, false, "the median over ranks of each rank's median step time")               \
  X(compute_per_step, double, ns, timed, false, "the median over ranks of each rank's median compute per step") \
  X(straggler_fraction, double, fraction, timed, true,                                                          \
    "the time the job lost waiting for its straggler, over its window")                                         \
  X(collective_wait_fraction, double, fraction, timed, true,                                                    \
    "the time ranks waited in collectives for later ranks, over all ranks' time")                               \
  X(exposed_communication_fraction, double, fraction, timed, true,                                              \
    "communication no compute hides (median rank, per step) summed, over the window")                           \
  X(imbalance_fraction, double, fraction, timed, true,                                                          \
    "the median spread of the ranks' compute per step, over the median compute")                                \
  X(collectives, uint64_t, count, exact, false, "collectives matched across ranks")                             \
  X(steps, uint64_t, count, exact, false, "distinct step numbers with matched collectives")                     \
  X(ranks_left_out, uint64_t, count, exact, true, "ranks missing, unreadable or left out of the comparison")

#define LOUPE_METRIC_MEMBER(name, type, unit, compare, budgeted, description) type name = 0;

// A trace's metrics (analyze() fills them).
struct TraceMetrics {
  LOUPE_TRACE_METRICS(LOUPE_METRIC_MEMBER)
};

// A job's metrics (the job reducer fills them).
struct JobMetrics {
  LOUPE_JOB_METRICS(LOUPE_METRIC_MEMBER)
};

// One metric of a list, with its value read as a double.
template <typename Metrics>
struct MetricDef {
  const char* name;
  MetricUnit unit;
  MetricCompare compare;
  bool budgeted;
  const char* description;
  double (*value)(const Metrics&);
};
std::span<const MetricDef<TraceMetrics>> trace_metrics();
std::span<const MetricDef<JobMetrics>> job_metrics();
// A metric's value by name; throws std::invalid_argument for an unknown one.
double metric_value(const TraceMetrics& m, std::string_view name);
double metric_value(const JobMetrics& m, std::string_view name);

// Calls f(name, member) for every member, with its own type: for writing and
// reading the metrics field by field (a rank's summary crossing to the client).
template <typename Metrics, typename F>
void for_each_metric(Metrics& m, F&& f) {
#define LOUPE_METRIC_VISIT(name, type, unit, compare, budgeted, description) f(#name, m.name);
  if constexpr (std::is_same_v<std::remove_const_t<Metrics>, TraceMetrics>) {
    LOUPE_TRACE_METRICS(LOUPE_METRIC_VISIT)
  } else {
    LOUPE_JOB_METRICS(LOUPE_METRIC_VISIT)
  }
#undef LOUPE_METRIC_VISIT
}

// Names an earlier loupe used, still read: a budget key or a --fail-on
// metric. `scale` turns the old key's value into the metric's unit.
struct MetricAlias {
  const char* old_name;
  const char* name;
  double scale;
};
std::span<const MetricAlias> metric_aliases();

// docs/ci.md's table of metrics, as the lists above give it.
std::string metrics_markdown();

}  // namespace loupe::prof
