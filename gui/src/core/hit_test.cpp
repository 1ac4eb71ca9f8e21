#include "loupe/view/hit_test.h"

#include <algorithm>
#include <cmath>

namespace loupe::view {

long hit_item(const std::vector<DrawItem>& items, float x, float slack) {
  // The first item whose right edge (with slack) reaches x.
  auto it = std::partition_point(items.begin(), items.end(), [&](const DrawItem& d) { return d.x1 + slack < x; });
  long best = -1;
  float best_dist = 0;
  for (; it != items.end() && it->x0 - slack <= x; ++it) {
    float w = it->x1 - it->x0;
    bool inside = x >= it->x0 && x < it->x1;
    if (!inside && w >= 2 * slack) continue;  // wide items are hit only inside
    float dist = inside ? 0.0f : std::min(std::fabs(x - it->x0), std::fabs(x - it->x1));
    if (best < 0 || dist < best_dist) {
      best = long(it - items.begin());
      best_dist = dist;
    }
    if (inside) break;
  }
  return best;
}

void FrameItems::reset(const TrackList& list) {
  items.resize(list.tracks.size());
  for (size_t t = 0; t < list.tracks.size(); ++t) {
    items[t].resize(list.tracks[t].lanes.size());
    for (auto& v : items[t]) v.clear();
  }
}

Hit hit_test(const TrackList& list, const FrameItems& frame, float x, float y, float slack) {
  Hit h;
  // Tracks are laid out top to bottom: binary search on y.
  auto t = std::partition_point(list.tracks.begin(), list.tracks.end(), [&](const Track& tr) { return tr.y1 <= y; });
  if (t == list.tracks.end() || y < t->y0) return h;
  h.track = long(t - list.tracks.begin());
  if (size_t(h.track) >= frame.items.size()) return h;
  const auto& lanes = frame.items[size_t(h.track)];
  // Marker lanes share a row; try each lane whose row holds y.
  for (size_t l = 0; l < t->lanes.size() && l < lanes.size(); ++l) {
    const TrackLane& tl = t->lanes[l];
    if (y < tl.y0 || y >= tl.y1) continue;
    long item = hit_item(lanes[l], x, tl.marker_row ? std::max(slack, 4.0f) : slack);
    h.lane = long(l);
    if (item >= 0) {
      h.item = item;
      return h;
    }
  }
  return h;
}

}  // namespace loupe::view
