#include "loupe/view/lane.h"

#include <algorithm>

namespace loupe::view {

Lane whole_lane(const int64_t* start, const int64_t* dur, size_t count) {
  PackedLanes p = pack_lanes(start, dur, count, nullptr, 1);
  if (p.lanes.empty()) {
    Lane l;
    l.start = start;
    l.dur = dur;
    l.identity = true;
    return l;
  }
  return std::move(p.lanes[0]);
}

size_t first_ending_after(const Lane& lane, int64_t t) {
  size_t lo = 0, hi = lane.size();
  if (!lane.ends_sorted) {
    // Any interval ending after t starts after t - max_dur.
    lo = first_starting_at(lane, 0, t - lane.max_dur);
    while (lo < hi && lane.end_at(lo) <= t && lane.max_dur > 0) ++lo;
    return lo;
  }
  if (!lane.dur) return first_starting_at(lane, 0, t);
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (lane.end_at(mid) <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

size_t first_starting_at(const Lane& lane, size_t from, int64_t t) {
  size_t lo = from, hi = lane.size();
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (lane.start_at(mid) < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

PackedLanes pack_lanes(const int64_t* start, const int64_t* dur, size_t count, const uint32_t* group,
                       size_t max_lanes) {
  max_lanes = std::max<size_t>(max_lanes, 1);
  struct Open {
    std::vector<size_t> lanes;  // indices into out, in creation order
  };
  struct Building {
    std::vector<uint32_t> index;
    int64_t last_end = INT64_MIN;
    int64_t max_dur = 0;
    bool ends_sorted = true;
    uint32_t group = 0;
  };
  std::vector<Building> building;
  // Groups are small numbers (depths); deeper ones than this share a group.
  constexpr uint32_t kMaxGroup = 255;
  std::vector<Open> by_group;
  for (size_t i = 0; i < count; ++i) {
    uint32_t g = group ? std::min(group[i], kMaxGroup) : 0;
    int64_t s = start[i], d = dur ? std::max<int64_t>(dur[i], 0) : 0;
    if (g >= by_group.size()) by_group.resize(g + 1);
    Open& open = by_group[g];
    size_t chosen = SIZE_MAX;
    for (size_t l : open.lanes) {
      // Intervals may touch; instants never overlap.
      if (building[l].last_end <= s) {
        chosen = l;
        break;
      }
    }
    if (chosen == SIZE_MAX) {
      if (open.lanes.size() < max_lanes) {
        chosen = building.size();
        building.push_back({});
        building.back().group = g;
        open.lanes.push_back(chosen);
      } else {
        chosen = open.lanes.back();
        building[chosen].ends_sorted = false;
      }
    }
    Building& b = building[chosen];
    b.index.push_back(uint32_t(i));
    b.last_end = std::max(b.last_end, s + d);
    b.max_dur = std::max(b.max_dur, d);
  }
  // Order lanes by group, keeping creation order within a group.
  std::vector<size_t> order(building.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return building[a].group < building[b].group; });
  PackedLanes out;
  for (size_t i : order) {
    Building& b = building[i];
    Lane lane;
    lane.start = start;
    lane.dur = dur;
    lane.count = b.index.size();
    lane.ends_sorted = b.ends_sorted;
    lane.max_dur = b.max_dur;
    lane.identity = lane.count == count;  // the lane is the whole track
    if (!lane.identity) lane.index = std::move(b.index);
    out.lanes.push_back(std::move(lane));
    out.group.push_back(b.group);
  }
  return out;
}

}  // namespace loupe::view
