// Two runs side by side (`loupe diff BASE HEAD`), or two sets of runs of
// the same programs (`loupe diff --base A1 A2 A3 --head B1 B2 B3`): their
// metrics, and per step (the median step, or one step) the time and count
// of each device-op name, the time of each host-span name and the calls of
// each launch name, each as base, head and delta, with the deltas beyond
// noise marked and each row's change named as HTA's trace diff names it.
// With one run a side, noise is the step-to-step spread; with several,
// step times and times by name are tested with a rank test over steps
// blocked by run (rank_test.h).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "loupe/prof/analysis.h"

namespace loupe::prof {

struct DiffRow {
  std::string name;
  std::string unit;  // "ns", "bytes", "count", "fraction"
  double base = 0, head = 0;
  double delta = 0;           // head - base
  double delta_fraction = 0;  // delta / base (0 when base is 0)
  bool beyond_noise = false;
  double p_value = -1;  // several runs a side: the rank test's two-sided p; -1 where not tested
  // "added" (only in head), "deleted" (only in base), "increased",
  // "decreased" (beyond noise, or for counts any change) or "unchanged".
  std::string change;
};

struct TraceDiff {
  size_t base_runs = 1, head_runs = 1;
  std::vector<double> base_step_times, head_step_times;  // each run's median step time (ns), in order
  int64_t step = -1;  // the step number the tables by name compare; -1: each name's median step
  // Several runs a side: a row tested (DiffRow::p_value) is beyond noise
  // when p is below this; 0 with one run a side.
  double significance = 0;
  // The relative change that step-to-step spread (one run a side) or
  // run-to-run spread (several) can explain: time-based rows not tested
  // and beyond it are marked. docs/analyses.md gives the formulas.
  double noise_fraction = 0;
  std::vector<DiffRow> metrics;
  std::vector<DiffRow> device_ops;        // total time per step, by name
  std::vector<DiffRow> device_op_counts;  // ops per step, by name: zero-duration ops too
  std::vector<DiffRow> host_spans;        // total time per step, by name
  std::vector<DiffRow> launches;          // launch calls per step, by name (cudaLaunchKernel, cudaGraphLaunch, ...)
  // The critical path's time per step by what bounds it (critical_path.h)
  // and by the device op on it, and, when the step time changed beyond
  // noise, where on the path it did: "step_time +4.100 ms a step
  // (+12.0%), +3.800 ms of it on the critical path in kernels, +3.500 ms
  // in `volta_sgemm_128x64_nn`"; "" otherwise.
  std::vector<DiffRow> critical_path;
  std::vector<DiffRow> critical_path_ops;
  std::string verdict;
};

// One run of a side: its trace, its analysis and its name (for messages).
struct DiffRun {
  const TraceModel& model;
  const AnalysisReport& report;
  std::string name;
};
struct DiffOptions {
  int64_t step = -1;           // compare this step of each run by name; -1: the median step
  double significance = 0.05;  // several runs a side: the rank test's level
};
// Throws std::invalid_argument when a side has no run or a run lacks the
// step asked for.
TraceDiff diff_runs(std::span<const DiffRun> base, std::span<const DiffRun> head, const DiffOptions& options = {});
TraceDiff diff_traces(const TraceModel& base, const AnalysisReport& base_report, const TraceModel& head,
                      const AnalysisReport& head_report, const DiffOptions& options = {});

// The relative change the step-to-step spread of two runs explains (their
// median step times' standard errors, combined; docs/analyses.md).
double diff_noise_fraction(const TraceMetrics& base, const TraceMetrics& head);
// A row of base and head values, marked beyond `noise` (times) or beyond
// rounding (counts, bytes, when `timed` is false).
DiffRow diff_row(std::string name, std::string unit, double base, double head, bool timed, double noise);
// The rows of the metrics a diff compares (metrics.h), marked.
std::vector<DiffRow> metric_rows(const TraceMetrics& base, const TraceMetrics& head, double noise);
std::vector<DiffRow> metric_rows(const JobMetrics& base, const JobMetrics& head, double noise);
// The names of those metrics, for --fail-on.
std::vector<std::string> trace_diff_metrics();
std::vector<std::string> job_diff_metrics();

// A --fail-on rule: "step_time:+5%" fails when head's step_time is more than
// 5% above base's; "-" fails on a decrease; without '%', the threshold is
// absolute in the metric's unit.
struct FailOn {
  std::string metric;
  bool increase = true;
  double threshold = 0;
  bool relative = false;
  std::string text;
};
// Throws std::invalid_argument naming the problem and the known metrics. A
// metric's earlier name (metric_aliases()) is read as its name.
FailOn parse_fail_on(const std::string& text, std::span<const std::string> metrics = trace_diff_metrics());
// Whether the rule is crossed by the metric rows (a change beyond the
// threshold and beyond noise: significant, with several runs), and a
// sentence saying so.
bool fail_on_crossed(const FailOn& rule, const std::vector<DiffRow>& metrics, std::string* why);

// A table of a diff's rows after its metrics, as each format titles it.
// Rows named by the trace (kernels, ops: a C++ kernel's name runs to
// hundreds of characters) print their name last in text, as `nsys stats`
// does, so that the figures keep their columns.
enum class NameColumn { first, last };
struct DiffTable {
  const char* key;    // its member in JSON
  const char* title;  // in text
  const char* markdown_title;
  const std::vector<DiffRow>& rows;
  NameColumn name = NameColumn::first;
};
// A diff of two traces or of two jobs: the heading, its metrics in full,
// then at most `limit` rows of each table; in JSON, every row.
std::string diff_tables_text(const std::string& heading, const std::vector<DiffRow>& metrics,
                             std::span<const DiffTable> tables, size_t limit);
std::string diff_tables_markdown(const std::string& heading, const std::vector<DiffRow>& metrics,
                                 std::span<const DiffTable> tables, size_t limit);
// What a JSON diff says beside its tables: `verdict` (TraceDiff::verdict)
// is left out when empty, and the runs, step and significance when a
// diff of one run a side over its median steps (or of jobs) has none.
struct DiffJsonHeader {
  double noise_fraction = 0;
  std::string verdict;
  size_t base_runs = 1, head_runs = 1;
  std::vector<double> base_step_times, head_step_times;  // by run, with several runs a side
  int64_t step = -1;
  double significance = 0;
};
std::string diff_tables_json(const std::string& base, const std::string& head, const DiffJsonHeader& header,
                             const std::vector<DiffRow>& metrics, std::span<const DiffTable> tables);

std::string diff_text(const TraceDiff& d, const std::string& base, const std::string& head, size_t limit);
std::string diff_markdown(const TraceDiff& d, const std::string& base, const std::string& head, size_t limit);
std::string diff_json(const TraceDiff& d, const std::string& base, const std::string& head);

}  // namespace loupe::prof
