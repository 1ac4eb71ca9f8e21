// What is under the mouse: found among the items drawn this frame, so the
// answer is always the thing the user sees (a merged run when it is one).
#pragma once

#include <cstddef>
#include <vector>

#include "loupe/view/level_of_detail.h"
#include "loupe/view/track_list.h"

namespace loupe::view {

// The index of the item under screen x in a lane's items (sorted by x, as
// lane_items makes them); an item narrower than 2 * slack is hit within
// `slack` pixels of it. Where two qualify, the one containing x wins, then
// the nearest. -1 when none.
long hit_item(const std::vector<DrawItem>& items, float x, float slack);

// Items of every lane of a track list for one frame: items[t][l] belongs
// to list.tracks[t].lanes[l].
struct FrameItems {
  std::vector<std::vector<std::vector<DrawItem>>> items;
  void reset(const TrackList& list);  // keeps allocations between frames
};

struct Hit {
  long track = -1, lane = -1, item = -1;
  bool ok() const { return item >= 0; }
};
// The lane under (x, y) (y relative to the timeline's top, as in the
// layout) and the item under x in it.
Hit hit_test(const TrackList& list, const FrameItems& frame, float x, float y, float slack);

}  // namespace loupe::view
