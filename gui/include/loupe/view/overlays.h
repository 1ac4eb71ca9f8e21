// Data for what the timeline lays over the tracks, derived from the
// analysis report: a device's idle gaps as a lane (so that the same
// level-of-detail pass draws them), and where a trace starts for the
// comparison of two traces.
#pragma once

#include <cstdint>
#include <vector>

#include "loupe/prof/analysis.h"
#include "loupe/view/lane.h"

namespace loupe::view {

struct DeviceGaps {
  uint32_t device = 0;
  std::vector<int64_t> start, dur;
  std::vector<prof::GapCause> cause;
  Lane lane;  // over start/dur above

  DeviceGaps() = default;
  DeviceGaps(DeviceGaps&&) = default;  // the columns' buffers move with them
  DeviceGaps& operator=(DeviceGaps&&) = default;
  DeviceGaps(const DeviceGaps&) = delete;
  DeviceGaps& operator=(const DeviceGaps&) = delete;
};

// One entry per device of the report, with its gaps (report.devices[].gaps).
std::vector<DeviceGaps> device_gaps(const prof::AnalysisReport& report);

// The time two traces are aligned at: the start of the first step, or of
// the first event when the trace has no steps.
int64_t alignment_origin(const prof::TraceModel& model);

}  // namespace loupe::view
