// Series drawn as one vertical bar per pixel: counters and device memory.
//
// A series is a step function: each sample's value holds until the next
// sample. A pixel column shows the smallest and largest value the series
// takes over the column's time: the value holding at its left edge and
// every sample inside it. RangeMinMax answers "min and max of samples
// [i, j)" in O(16 * log16 n) from a pyramid of block minima and maxima
// (about one byte per sample), so a frame costs O(width * log n) however
// many samples the view covers.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "loupe/view/time_axis.h"

namespace loupe::view {

struct MinMax {
  double min = 0, max = 0;
  bool empty = true;
  void add(double v) {
    if (!std::isfinite(v)) return;  // a NaN or infinity in an untrusted file draws nothing
    if (empty) {
      min = max = v;
      empty = false;
    } else {
      min = v < min ? v : min;
      max = v > max ? v : max;
    }
  }
  void add(const MinMax& o) {
    if (o.empty) return;
    add(o.min);
    add(o.max);
  }
};

class RangeMinMax {
 public:
  static constexpr size_t kBlock = 16;
  RangeMinMax() = default;
  // values must outlive this object (it keeps the pointer, not a copy).
  RangeMinMax(const int64_t* values, size_t count);
  RangeMinMax(const double* values, size_t count);

  size_t size() const { return count_; }
  double value(size_t i) const { return ints_ ? double(ints_[i]) : doubles_[i]; }
  // Min and max of samples [i, j); empty when i >= j.
  MinMax query(size_t i, size_t j) const;

 private:
  void build();
  const int64_t* ints_ = nullptr;
  const double* doubles_ = nullptr;
  size_t count_ = 0;
  std::vector<std::vector<MinMax>> levels_;  // levels_[0]: blocks of kBlock samples
};

// One MinMax per pixel column of the axis (columns [0, width)), for the
// series (time sorted, one value per time, read through `values`): empty
// before the first sample; after the last one its value holds until
// `hold_until` and no further.
std::vector<MinMax> pixel_columns(const TimeAxis& axis, const int64_t* time, const RangeMinMax& values,
                                  int64_t hold_until);

}  // namespace loupe::view
