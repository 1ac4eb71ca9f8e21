// The viewer's colours, as 32-bit RGBA packed the way Dear ImGui packs them
// (red in the low byte). GL-free so that the screenshot test can look for
// the exact colour of, say, an idle gap caused by compilation.
#pragma once

#include <cstdint>
#include <string_view>

#include "loupe/prof/analysis.h"
#include "loupe/prof/trace_format.h"

namespace loupe::view {

using Color = uint32_t;

constexpr Color rgba(uint8_t r, uint8_t g, uint8_t b, uint8_t a = 255) {
  return Color(r) | Color(g) << 8 | Color(b) << 16 | Color(a) << 24;
}
constexpr uint8_t red_of(Color c) { return uint8_t(c); }
constexpr uint8_t green_of(Color c) { return uint8_t(c >> 8); }
constexpr uint8_t blue_of(Color c) { return uint8_t(c >> 16); }

namespace palette {
inline constexpr Color background = rgba(24, 26, 30);
inline constexpr Color track_background = rgba(32, 35, 41);
inline constexpr Color gutter = rgba(40, 44, 52);
inline constexpr Color text = rgba(225, 228, 232);
inline constexpr Color text_dim = rgba(150, 156, 166);
inline constexpr Color ruler_tick = rgba(110, 116, 128);
inline constexpr Color grid = rgba(48, 52, 60);
inline constexpr Color merged = rgba(96, 104, 118);  // a run of narrow events
inline constexpr Color selection = rgba(255, 255, 255);
inline constexpr Color highlight = rgba(255, 214, 10);  // a name picked in a panel
inline constexpr Color range_band = rgba(90, 160, 255, 48);
inline constexpr Color finding_band = rgba(255, 120, 60, 40);
inline constexpr Color recompile = rgba(255, 64, 64);
inline constexpr Color sync_transfer = rgba(255, 72, 72);
inline constexpr Color async_transfer = rgba(92, 150, 112);
inline constexpr Color launch = rgba(120, 130, 150);
inline constexpr Color flow = rgba(255, 230, 120);
inline constexpr Color allocated = rgba(64, 156, 255, 200);
inline constexpr Color reserved = rgba(64, 156, 255, 70);
inline constexpr Color capacity = rgba(255, 90, 90);
inline constexpr Color peak = rgba(255, 196, 0);
inline constexpr Color out_of_memory = rgba(255, 40, 40);
inline constexpr Color counter = rgba(140, 200, 120);
inline constexpr Color collective = rgba(190, 120, 230);  // a process group's collective
}  // namespace palette

// Idle gaps on device tracks, keyed to their cause (docs/viewer.md).
Color gap_color(prof::GapCause cause);
// The critical path's stretches, by what bounds them (docs/viewer.md).
Color path_color(prof::PathCategory category);
// A memory lane's category of blocks, by the name the analysis gives it
// ("activation", "gradient", ...); the allocated colour for another.
Color memory_category_color(std::string_view category);
// Device operations by kind; copies by direction.
Color device_op_color(prof::DeviceOpKind kind, prof::CopyKind copy);
// Host spans: waits and compiles by kind, other spans by name, so that
// the same name has the same colour everywhere.
Color span_color(prof::SpanKind kind, uint32_t name_hash);
// A stable hash of a name, for span_color.
uint32_t name_hash(const char* text, size_t size);

}  // namespace loupe::view
