// Sets of time intervals: the sweep-line building block of the analyses.
#pragma once

#include <cstdint>
#include <vector>

namespace loupe::prof::analysis {

struct Interval {
  int64_t start, end;  // [start, end)
};

// A union of intervals, kept sorted and disjoint, with prefix sums of the
// lengths so that the covered length of any window costs O(log n).
class IntervalSet {
 public:
  IntervalSet() = default;
  // Any order, overlaps allowed; empty intervals are dropped.
  explicit IntervalSet(std::vector<Interval> intervals);
  // From intervals already sorted by start (overlaps allowed): linear.
  static IntervalSet from_sorted(const std::vector<Interval>& sorted);
  // The union of two sets: linear.
  static IntervalSet unite(const IntervalSet& a, const IntervalSet& b);
  // What of `a` lies outside `b`: linear.
  static IntervalSet subtract(const IntervalSet& a, const IntervalSet& b);

  const std::vector<Interval>& intervals() const { return parts_; }
  bool empty() const { return parts_.empty(); }
  int64_t length() const { return prefix_.empty() ? 0 : prefix_.back(); }
  // Length of the set inside [a, b).
  int64_t covered(int64_t a, int64_t b) const;
  // The start of the first part beginning at or after t; `none` if none.
  int64_t next_start(int64_t t, int64_t none) const;
  // The holes of the set inside [lo, hi) that are at least min_length long.
  std::vector<Interval> gaps(int64_t lo, int64_t hi, int64_t min_length) const;

 private:
  void finish();
  std::vector<Interval> parts_;
  std::vector<int64_t> prefix_;  // prefix_[i]: total length of parts_[0..i]
};

}  // namespace loupe::prof::analysis
