// Level of detail: what of a lane to draw at the current zoom, in time
// proportional to the pixels drawn, not to the events in view.
//
// The visible range is found by binary search. An interval at least
// min_px wide is drawn as itself; a run of narrower ones, separated by
// gaps narrower than min_px, is drawn as one item that counts them (as
// Tracy does). Where a run ends (the first visible gap or wide interval)
// is one query of the lane's break pyramid (lane.h), so a lane costs
// O(items drawn * log n) whatever the number of events behind it.
#pragma once

#include <cstdint>
#include <vector>

#include "loupe/view/lane.h"
#include "loupe/view/time_axis.h"

namespace loupe::view {

struct DrawItem {
  float x0 = 0, x1 = 0;        // screen x; x1 >= x0 + 1
  uint32_t first = 0;          // lane-position of the first interval
  uint32_t count = 1;          // > 1: a merged run of `count` intervals
  int64_t start = 0, end = 0;  // time covered (of the run when merged)
};

// Appends the items of the lane visible on the axis to `out`, in x order.
void lane_items(const Lane& lane, const TimeAxis& axis, float min_px, std::vector<DrawItem>& out);

}  // namespace loupe::view
