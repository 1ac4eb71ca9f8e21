// The per-step values `loupe diff` compares, of one run: its step times
// and, by name, each step's total time and count of device ops, host spans
// and launch calls. An event belongs to the step whose window holds its
// start: a device op to the step's device window where every step is
// linked to its device work (analysis.h, StepStats), else, like every host
// event, to the step's host range. A trace without steps is one step.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "loupe/prof/analysis.h"

namespace loupe::prof {

// One name's values by step index, in step order; steps without the name
// (value 0) are left out, so a name seen in few of many steps costs little.
using StepValues = std::vector<std::pair<uint32_t, double>>;
using ByName = std::map<std::string, StepValues>;

struct RunSeries {
  std::vector<int64_t> step_numbers;  // by step index
  std::vector<double> step_times;     // the judged steps' times (StepStats::judged_ns), queue fills left out
  ByName device_op_time, device_op_count, host_span_time, launch_count;
  size_t steps() const { return step_numbers.size(); }
};

RunSeries run_series(const TraceModel& model, const AnalysisReport& report);

// A name's values over all `steps` steps, zeros included.
std::vector<double> dense_values(const StepValues& values, size_t steps);
// Its value in step `index`, or with index < 0 its median over the steps.
double step_value(const StepValues& values, size_t steps, int64_t index);
// The median (the mean of the middle two of an even count); 0 when empty.
double median(std::vector<double> v);

}  // namespace loupe::prof
