#include "analysis/intervals.h"

#include <algorithm>

namespace loupe::prof::analysis {

IntervalSet::IntervalSet(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end(), [](const Interval& x, const Interval& y) { return x.start < y.start; });
  *this = from_sorted(intervals);
}

IntervalSet IntervalSet::from_sorted(const std::vector<Interval>& sorted) {
  IntervalSet s;
  for (const Interval& i : sorted) {
    if (i.end <= i.start) continue;
    if (!s.parts_.empty() && i.start <= s.parts_.back().end) {
      s.parts_.back().end = std::max(s.parts_.back().end, i.end);
    } else {
      s.parts_.push_back(i);
    }
  }
  s.finish();
  return s;
}

IntervalSet IntervalSet::unite(const IntervalSet& a, const IntervalSet& b) {
  std::vector<Interval> merged;
  merged.reserve(a.parts_.size() + b.parts_.size());
  std::merge(a.parts_.begin(), a.parts_.end(), b.parts_.begin(), b.parts_.end(), std::back_inserter(merged),
             [](const Interval& x, const Interval& y) { return x.start < y.start; });
  return from_sorted(merged);
}

IntervalSet IntervalSet::subtract(const IntervalSet& a, const IntervalSet& b) {
  IntervalSet out;
  size_t j = 0;
  for (Interval part : a.parts_) {
    // Parts of b that end before this part starts cannot cut it or any
    // later part of a (both are sorted and disjoint).
    while (j < b.parts_.size() && b.parts_[j].end <= part.start) ++j;
    for (size_t k = j; k < b.parts_.size() && b.parts_[k].start < part.end; ++k) {
      if (b.parts_[k].start > part.start) out.parts_.push_back({part.start, b.parts_[k].start});
      part.start = std::max(part.start, b.parts_[k].end);
    }
    if (part.start < part.end) out.parts_.push_back(part);
  }
  out.finish();
  return out;
}

void IntervalSet::finish() {
  prefix_.resize(parts_.size());
  int64_t total = 0;
  for (size_t i = 0; i < parts_.size(); ++i) prefix_[i] = total += parts_[i].end - parts_[i].start;
}

int64_t IntervalSet::covered(int64_t a, int64_t b) const {
  if (b <= a || parts_.empty()) return 0;
  // First part ending after a, and first part starting at or after b.
  auto first = std::partition_point(parts_.begin(), parts_.end(), [&](const Interval& p) { return p.end <= a; });
  auto last = std::partition_point(first, parts_.end(), [&](const Interval& p) { return p.start < b; });
  if (first == last) return 0;
  size_t i = size_t(first - parts_.begin()), j = size_t(last - parts_.begin()) - 1;
  int64_t total = prefix_[j] - (i == 0 ? 0 : prefix_[i - 1]);
  total -= std::max<int64_t>(0, a - parts_[i].start);  // clip the first part
  total -= std::max<int64_t>(0, parts_[j].end - b);    // and the last
  return total;
}

int64_t IntervalSet::next_start(int64_t t, int64_t none) const {
  auto it = std::partition_point(parts_.begin(), parts_.end(), [&](const Interval& p) { return p.start < t; });
  return it == parts_.end() ? none : it->start;
}

std::vector<Interval> IntervalSet::gaps(int64_t lo, int64_t hi, int64_t min_length) const {
  std::vector<Interval> out;
  int64_t cursor = lo;
  auto emit = [&](int64_t end) {
    if (end - cursor >= std::max<int64_t>(min_length, 1)) out.push_back({cursor, end});
  };
  for (const Interval& p : parts_) {
    if (p.end <= lo) continue;
    if (p.start >= hi) break;
    if (p.start > cursor) emit(p.start);
    cursor = std::max(cursor, p.end);
  }
  if (cursor < hi) emit(hi);
  return out;
}

}  // namespace loupe::prof::analysis
