#include "loupe/view/level_of_detail.h"

#include <algorithm>
#include <cmath>

namespace loupe::view {

namespace {

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
    // A narrow interval: the run goes on to the first visible gap or wide
    // interval (one query, however many intervals the run covers).
    const size_t j = first_break(lane, k + 1, min_ns);
    const int64_t run_end = std::max(e, lane.end_at(j - 1));
    DrawItem item{x0, std::max(axis.x(double(run_end)), x0 + 1.0f), uint32_t(k), uint32_t(j - k), s, run_end};
    out.push_back(item);
    k = j;
  }
}

}  // namespace loupe::view
