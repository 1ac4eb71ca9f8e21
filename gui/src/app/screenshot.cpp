#include <fmt/format.h>
#include <stb/stb_image_write.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "headless.h"
#include "loupe/prof/output_file.h"
#include "loupe/prof/safe_text.h"
#include "timeline_view.h"
#include "viewer.h"
#include "window.h"

namespace loupe::app {

namespace {

const char* kind_name(view::TrackKind k) {
  switch (k) {
    case view::TrackKind::thread: return "thread";
    case view::TrackKind::stream: return "stream";
    case view::TrackKind::memory: return "memory";
    case view::TrackKind::counter: return "counter";
    case view::TrackKind::collectives: return "collectives";
  }
  return "?";
}

// Where the frame put things, so that scripts (and the screenshot test)
// can find them in the picture: one JSON line on stdout.
std::string layout_json(ViewState& s, const std::string& png, int width, int height) {
  const TimelineLayout& l = s.layout;
  nlohmann::json doc;
  doc["png"] = png;
  doc["width"] = width;
  doc["height"] = height;
  const Document* d0 = s.doc(0);
  doc["axis"] = {{"x0", l.x0},
                 {"width", l.width},
                 {"start_ns", s.axis.start_ns + (d0 ? double(d0->origin) : 0.0)},
                 {"ns_per_px", s.axis.ns_per_px}};
  nlohmann::json tracks = nlohmann::json::array();
  for (const DrawnTrack& t : l.tracks) {
    const Document* d = s.doc(t.doc);
    if (!d || t.track >= d->tracks.tracks.size()) continue;
    const view::Track& tr = d->tracks.tracks[t.track];
    tracks.push_back({{"doc", t.doc},
                      {"title", tr.title},
                      {"kind", kind_name(tr.kind)},
                      {"device", tr.device},
                      {"stream", tr.stream},
                      {"thread", tr.thread},
                      {"y0", t.y0},
                      {"y1", t.y1}});
    if (!tr.category_names.empty()) tracks.back()["categories"] = tr.category_names;  // stacked, bottom first
  }
  doc["tracks"] = tracks;
  if (s.memory_pick) {  // what a click on a memory lane listed
    const prof::LiveMemory& live = s.memory_pick->live;
    nlohmann::json sites = nlohmann::json::array();
    for (const prof::LiveSite& site : live.sites) sites.push_back({{"site", site.site}, {"bytes", site.bytes}});
    doc["memory_pick"] = {{"device", s.memory_pick->device},
                          {"time_ns", s.memory_pick->time},
                          {"allocated", live.allocated},
                          {"sites", sites}};
  }
  return doc.dump();
}

// The PNG goes through OutputFile like every file loupe writes: it never
// replaces what is not a regular file, and a failed write leaves nothing.
void write_png(const std::string& path, int w, int h, const std::vector<uint8_t>& pixels) {
  prof::OutputFile out(path);
  auto write = [](void* file, void* data, int size) {
    std::fwrite(data, 1, size_t(size), static_cast<std::FILE*>(file));
  };
  if (!stbi_write_png_to_func(write, out.stream(), w, h, 4, pixels.data(), w * 4)) {
    throw std::runtime_error(fmt::format("{}: cannot encode the PNG", path));
  }
  out.commit();
}

}  // namespace

int run_screenshot(const view::ViewOptions& o) {
  // Read (and analyse) first: a bad trace is reported without a display.
  Viewer viewer(nullptr);
  viewer.open(o.file, o.compare);
  viewer.finish_jobs();
  ViewState& s = viewer.state();
  for (int i = 0; i < s.doc_count(); ++i) {
    if (!s.errors[size_t(i)].empty() && !std::getenv("LOUPE_VIEW_SHOW_ERRORS")) {
      std::fprintf(stderr, "loupe-view: %s\n", prof::printable(s.errors[size_t(i)]).c_str());
      return 2;
    }
  }
  std::unique_ptr<Window> window = open_window({o.width, o.height, false, "loupe-view"});
  if (!window) return 1;
  const float mouse[2] = {o.mouse_x, o.mouse_y};
  auto frame = [&] { window->frame([&](float w, float h) { viewer.frame(w, h); }, o.mouse_given ? mouse : nullptr); };
  frame();  // lays the window out: the time axis learns its width
  for (int64_t rank : o.expand_ranks) {
    std::string why;
    if (!viewer.toggle_rank(0, rank, &why)) {
      std::fprintf(stderr, "loupe-view: --expand-rank %lld: %s\n", static_cast<long long>(rank),
                   prof::printable(why).c_str());
      return 2;
    }
  }
  if (o.select_finding > 0) {
    const Document* d = s.doc(0);
    size_t n = d && d->analysis ? d->analysis->report.findings.size() : 0;
    if (size_t(o.select_finding) > n) {
      std::fprintf(stderr, "loupe-view: --select-finding %d: %s has %zu finding%s\n", o.select_finding, o.file.c_str(),
                   n, n == 1 ? "" : "s");
      return 2;
    }
    select_finding(s, 0, o.select_finding - 1);
  }
  if (!o.panel.empty()) show_panel(s, o.panel);
  if (o.zoom_given) {
    const Document* d = s.doc(0);
    double origin = d ? double(d->origin) : 0;
    view::fit(s.axis, double(o.zoom_start) - origin, double(o.zoom_end) - origin);
  }
  if (o.click_given) {  // the pointer there, the button down for a frame, then up: a click
    const float at[2] = {o.click_x, o.click_y};
    for (bool down : {false, true, false}) {
      window->swap();
      window->frame([&](float w, float h) { viewer.frame(w, h); }, at, down);
    }
  }
  // A few frames: windows, tables and tabs settle over the first ones.
  for (int i = 0; i < 3; ++i) {
    window->swap();
    frame();
  }
  int w = 0, h = 0;
  std::vector<uint8_t> pixels = window->read_pixels(&w, &h);
  try {
    write_png(o.screenshot, w, h, pixels);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loupe-view: %s\n", prof::printable(e.what()).c_str());
    return 1;
  }
  std::printf("%s\n", layout_json(s, o.screenshot, w, h).c_str());
  return 0;
}

}  // namespace loupe::app
