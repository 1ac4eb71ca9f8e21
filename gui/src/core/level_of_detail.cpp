#include "loupe/view/level_of_detail.h"

#include <algorithm>
#include <cmath>

namespace loupe::view {

namespace {

// The first lane-position at or after `from` whose interval ends at or
// after t. Ends are sorted in an ordinary lane; in an overlapping one the
// start stands in for it (an approximation only such lanes pay for).
size_t first_ending_at_or_after(const Lane& lane, size_t from, int64_t t) {
  if (!lane.ends_sorted || !lane.dur) return first_starting_at(lane, from, t);
  size_t lo = from, hi = lane.size();
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (lane.end_at(mid) < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

int64_t ceil_ns(double t) { return int64_t(std::ceil(std::min(t, 9.0e18))); }

}  // namespace

void lane_items(const Lane& lane, const TimeAxis& axis, float min_px, std::vector<DrawItem>& out) {
  const size_t n = lane.size();
  if (n == 0) return;
  min_px = std::max(min_px, 1.0f);
  const int64_t t0 = int64_t(std::floor(axis.start_ns));
  const int64_t t1 = ceil_ns(axis.end_ns());
  // Time spanned by min_px, at least 1 ns so that every step advances.
  const int64_t min_ns = std::max<int64_t>(1, ceil_ns(axis.ns_per_px * min_px));
  size_t k = first_ending_after(lane, t0);
  while (k < n) {
    const int64_t s = lane.start_at(k);
    if (s >= t1) break;
    const int64_t e = lane.end_at(k);
    if (e < t0 || (e == t0 && e > s)) {  // only in an overlapping lane
      ++k;
      continue;
    }
    const float x0 = axis.x(double(s));
    if (e - s >= min_ns) {
      DrawItem item{x0, std::max(axis.x(double(e)), x0 + 1.0f), uint32_t(k), 1, s, e};
      out.push_back(item);
      ++k;
      continue;
    }
    // A narrow interval: grow a run from it.
    size_t j = k + 1;
    int64_t run_end = e;
    for (;;) {
      // Everything ending within min_ns of the run lies inside its pixels.
      size_t j2 = first_ending_at_or_after(lane, j, run_end + min_ns);
      if (j2 > j) {
        run_end = std::max(run_end, lane.end_at(j2 - 1));
        j = j2;
      }
      if (j >= n) break;
      const int64_t ns = lane.start_at(j), ne = lane.end_at(j);
      // A visible gap before the next interval, or a wide one: the run ends.
      if (ns >= run_end + min_ns || ne - ns >= min_ns || ns >= t1) break;
      run_end = std::max(run_end, ne);
      ++j;
    }
    DrawItem item{x0, std::max(axis.x(double(run_end)), x0 + 1.0f), uint32_t(k), uint32_t(j - k), s, run_end};
    out.push_back(item);
    k = j;
  }
}

}  // namespace loupe::view
