// Two runs side by side (`loupe diff BASE HEAD`): their metrics, and time by
// device-op name and by host-span name, each as base, head and delta, with
// the deltas beyond run-to-run noise marked.
#pragma once

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
};

struct TraceDiff {
  // The relative change that step-to-step spread can explain: time-based
  // rows beyond it are marked. docs/analyses.md gives the formula.
  double noise_fraction = 0;
  std::vector<DiffRow> metrics;
  std::vector<DiffRow> device_ops;  // total time per step, by name
  std::vector<DiffRow> host_spans;  // total time per step, by name
};

TraceDiff diff_traces(const TraceModel& base, const AnalysisReport& base_report, const TraceModel& head,
                      const AnalysisReport& head_report);

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
// Throws std::invalid_argument naming the problem and the known metrics.
FailOn parse_fail_on(const std::string& text);
// Whether the rule is crossed, and a sentence saying so.
bool fail_on_crossed(const FailOn& rule, const TraceDiff& diff, std::string* why);

std::string diff_text(const TraceDiff& d, const std::string& base, const std::string& head, size_t limit);
std::string diff_markdown(const TraceDiff& d, const std::string& base, const std::string& head, size_t limit);
std::string diff_json(const TraceDiff& d, const std::string& base, const std::string& head);

}  // namespace loupe::prof
