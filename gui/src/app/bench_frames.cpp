// --bench-frames N: how long a trace takes to appear, and how much CPU one
// frame costs at three zoom levels. Prints JSON lines for bench/run_viewer.py.
#include <imgui.h>
#include <time.h>

#include <GLFW/glfw3.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "headless.h"
#include "loupe/prof/safe_text.h"
#include "viewer.h"
#include "window.h"

namespace loupe::app {

namespace {

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = size_t(std::min<double>(double(v.size() - 1), std::ceil(p * double(v.size())) - 1));
  return v[i];
}

// The first frame, drawn and finished on the GPU, as someone opening the trace would see it.
void draw_first_frame(Window& window, Viewer& viewer, int w, int h) {
  window.begin_frame();
  viewer.frame(float(w), float(h));
  window.end_frame();
  window.swap();
  glFinish();
}

void print_first_frame(const Document& d, double first_frame) {
  nlohmann::json first = {{"metric", "first_frame"},
                          {"seconds", first_frame},
                          {"events", d.model.total_events()},
                          {"read_seconds", d.read_seconds},
                          {"tracks_seconds", d.tracks_seconds},
                          {"analysis_ready", bool(d.analysis)}};
  std::printf("%s\n", first.dump().c_str());
  std::fflush(stdout);
}

struct Zoom {
  const char* name;
  double span;  // 0: the whole trace
};

// Milliseconds per measured frame, and the vertices the last one drew.
struct FrameTimes {
  std::vector<double> cpu, wall;
  size_t vertices = 0;
};

FrameTimes time_frames(Window& window, Viewer& viewer, const Zoom& z, double mid, int frames, int w, int h) {
  ViewState& s = viewer.state();
  auto place = [&] {
    if (z.span == 0) zoom_to_fit(s);
    else view::fit(s.axis, mid - z.span / 2, mid + z.span / 2);
  };
  // The pointer rests over the middle of the timeline, so that hit
  // testing and a tooltip are part of every frame.
  FrameTimes times;
  for (int i = -3; i < frames; ++i) {
    window.poll_events();
    if (i <= -2) place();
    // Nudge the view a pixel each frame: nothing is reused between frames.
    if (i >= 0) view::pan(s.axis, (i % 2) ? -1.0f : 1.0f);
    float mouse[2] = {s.axis.x0 + s.axis.width * 0.5f, float(h) * 0.3f};
    auto t0 = std::chrono::steady_clock::now();
    double c0 = thread_cpu_seconds();
    window.begin_frame(mouse);
    viewer.frame(float(w), float(h));
    ImGui::Render();
    double c1 = thread_cpu_seconds();
    double w1 = since(t0);
    window.draw_frame();
    window.swap();
    if (i >= 0) {
      times.cpu.push_back((c1 - c0) * 1e3);
      times.wall.push_back(w1 * 1e3);
      times.vertices = size_t(ImGui::GetDrawData()->TotalVtxCount);
    }
  }
  return times;
}

void print_zoom_row(const ViewState& s, const Zoom& z, int frames, const FrameTimes& times) {
  nlohmann::json row = {{"metric", "frame"},
                        {"zoom", z.name},
                        {"span_ns", s.axis.ns_per_px * s.axis.width},
                        {"frames", frames},
                        {"cpu_ms_p50", percentile(times.cpu, 0.5)},
                        {"cpu_ms_p95", percentile(times.cpu, 0.95)},
                        {"wall_ms_p50", percentile(times.wall, 0.5)},
                        {"wall_ms_p95", percentile(times.wall, 0.95)},
                        {"vertices", times.vertices}};
  std::printf("%s\n", row.dump().c_str());
  std::fflush(stdout);
}

}  // namespace

int run_bench_frames(const view::ViewOptions& o, std::chrono::steady_clock::time_point process_start) {
  std::unique_ptr<Window> window = open_window({o.width, o.height, true, "loupe-view"});
  if (!window) return 1;
  glfwSwapInterval(0);  // measure work, not the display's refresh
  Viewer viewer(Window::post_empty_event);
  viewer.open(o.file);
  viewer.finish_loading();  // the analyses go on in the background, as when used
  ViewState& s = viewer.state();
  if (!s.errors[0].empty()) {
    std::fprintf(stderr, "loupe-view: %s\n", prof::printable(s.errors[0]).c_str());
    return 2;
  }
  int w = 0, h = 0;
  window->framebuffer_size(&w, &h);
  draw_first_frame(*window, viewer, w, h);
  const double first_frame = since(process_start);
  const Document& d = *s.doc(0);
  print_first_frame(d, first_frame);

  // Frames are measured with the analyses' overlays in place.
  viewer.finish_jobs();
  const double lo = d.view_start(), hi = d.view_end(), mid = (lo + hi) / 2, span = hi - lo;
  const Zoom zooms[] = {{"widest", 0}, {"mid", span / 100}, {"narrow", span / 10000}};
  for (const Zoom& z : zooms) {
    FrameTimes times = time_frames(*window, viewer, z, mid, o.bench_frames, w, h);
    print_zoom_row(s, z, o.bench_frames, times);
  }
  return 0;
}

}  // namespace loupe::app
