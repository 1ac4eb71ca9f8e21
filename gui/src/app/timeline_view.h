// The timeline: a ruler, then one scrolling column of tracks per open
// trace (two, one above the other, when comparing), with the analyses laid
// over them. Handles the timeline's mouse and keys.
#pragma once

#include <imgui.h>

#include "view_state.h"

namespace loupe::app {

inline constexpr float kGutterWidth = 210;  // track titles, left of the time axis
inline constexpr float kRulerHeight = 24;
inline constexpr float kMergePx = 3;        // events narrower than this merge into runs

// Draws into the current window at the cursor, `size` in all.
void draw_timelines(ViewState& s, ImVec2 size);

// Where the last frame drew things, in window pixels: for --screenshot's
// layout line and the screenshot test.
struct DrawnTrack {
  int doc = 0;
  size_t track = 0;
  float y0 = 0, y1 = 0;  // on screen, clipped to nothing: may lie outside the window
};
struct TimelineLayout {
  float x0 = 0, width = 0;  // the time axis
  float top = 0, bottom = 0;
  std::vector<DrawnTrack> tracks;
};
const TimelineLayout& last_timeline_layout();

}  // namespace loupe::app
