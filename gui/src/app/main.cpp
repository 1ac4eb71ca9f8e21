// loupe-view: the desktop viewer of loupe traces. See docs/viewer.md.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "headless.h"
#include "loupe/view/options.h"
#include "viewer.h"
#include "window.h"

using namespace loupe;

namespace {

int run_interactive(const view::ViewOptions& o) {
  std::unique_ptr<app::Window> window = app::open_window({o.width, o.height, true, "loupe-view"});
  if (!window) return 1;
  app::Viewer viewer(app::Window::post_empty_event);
  app::ViewState& s = viewer.state();
  viewer.set_remember_recent(true);
  if (!o.file.empty()) viewer.open(o.file, o.compare);
  if (!o.panel.empty()) app::show_panel(s, o.panel);
  // --zoom, --select-finding and --expand-rank apply once their trace (and
  // its analysis) is there.
  bool zoom_pending = o.zoom_given, finding_pending = o.select_finding > 0;
  std::vector<int64_t> expand_pending = o.expand_ranks;
  int frames_left = 3;
  std::string title;
  while (!window->should_close()) {
    // Nothing changes between events: wait for one rather than redraw.
    // A few frames follow each event, for ImGui to settle.
    if (frames_left <= 0) {
      window->wait_events(viewer.busy() ? 0.25 : 0);
      frames_left = 3;
    } else {
      window->poll_events();
    }
    for (const std::string& path : window->take_dropped_files()) {
      viewer.open(path);
      zoom_pending = finding_pending = false;
      expand_pending.clear();
    }
    if (!s.requested_open.empty()) {
      std::string path = s.requested_open;
      viewer.open(path);
      zoom_pending = finding_pending = false;
      expand_pending.clear();
    }
    if (viewer.poll()) frames_left = 3;
    // The window's title names what is open.
    std::string want = "loupe-view";
    if (!s.paths[0].empty()) want += " - " + std::filesystem::path(s.paths[0]).filename().string();
    if (s.compare) want += " vs " + std::filesystem::path(s.paths[1]).filename().string();
    if (want != title) window->set_title(title = want);
    window->frame([&](float w, float h) { viewer.frame(w, h); });
    window->swap();
    if (zoom_pending && s.doc(0) && s.fitted) {
      view::fit(s.axis, double(o.zoom_start - s.doc(0)->origin), double(o.zoom_end - s.doc(0)->origin));
      zoom_pending = false;
      frames_left = 3;
    }
    if (!expand_pending.empty() && s.doc(0) && s.doc(0)->analysis) {
      for (int64_t rank : expand_pending) {
        std::string why;
        if (!viewer.toggle_rank(0, rank, &why)) s.errors[0] = why;
      }
      expand_pending.clear();
      frames_left = 3;
    }
    if (finding_pending && s.doc(0) && s.doc(0)->analysis) {
      app::select_finding(s, 0, o.select_finding - 1);
      finding_pending = false;
      frames_left = 3;
    }
    --frames_left;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const auto start = std::chrono::steady_clock::now();
  view::ViewOptions o;
  try {
    o = view::parse_view_options(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "loupe-view: %s\n%s", e.what(), view::view_usage().c_str());
    return 2;
  }
  if (o.help) {
    std::printf("%s", view::view_usage().c_str());
    return 0;
  }
  if (!o.screenshot.empty()) return app::run_screenshot(o);
  if (o.bench_frames > 0) return app::run_bench_frames(o, start);
  return run_interactive(o);
}
