// loupe's analyses: what went wrong in a trace, what it cost, where to look.
//
// analyze() runs the rules of docs/analyses.md over a TraceModel and returns
// findings ordered by impact, together with the measurements behind them
// (per-device idle gaps with their causes, step statistics, the metrics
// that budgets and diffs compare). The CLI prints this report and the viewer
// draws it: one computation, so both always agree.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "loupe/prof/completeness.h"
#include "loupe/prof/critical_path.h"
#include "loupe/prof/metrics.h"
#include "loupe/prof/trace_model.h"
#include "loupe/prof/whatif.h"

namespace loupe::prof {

enum class Severity : uint8_t { info = 0, warning = 1, error = 2 };
std::string_view name_of(Severity s);

struct Finding {
  std::string rule;  // "recompile", "transfer", "idle-gap", ...
  Severity severity = Severity::info;
  std::string title;                                          // one line: what happened
  int64_t impact_ns = 0;                                      // estimated time lost
  double impact_fraction = 0;                                 // impact_ns over the active window
  std::vector<TimeRange> ranges;                              // where it happened, for the viewer
  std::vector<std::pair<std::string, std::string>> evidence;  // (what, value), in order
  std::string suggestion;
  std::vector<uint32_t> devices, threads;  // the tracks it concerns
  std::vector<int64_t> ranks;              // a job's finding: the ranks it concerns
  // The change that would fix it, as the what-if replay takes it (empty:
  // none the replay models), and what the replay predicts that saves: of
  // the mean step (per_step), or of the run when it has no steps, and
  // the share of that time.
  WhatIf fix;
  bool predicted = false, predicted_per_step = false;
  int64_t predicted_saving_ns = 0;
  double predicted_saving_fraction = 0;
};

// Why a device sat idle (docs/analyses.md): from what the launching thread
// did until it launched the operation that ended the gap (host-side
// causes), or, when that operation was queued in time, the device's own
// wait. `between_ops`: the thread was inside no recorded op (Python, or
// other code nothing records); `unknown`: nothing tells.
enum class GapCause : uint8_t { compile, sync, host_work, launch, between_ops, device_wait, unknown };
constexpr size_t kGapCauses = 7;
std::string_view name_of(GapCause c);

// In a host-work gap, what the host's work was, which decides the advice:
// the program's own code, its input pipeline (a DataLoader range open),
// one CUDA/HIP runtime or driver call (a launch, an allocation or release
// of memory, another runtime call), told by the call's name, or the
// program's start-up (first launches loading modules, set-up calls of a
// tenth of a second or more: docs/analyses.md).
enum class HostWork : uint8_t { code, input_pipeline, launch_call, memory_call, runtime_call, start_up };

struct IdleGap {
  int64_t start = 0, end = 0;
  GapCause cause = GapCause::unknown;
  std::string what;    // what it was behind, the key gaps are grouped by: "aten::item > aten::_local_scalar_dense"
  std::string detail;  // the sentence shown: "compile of train_step", "host in `save_checkpoint` on thread `main`"
  HostWork work = HostWork::code;  // for cause host_work
};

// HTA's per-stream classes of idle time between consecutive operations.
struct StreamIdle {
  uint32_t device = 0, stream = 0;
  int64_t host_wait_ns = 0, kernel_wait_ns = 0, other_ns = 0;
};

struct DeviceIdle {
  uint32_t device = 0;
  int64_t window_start = 0, window_end = 0;  // first op start, last op end
  int64_t busy_ns = 0;                       // union of ops over all streams
  int64_t idle_ns = 0;                       // window - busy
  // HTA's temporal breakdown and comm/comp overlap: the union of compute
  // kernels (kernels other than collectives; busy - compute is HTA's
  // non-compute time), the union of collective kernels, and the time both
  // ran at once.
  int64_t compute_ns = 0, collective_ns = 0, compute_collective_overlap_ns = 0;
  std::vector<IdleGap> gaps;          // gaps >= min_gap, in time order
  int64_t cause_ns[kGapCauses] = {};  // idle in those gaps per GapCause
};

struct StepStats {
  uint64_t count = 0;
  // Of the step times judged: device windows when every step is linked to
  // its device work (on_device), else host ranges; steps that only filled
  // the launch queue are left out (judged: how many are not).
  int64_t median_ns = 0, p10_ns = 0, p90_ns = 0, mad_ns = 0;
  bool on_device = false;
  uint64_t judged = 0;
  // Per step, in order: its host range (start, dur); its device window,
  // from the end of the previous step's window on its thread to when the
  // device finished the work the step launched (found by correlation id)
  // or the step ended, whichever is later; the window's split (ns) into
  // computing (a kernel other than a collective ran), communicating only
  // (a collective and no compute), copying only and idle (all zero in a
  // trace without device operations); and host compile time in the step.
  // queue_fill: one of the first steps, issued by a host that ran ahead of
  // the device (its host time under a 1/step_spread share of its window)
  // while later steps were not.
  struct Step {
    int64_t number = 0, start = 0, dur = 0;
    int64_t device_start = 0, device_end = 0;
    int64_t compute_ns = 0, communication_ns = 0, transfer_ns = 0, idle_ns = 0, compile_ns = 0;
    bool queue_fill = false;
  };
  std::vector<Step> steps;
  uint64_t linked = 0;  // steps with a launch linked to a device operation
  // A step's time as judged: its device window or its host range.
  int64_t judged_ns(const Step& s) const { return on_device ? s.device_end - s.device_start : s.dur; }
};

struct AnalysisOptions {
  std::vector<std::string> rules;  // empty: all
  int64_t min_gap_ns = 20'000;     // idle-gap
  int largest_gaps = 3;
  double idle_warning_fraction = 0.10, idle_error_fraction = 0.30;
  double host_slowdown = 5.0;  // idle-gap: times a typical run's bookkeeping-op time at which the host is slow
  double cause_min_coverage = 0.5;
  int64_t kernel_wait_max_ns = 30'000;  // HTA's consecutive_kernel_delay
  int64_t warmup_steps = 1;             // recompile
  double recompile_error_fraction = 0.10;
  double recurring_per_step = 0.5;  // transfer: how often counts as "every step"
  uint64_t recurring_without_steps = 10;
  double transfer_warning_fraction = 0.01;  // transfer: device idle caused, as a share of the window
  int64_t tiny_kernel_ns = 10'000;          // when a kernel has no launch to compare with
  double tiny_fraction_warning = 0.5;
  uint64_t tiny_min_kernels = 100;
  double launch_bound_fraction = 0.10;           // of the window idle waiting for launches
  double async_min_lag_ratio = 0.5;              // async-timing
  double memory_high_fraction = 0.9;             // memory
  double leak_min_growth_fraction = 0.01;        // leak: growth over the steps, as a share of the peak
  double step_spread_warning = 1.5;              // steps: p90 / median
  double steady_width = 0.10;                    // steps: (p90 - p10) / median under which steps are steady
  double communication_warning_fraction = 0.10;  // communication: exposed share of the window
  double copy_shown_fraction = 0.01;             // copies: copy-only share of the window worth a finding
  double copy_warning_fraction = 0.05;           // copies: copy-only share that makes a warning
  double device_bound_fraction = 0.5;            // copies: busy share at which the device sets the pace
};

// Every threshold above by name, for `--set name=value` and budget files.
struct AnalysisParameter {
  const char* name;
  const char* description;
  double default_value;  // as AnalysisOptions{} has it; nanoseconds for a duration
  bool duration;         // takes ns, us, ms and s as units
};
std::vector<AnalysisParameter> analysis_parameters();
// Sets one by name; throws std::invalid_argument naming the problem.
void set_analysis_parameter(AnalysisOptions& options, const std::string& name, const std::string& value);

// The rules, in the order docs/analyses.md describes them.
std::vector<std::string> analysis_rules();

struct AnalysisReport {
  std::string path;
  int64_t window_start = 0, window_end = 0;  // the active window, over all devices
  bool times_are_order = false;              // the trace's times are only an order (kMetaTimesAreOrder)
  // What the trace lacks (completeness.h); empty when nothing is known to
  // be missing. Findings of the rules that read all device work are then
  // at most warnings, and say what is missing.
  std::vector<Incompleteness> incomplete;
  std::vector<Finding> findings;  // by impact, largest first
  std::vector<DeviceIdle> devices;
  std::vector<StreamIdle> streams;
  StepStats steps;
  CriticalPath critical_path;  // critical_path.h
  // Host time blocked on a full launch queue: the waits loupe's runtime
  // records as "launch queue full"; -1 when the trace holds none, and so
  // cannot tell (other sources do not record why a launch call took long).
  int64_t launch_queue_full_ns = -1;
  TraceMetrics metrics;
};

// The q-quantile with linear interpolation between the two nearest values
// (numpy's default): the median of an even count is the mean of the middle
// two, and the p90 of two values lies between them, not on the median.
int64_t quantile(std::vector<int64_t> v, double q);

// A collective communication kernel (NCCL's, or RCCL's, which keeps
// NCCL's names): communication, not compute, whatever stream it runs on.
bool is_collective_kernel(std::string_view name);

// Throws std::invalid_argument for an unknown rule name.
AnalysisReport analyze(const TraceModel& model, const AnalysisOptions& options = {});

// The critical path alone, as analyze() puts it in the report.
CriticalPath critical_path(const TraceModel& model, const AnalysisOptions& options = {});
// The path into each of the model's collectives and into its end
// (critical_path.h). A collective run on the host (gloo's, on a thread of
// its own) is not linked to the call that issued it: its path is unknown.
ArrivalPaths arrival_paths(const TraceModel& model, const AnalysisOptions& options = {});

// A stream's launch queue as HTA counts it: its ops launched (their launch
// call began) and not yet started, over time; a step function, `length[i]`
// from `time[i]` until the next time. Only ops linked to their launch by
// correlation id count; at one time, the length is the one after all that
// happened then (HTA's series may show a launch before a start at the same
// microsecond, a peak one higher that lasts no time).
struct LaunchQueue {
  uint32_t device = 0, stream = 0;
  std::vector<int64_t> time, length;
  int64_t max_length = 0;
  double mean_length = 0;  // weighted by time, from the first launch to the last start
};
// Per stream with a linked op, in (device, stream) order.
std::vector<LaunchQueue> launch_queues(const TraceModel& model);

// What was live in the memory events `table` of a trace just after time t,
// as the memory rule tells it at the peak: the running total then, the part
// of it held from before the trace, and the trace's blocks by category
// (those with evidence, docs/analyses.md) and by allocation site with its
// callers, most bytes first. The viewer lists it for a point of a memory
// lane.
struct LiveSite {
  std::string site;  // "" unknown
  int64_t bytes = 0;
  uint64_t blocks = 0;
};
struct LiveMemory {
  int64_t allocated = 0, held_before = 0;
  std::vector<std::pair<std::string, int64_t>> by_category;  // (category, bytes)
  std::vector<LiveSite> sites;
};
LiveMemory live_memory_at(const TraceModel& model, uint32_t table, int64_t t);

// The trace's blocks of the memory events `table` by category over time,
// for the viewer's memory lane: for each category some block has (in the
// order the memory finding lists them; unknown left out), the bytes of its
// blocks live just after each event of the table. Empty when no block has
// one, as in a trace without ops around its allocations.
struct CategoryOverTime {
  std::string category;
  std::vector<int64_t> bytes;  // one per event of the table
};
std::vector<CategoryOverTime> memory_categories_over_time(const TraceModel& model, uint32_t table);

}  // namespace loupe::prof
