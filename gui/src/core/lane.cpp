#include "loupe/view/lane.h"

#include "loupe/view/gallop.h"

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

void index_lane(Lane& lane) {
  constexpr size_t B = Lane::kSkip;
  lane.start_sample.clear();
  lane.end_sample.clear();
  lane.break_max.clear();
  if (lane.size() <= B) return;
  size_t blocks = (lane.size() + B - 1) / B;
  lane.start_sample.reserve(blocks);
  lane.end_sample.reserve(blocks);
  for (size_t k = 0; k < lane.size(); k += B) {
    lane.start_sample.push_back(lane.start_at(k));
    lane.end_sample.push_back(lane.end_at(k));
  }
  std::vector<int64_t> level(blocks, INT64_MIN);
  for (size_t k = 0; k < lane.size(); ++k) level[k / B] = std::max(level[k / B], lane.break_at(k));
  lane.break_max.push_back(std::move(level));
  while (lane.break_max.back().size() > B) {
    const std::vector<int64_t>& below = lane.break_max.back();
    std::vector<int64_t> up((below.size() + B - 1) / B, INT64_MIN);
    for (size_t i = 0; i < below.size(); ++i) up[i / B] = std::max(up[i / B], below[i]);
    lane.break_max.push_back(std::move(up));
  }
}

namespace {

// The first entry at or after `from` of break_max[level] that is >= t
// (the level's size when none): finish the parent's block, else ask the
// level above which parent has one and look among its children.
size_t first_block_at_least(const Lane& lane, size_t level, size_t from, int64_t t) {
  constexpr size_t B = Lane::kSkip;
  const std::vector<int64_t>& lv = lane.break_max[level];
  size_t end = level + 1 < lane.break_max.size() ? std::min(lv.size(), (from / B + 1) * B) : lv.size();
  for (size_t i = from; i < end; ++i) {
    if (lv[i] >= t) return i;
  }
  if (end >= lv.size()) return lv.size();
  size_t parent = first_block_at_least(lane, level + 1, end / B, t);
  for (size_t i = parent * B; i < std::min(lv.size(), parent * B + B); ++i) {
    if (lv[i] >= t) return i;
  }
  return lv.size();
}

}  // namespace

size_t first_break(const Lane& lane, size_t from, int64_t threshold) {
  constexpr size_t B = Lane::kSkip;
  const size_t n = lane.size();
  if (lane.break_max.empty()) {
    for (size_t k = from; k < n; ++k) {
      if (lane.break_at(k) >= threshold) return k;
    }
    return n;
  }
  // The rest of from's block, then the first block holding a break.
  size_t k = from, block_end = std::min(n, (from / B + 1) * B);
  for (; k < block_end; ++k) {
    if (lane.break_at(k) >= threshold) return k;
  }
  if (k >= n) return n;
  size_t b = first_block_at_least(lane, 0, k / B, threshold);
  for (k = b * B; k < std::min(n, b * B + B); ++k) {
    if (lane.break_at(k) >= threshold) return k;
  }
  return n;
}

namespace {

// The first position k >= from whose key is >= t, for a key sorted along
// the lane and sampled every kSkip positions.
template <typename Key>
size_t search(const Lane& lane, const std::vector<int64_t>& sample, size_t from, int64_t t, Key key) {
  const size_t n = lane.size();
  if (from >= n) return n;
  size_t lo = from, hi = n;
  if (!sample.empty()) {
    // Blocks after the one holding `from`: position b * kSkip has key sample[b].
    // Galloping from b0: successive searches of a frame look a little
    // further each time, so the answer is usually a few blocks away.
    const size_t blocks = sample.size();
    size_t b0 = std::min(from / Lane::kSkip + 1, blocks);
    size_t b = gallop_lower_bound(sample.data(), b0, blocks, t);
    if (b < sample.size()) hi = std::min(n, b * Lane::kSkip);  // key there >= t
    if (b > b0) lo = std::max(lo, (b - 1) * Lane::kSkip + 1);  // key at (b-1)*kSkip < t
  }
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (key(mid) < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

}  // namespace

size_t first_starting_at(const Lane& lane, size_t from, int64_t t) {
  return search(lane, lane.start_sample, from, t, [&](size_t k) { return lane.start_at(k); });
}

size_t first_ending_at_or_after(const Lane& lane, size_t from, int64_t t) {
  if (!lane.ends_sorted || !lane.dur) return first_starting_at(lane, from, t);
  return search(lane, lane.end_sample, from, t, [&](size_t k) { return lane.end_at(k); });
}

size_t first_ending_after(const Lane& lane, int64_t t) {
  if (!lane.ends_sorted) {
    // Any interval ending after t starts after t - max_dur.
    size_t lo = first_starting_at(lane, 0, t - lane.max_dur);
    while (lo < lane.size() && lane.end_at(lo) <= t && lane.max_dur > 0) ++lo;
    return lo;
  }
  if (!lane.dur) return first_starting_at(lane, 0, t);
  return first_ending_at_or_after(lane, 0, t + 1);
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
    index_lane(lane);
    out.lanes.push_back(std::move(lane));
    out.group.push_back(b.group);
  }
  return out;
}

}  // namespace loupe::view
