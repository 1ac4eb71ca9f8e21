// The timeline's horizontal mapping between trace time (ns) and pixels,
// and the ruler's tick marks. Plain arithmetic, no GL: the viewer, its
// tests and the screenshot test all place things with these functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loupe::view {

struct TimeAxis {
  double start_ns = 0;   // time at the left edge of the drawing area
  double ns_per_px = 1;  // > 0
  float x0 = 0;          // screen x of the left edge
  float width = 1;       // pixels

  double end_ns() const { return start_ns + ns_per_px * width; }
  // Screen x of a time, and the time under a screen x.
  float x(double t) const { return x0 + float((t - start_ns) / ns_per_px); }
  double time(float screen_x) const { return start_ns + double(screen_x - x0) * ns_per_px; }
};

// The narrowest view: a few pixels per nanosecond is as deep as zoom goes.
inline constexpr double kMinNsPerPx = 0.01;

// Shows [start, end) across the axis' width (an empty range shows 1 us).
void fit(TimeAxis& axis, double start, double end);
// Zooms by `factor` (< 1 zooms in) keeping the time under screen_x fixed.
void zoom_at(TimeAxis& axis, float screen_x, double factor);
// Moves the view by dx pixels (positive drags the content to the right).
void pan(TimeAxis& axis, float dx);
// Keeps the view within [lo - margin, hi + margin] and no wider than it,
// where margin is a tenth of hi - lo.
void clamp(TimeAxis& axis, double lo, double hi);

struct Tick {
  float x = 0;
  double t = 0;  // the time the tick marks
  bool major = false;
  std::string label;  // major ticks only: relative to the label origin
};

// Ticks for a ruler: minor ticks at least min_px apart, every fifth (or
// second) one major and labelled with its time after `origin`.
std::vector<Tick> ruler_ticks(const TimeAxis& axis, float min_px, double origin);
// The tick step the ruler uses (1, 2 or 5 times a power of ten, in ns).
double tick_step(double ns_per_px, float min_px);
// A time as the ruler labels it, with the precision the step needs:
// "1.25 ms" for a 50 us step, "1.250 s" for a 1 ms step.
std::string ruler_label(double t, double step);

}  // namespace loupe::view
