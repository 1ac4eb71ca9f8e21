// The timeline: a ruler, then one scrolling column of tracks per open
// trace (two, one above the other, when comparing), with the analyses laid
// over them. Handles the timeline's mouse and keys.
#pragma once

#include <imgui.h>

#include "view_state.h"

namespace loupe::app {

inline constexpr float kGutterWidth = 210;  // track titles, left of the time axis
inline constexpr float kRulerHeight = 24;
inline constexpr float kMergePx = 3;  // events narrower than this merge into runs

// Draws into the current window at the cursor, `size` in all, and keeps
// where it drew the tracks in `s.layout`.
void draw_timelines(ViewState& s, ImVec2 size);

}  // namespace loupe::app
