#include "loupe/view/overlays.h"

#include <algorithm>

namespace loupe::view {

std::vector<DeviceGaps> device_gaps(const prof::AnalysisReport& report) {
  std::vector<DeviceGaps> out;
  for (const prof::DeviceIdle& d : report.devices) {
    DeviceGaps g;
    g.device = d.device;
    for (const prof::IdleGap& gap : d.gaps) {
      g.start.push_back(gap.start);
      g.dur.push_back(std::max<int64_t>(0, gap.end - gap.start));
      g.cause.push_back(gap.cause);
    }
    g.lane = whole_lane(g.start.data(), g.dur.data(), g.start.size());
    out.push_back(std::move(g));
  }
  return out;
}

int64_t alignment_origin(const prof::TraceModel& model) {
  bool any = false;
  int64_t first = 0;
  for (const prof::Steps& s : model.steps) {
    if (s.size() == 0) continue;
    if (!any || s.start[0] < first) first = s.start[0];
    any = true;
  }
  return any ? first : model.start_ns;
}

}  // namespace loupe::view
