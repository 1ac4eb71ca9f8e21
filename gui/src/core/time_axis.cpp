#include "loupe/view/time_axis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace loupe::view {

void fit(TimeAxis& axis, double start, double end) {
  if (!(end > start)) {
    double mid = start;
    start = mid - 500;
    end = mid + 500;
  }
  axis.start_ns = start;
  axis.ns_per_px = std::max(kMinNsPerPx, (end - start) / double(std::max(axis.width, 1.0f)));
}

void zoom_at(TimeAxis& axis, float screen_x, double factor) {
  double t = axis.time(screen_x);
  axis.ns_per_px = std::max(kMinNsPerPx, axis.ns_per_px * factor);
  axis.start_ns = t - double(screen_x - axis.x0) * axis.ns_per_px;
}

void pan(TimeAxis& axis, float dx) { axis.start_ns -= double(dx) * axis.ns_per_px; }

void clamp(TimeAxis& axis, double lo, double hi) {
  if (!(hi > lo)) return;
  double margin = (hi - lo) * 0.1;
  double min_t = lo - margin, max_t = hi + margin;
  double span = max_t - min_t;
  double width = double(std::max(axis.width, 1.0f));
  if (axis.ns_per_px * width > span) axis.ns_per_px = span / width;
  if (axis.start_ns < min_t) axis.start_ns = min_t;
  if (axis.end_ns() > max_t) axis.start_ns = max_t - axis.ns_per_px * width;
}

double tick_step(double ns_per_px, float min_px) {
  double want = ns_per_px * double(min_px);
  double p = std::pow(10.0, std::floor(std::log10(std::max(want, 1e-3))));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (p * m >= want) return p * m;
  }
  return p * 10;
}

std::string ruler_label(double t, double step) {
  // The unit follows the magnitude of the time, the decimals the step.
  double a = std::fabs(t);
  const char* unit = "ns";
  double scale = 1;
  if (a >= 1e9 || (a == 0 && step >= 1e9)) {
    unit = "s";
    scale = 1e9;
  } else if (a >= 1e6 || (a == 0 && step >= 1e6)) {
    unit = "ms";
    scale = 1e6;
  } else if (a >= 1e3 || (a == 0 && step >= 1e3)) {
    unit = "us";
    scale = 1e3;
  }
  // As many decimals as make the step a whole number in the unit.
  int decimals = 0;
  double s = step / scale;
  while (decimals < 9 && std::fabs(s - std::round(s)) > 1e-6 * std::max(1.0, s)) {
    s *= 10;
    ++decimals;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f %s", decimals, t / scale, unit);
  return buf;
}

std::vector<Tick> ruler_ticks(const TimeAxis& axis, float min_px, double origin) {
  std::vector<Tick> ticks;
  double step = tick_step(axis.ns_per_px, min_px);
  // Every fifth tick is major and labelled.
  const int major_every = 5;
  double first = std::ceil((axis.start_ns - origin) / step);
  double last = std::floor((axis.end_ns() - origin) / step);
  if (last - first > 100000) return ticks;  // cannot happen with min_px >= 1; a guard
  for (double k = first; k <= last; k += 1) {
    double t = origin + k * step;
    Tick tick;
    tick.t = t;
    tick.x = axis.x(t);
    tick.major = std::fmod(std::fabs(k), double(major_every)) == 0;
    if (tick.major) tick.label = ruler_label(k == 0 ? 0.0 : k * step, step * major_every);  // never "-0"
    ticks.push_back(std::move(tick));
  }
  return ticks;
}

}  // namespace loupe::view
