// Data for what the timeline lays over the tracks, derived from the
// analysis report: a device's idle gaps as a lane (so that the same
// level-of-detail pass draws them), the critical path on the tracks it
// ran on, and where a trace starts for the comparison of two traces.
#pragma once

#include <cstdint>
#include <vector>

#include "loupe/prof/analysis.h"
#include "loupe/view/lane.h"
#include "loupe/view/track_list.h"

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

// A stretch of the critical path on the track it ran on: the thread's
// track, or the stream's. In time order, as the path's segments.
struct PathBar {
  size_t track = 0;  // index into TrackList::tracks
  int64_t start = 0, end = 0;
  prof::PathCategory category = prof::PathCategory::host_compute;
};
// The path's segments on the list's tracks; a segment on a thread or
// stream the list has no track for is left out.
std::vector<PathBar> critical_path_bars(const prof::CriticalPath& path, const TrackList& tracks);
// The first bar that ends after t (bars.size() if none).
size_t first_bar_after(const std::vector<PathBar>& bars, int64_t t);

// The time two traces are aligned at: the start of the first step, or of
// the first event when the trace has no steps.
int64_t alignment_origin(const prof::TraceModel& model);

}  // namespace loupe::view
