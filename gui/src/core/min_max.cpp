#include "loupe/view/min_max.h"

#include <algorithm>
#include <cmath>

#include "loupe/view/gallop.h"

namespace loupe::view {

RangeMinMax::RangeMinMax(const int64_t* values, size_t count) : ints_(values), count_(count) { build(); }
RangeMinMax::RangeMinMax(const double* values, size_t count) : doubles_(values), count_(count) { build(); }

void RangeMinMax::build() {
  size_t n = count_;
  if (n < kBlock * 2) return;
  std::vector<MinMax> level((n + kBlock - 1) / kBlock);
  for (size_t i = 0; i < n; ++i) level[i / kBlock].add(value(i));
  levels_.push_back(std::move(level));
  while (levels_.back().size() >= kBlock * 2) {
    const std::vector<MinMax>& below = levels_.back();
    std::vector<MinMax> up((below.size() + kBlock - 1) / kBlock);
    for (size_t i = 0; i < below.size(); ++i) up[i / kBlock].add(below[i]);
    levels_.push_back(std::move(up));
  }
}

MinMax RangeMinMax::query(size_t i, size_t j) const {
  MinMax r;
  j = std::min(j, count_);
  if (i >= j) return r;
  // Raw samples up to the first block boundary and after the last one.
  size_t level = 0;
  auto at = [&](size_t lvl, size_t k) -> MinMax {
    if (lvl == 0) {
      MinMax m;
      m.add(value(k));
      return m;
    }
    return levels_[lvl - 1][k];
  };
  size_t top = levels_.size();  // the highest level index usable (levels_ + raw)
  for (;;) {
    if (level == top || j - i < 2 * kBlock) {
      for (size_t k = i; k < j; ++k) r.add(at(level, k));
      return r;
    }
    while (i < j && i % kBlock) r.add(at(level, i++));
    while (j > i && j % kBlock) r.add(at(level, --j));
    if (i >= j) return r;
    i /= kBlock;
    j /= kBlock;
    ++level;
  }
}

std::vector<MinMax> pixel_columns(const TimeAxis& axis, const int64_t* time, const RangeMinMax& values,
                                  int64_t hold_until) {
  const size_t n = values.size();
  const int width = std::max(0, int(std::lround(axis.width)));
  std::vector<MinMax> cols(static_cast<size_t>(width));
  if (n == 0 || width == 0) return cols;
  auto first_at_or_after = [&](size_t from, double t) {
    // The first sample whose time is >= t (t fractional: compare as ceil),
    // by galloping from `from`: the next column's samples are near, and
    // probing near first keeps a column to a few cache misses.
    int64_t tc = int64_t(std::ceil(std::clamp(t, -9.0e18, 9.0e18)));
    return gallop_lower_bound(time, from, n, tc);
  };
  size_t i = first_at_or_after(0, axis.start_ns);
  for (int c = 0; c < width; ++c) {
    double c0 = axis.start_ns + double(c) * axis.ns_per_px;
    double c1 = c0 + axis.ns_per_px;
    if (double(hold_until) < c0 && i >= n) break;  // past the series' end
    size_t j = first_at_or_after(i, c1);
    MinMax m;
    // The value holding at the left edge, unless a sample sits right on it.
    if (i > 0 && (i == n || double(time[i]) > c0)) m.add(values.value(i - 1));
    m.add(values.query(i, j));
    cols[size_t(c)] = m;
    i = j;
  }
  return cols;
}

}  // namespace loupe::view
