#include "loupe/view/overlays.h"

#include <algorithm>
#include <map>
#include <tuple>

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

std::vector<PathBar> critical_path_bars(const prof::CriticalPath& path, const TrackList& tracks) {
  // (on_device, thread or device, stream) -> track
  std::map<std::tuple<bool, uint32_t, uint32_t>, size_t> track_of;
  for (size_t i = 0; i < tracks.tracks.size(); ++i) {
    const Track& t = tracks.tracks[i];
    if (t.kind == TrackKind::thread) track_of.try_emplace({false, t.thread, 0}, i);
    if (t.kind == TrackKind::stream) track_of.try_emplace({true, t.device, t.stream}, i);
  }
  std::vector<PathBar> out;
  out.reserve(path.segments.size());
  for (const prof::PathSegment& s : path.segments) {
    auto key = s.on_device ? std::make_tuple(true, s.device, s.stream) : std::make_tuple(false, s.thread, 0u);
    auto it = track_of.find(key);
    if (it != track_of.end()) out.push_back({it->second, s.start, s.end, s.category});
  }
  return out;
}

size_t first_bar_after(const std::vector<PathBar>& bars, int64_t t) {
  return size_t(std::partition_point(bars.begin(), bars.end(), [&](const PathBar& b) { return b.end <= t; }) -
                bars.begin());
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
