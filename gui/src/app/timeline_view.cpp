#include "timeline_view.h"

#include <GLFW/glfw3.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <deque>

#include "loupe/prof/units.h"
#include "loupe/view/event_details.h"
#include "loupe/view/lane_kinds.h"
#include "loupe/view/palette.h"

namespace loupe::app {

namespace {

using view::Color;
using view::DrawItem;
using view::LaneKind;
using view::TimeAxis;
using view::Track;
using view::TrackKind;
using view::TrackLane;
namespace palette = view::palette;

Color scale(Color c, float f) {
  auto ch = [&](int shift) { return Color(std::min(255.0f, float((c >> shift) & 0xff) * f)) << shift; };
  return ch(0) | ch(8) | ch(16) | (c & 0xff000000u);
}

Color with_alpha(Color c, uint8_t a) { return (c & 0x00ffffffu) | Color(a) << 24; }

// Text inside a box, clipped to it, when it fits at least a few letters.
void label(ImDrawList* dl, float x0, float y0, float x1, float y1, const std::string& text, Color col) {
  if (x1 - x0 < 24 || text.empty()) return;
  ImFont* font = ImGui::GetFont();
  float size = ImGui::GetFontSize();
  ImVec4 clip(x0 + 2, y0, x1 - 2, y1);
  dl->AddText(font, size, ImVec2(x0 + 3, y0 + (y1 - y0 - size) * 0.5f), col, text.data(), text.data() + text.size(), 0,
              &clip);
}

struct Canvas {
  ImDrawList* dl = nullptr;
  float x0 = 0, x1 = 0;                 // the time axis on screen
  float left = 0;                       // the gutter's left edge
  float top = 0;                        // screen y of layout y = 0
  float clip_top = 0, clip_bottom = 0;  // the visible part of the child
};

void draw_marker(ImDrawList* dl, float x, float y0, float y1, Color col, LaneKind kind) {
  float h = y1 - y0;
  if (kind == LaneKind::recompiles) {
    dl->AddTriangleFilled(ImVec2(x - h * 0.6f, y0), ImVec2(x + h * 0.6f, y0), ImVec2(x, y1), col);
  } else {
    float c = (y0 + y1) * 0.5f, r = h * 0.45f;
    dl->AddQuadFilled(ImVec2(x, c - r), ImVec2(x + r, c), ImVec2(x, c + r), ImVec2(x - r, c), col);
  }
}

void draw_lane(const Canvas& cv, const Document& d, const TrackLane& tl, const std::vector<DrawItem>& items) {
  ImDrawList* dl = cv.dl;
  float y0 = cv.top + tl.y0, y1 = cv.top + tl.y1;
  for (const DrawItem& it : items) {
    float x0 = std::max(it.x0, cv.x0 - 2), x1 = std::min(it.x1, cv.x1 + 2);
    size_t e = tl.lane.event(it.first);
    Color col = view::event_color(d.model, tl, e);
    if (tl.marker_row) {
      draw_marker(dl, it.x0, y0, y1, it.count > 1 ? scale(col, 0.8f) : col, tl.kind);
      continue;
    }
    if (it.count > 1) col = scale(col, 0.7f);
    dl->AddRectFilled(ImVec2(x0, y0 + 1), ImVec2(x1, y1 - 1), col);
    // An edge, so that neighbours touching end to start stay apart.
    if (x1 - x0 >= 4) dl->AddRect(ImVec2(x0, y0 + 1), ImVec2(x1, y1 - 1), scale(col, 0.55f));
    if (x1 - x0 >= 24) {
      std::string text =
          it.count > 1 ? prof::format_count(it.count) + " events" : view::event_name(d.model, tl.kind, tl.table, e);
      if (tl.kind == LaneKind::transfers && it.count == 1) {
        text = view::describe_event(d.model, tl.kind, tl.table, e).title;
      }
      label(dl, x0, y0, x1, y1, text, palette::text);
    }
  }
}

// A memory lane's vertical scale: bytes to y, from the bottom y1 up to y0.
struct MemoryScale {
  float y0 = 0, y1 = 0;
  double vmax = 1;
  float y(double v) const { return y1 - float(v / vmax) * (y1 - y0); }
};

// A series as a filled area, one column per pixel; runs of columns with
// the same top become one rectangle.
void fill_series(const Canvas& cv, const TimeAxis& axis, int64_t end_ns, const MemoryScale& sc, const view::Series& s,
                 Color col) {
  std::vector<view::MinMax> cols = view::pixel_columns(axis, s.time, s.values, end_ns);
  size_t c = 0;
  while (c < cols.size()) {
    if (cols[c].empty) {
      ++c;
      continue;
    }
    size_t e = c + 1;
    while (e < cols.size() && !cols[e].empty && cols[e].max == cols[c].max) ++e;
    cv.dl->AddRectFilled(ImVec2(cv.x0 + float(c), sc.y(cols[c].max)), ImVec2(cv.x0 + float(e), sc.y1), col);
    c = e;
  }
}

// The trace's blocks by category, stacked from the bottom of the allocated
// area (what stays above them is unknown or held from before the trace),
// and the key of their colours in the row above the plot.
void draw_categories(const Canvas& cv, const Document& d, const Track& t, const TimeAxis& axis, const MemoryScale& sc) {
  for (size_t k = t.categories.size(); k-- > 0;)
    fill_series(cv, axis, d.model.end_ns, sc, t.categories[k], view::memory_category_color(t.category_names[k]));
  float x = cv.x0 + 4;
  auto key = [&](const std::string& name, Color col) {
    float y = sc.y0 - view::TrackMetrics{}.legend;
    cv.dl->AddRectFilled(ImVec2(x, y + 2), ImVec2(x + 9, y + 11), col);
    cv.dl->AddText(ImVec2(x + 12, y - 2), palette::text, name.c_str());
    x += 12 + ImGui::CalcTextSize(name.c_str()).x + 10;
  };
  if (t.categories.empty()) return;
  for (const std::string& name : t.category_names) key(name, view::memory_category_color(name));
  key("unknown or held before the trace", palette::allocated);
}

// Each out-of-memory error (a line across the lane and the request) and
// the peak of memory in use.
void draw_memory_marks(const Canvas& cv, const Document& d, const Track& t, const TimeAxis& axis,
                       const MemoryScale& sc) {
  ImDrawList* dl = cv.dl;
  const prof::MemoryEvents& me = d.model.memory[t.table];
  for (size_t i : t.out_of_memory) {
    float x = axis.x(double(me.time[i]));
    if (x < cv.x0 - 4 || x > cv.x1 + 4) continue;
    dl->AddLine(ImVec2(x, sc.y0), ImVec2(x, sc.y1), palette::out_of_memory, 2.0f);
    std::string text = "out of memory: " + prof::format_bytes(me.bytes[i]) + " requested";
    float width = ImGui::CalcTextSize(text.c_str()).x;
    float tx = x + 4 + width <= cv.x1 ? x + 4 : x - 4 - width;  // left of the line at the right edge
    dl->AddText(ImVec2(tx, sc.y0 + 16), palette::out_of_memory, text.c_str());
  }
  if (t.allocated.count == 0) return;
  float x = axis.x(double(t.allocated.time[t.allocated.max_index]));
  if (x < cv.x0 - 4 || x > cv.x1 + 4) return;
  float y = sc.y(t.allocated.max_value);
  dl->AddTriangleFilled(ImVec2(x - 5, y - 9), ImVec2(x + 5, y - 9), ImVec2(x, y), palette::peak);
  std::string text = "peak " + prof::format_bytes(int64_t(t.allocated.max_value));
  dl->AddText(ImVec2(x + 7, std::max(sc.y0, y - 14)), palette::peak, text.c_str());
}

// Memory in use and reserved as filled areas, in use split by category
// where the trace tells; the capacity as a line; the peak and each
// out-of-memory error marked.
void draw_memory(const Canvas& cv, const Document& d, const Track& t, const TimeAxis& axis) {
  ImDrawList* dl = cv.dl;
  float key = t.categories.empty() ? 0 : view::TrackMetrics{}.legend;
  MemoryScale sc{.y0 = cv.top + t.y0 + key + 2, .y1 = cv.top + t.y1};
  sc.vmax = std::max(t.allocated.max_value, t.reserved.max_value) * 1.1;
  bool capacity_on_scale = t.capacity > 0 && double(t.capacity) <= 2 * sc.vmax;
  if (capacity_on_scale) sc.vmax = double(t.capacity) * 1.05;
  if (sc.vmax <= 0) sc.vmax = 1;
  fill_series(cv, axis, d.model.end_ns, sc, t.reserved, palette::reserved);
  fill_series(cv, axis, d.model.end_ns, sc, t.allocated, palette::allocated);
  draw_categories(cv, d, t, axis, sc);
  if (capacity_on_scale) {
    float yc = sc.y(double(t.capacity));
    dl->AddLine(ImVec2(cv.x0, yc), ImVec2(cv.x1, yc), palette::capacity, 1.5f);
    label(dl, cv.x1 - 170, yc, cv.x1, yc + 14, "capacity " + prof::format_bytes(t.capacity), palette::capacity);
  } else if (t.capacity > 0) {
    label(dl, cv.x1 - 220, sc.y0, cv.x1, sc.y0 + 14, "capacity " + prof::format_bytes(t.capacity) + " (off scale)",
          palette::text_dim);
  }
  draw_memory_marks(cv, d, t, axis, sc);
}

void draw_counter(const Canvas& cv, const Document& d, const Track& t, const TimeAxis& axis) {
  ImDrawList* dl = cv.dl;
  float y0 = cv.top + t.y0 + 3, y1 = cv.top + t.y1 - 1;
  view::MinMax all = t.value.values.query(0, t.value.count);
  double lo = std::min(0.0, all.min), hi = all.max;
  if (!(hi > lo)) hi = lo + 1;
  auto y_of = [&](double v) { return y1 - float((v - lo) / (hi - lo)) * (y1 - y0); };
  std::vector<view::MinMax> cols = view::pixel_columns(axis, t.value.time, t.value.values, d.model.end_ns);
  for (size_t c = 0; c < cols.size(); ++c) {
    if (cols[c].empty) continue;
    float ya = y_of(cols[c].max), yb = y_of(cols[c].min);
    dl->AddRectFilled(ImVec2(cv.x0 + float(c), ya), ImVec2(cv.x0 + float(c) + 1, std::max(yb, ya + 1.5f)),
                      palette::counter);
  }
  std::string range = fmt::format("{:.4g} .. {:.4g}", all.min, all.max);
  dl->AddText(ImVec2(cv.x1 - ImGui::CalcTextSize(range.c_str()).x - 4, y0), palette::text_dim, range.c_str());
}

// The value of a step-function series at time t (false before its first sample).
bool series_at(const view::Series& s, double t, double* v) {
  size_t i = size_t(std::upper_bound(s.time, s.time + s.count, int64_t(std::floor(t))) - s.time);
  if (i == 0) return false;
  *v = s.values.value(i - 1);
  return true;
}

void tooltip_lines(const view::EventDetails& det) {
  ImGui::TextUnformatted(det.title.c_str());
  ImGui::Separator();
  for (const auto& [what, value] : det.lines) {
    ImGui::TextColored(ImVec4(0.6f, 0.63f, 0.68f, 1), "%s", what.c_str());
    ImGui::SameLine(110);
    ImGui::TextUnformatted(value.c_str());
  }
}

bool is_flow_kind(LaneKind k) {
  return k == LaneKind::launches || k == LaneKind::device_ops || k == LaneKind::transfers;
}

void update_flow(ViewState& s, const Selection& from) {
  if (s.flow.from.same(from.doc, from.kind, from.table, from.index)) return;
  s.flow = FlowCache{};
  s.flow.from = from;
  const Document* d = s.docs[size_t(from.doc)].get();
  if (!d) return;
  std::optional<view::EventRef> to;
  if (from.kind == LaneKind::launches) {
    to = view::device_op_of_launch(d->model, from.table, uint32_t(from.index));
    s.flow.to_kind = LaneKind::device_ops;
  } else if (from.kind == LaneKind::transfers) {
    to = view::device_op_of_transfer(d->model, from.table, uint32_t(from.index));
    s.flow.to_kind = LaneKind::device_ops;
  } else {
    to = view::launch_of_device_op(d->model, from.table, uint32_t(from.index));
    s.flow.to_kind = LaneKind::launches;
  }
  if (to) {
    s.flow.found = true;
    s.flow.to = *to;
  }
}

// Screen rectangle of an event, from its lane and times (false if no lane holds it).
bool event_rect(const Canvas& cv, const Document& d, const TimeAxis& axis, LaneKind kind, uint32_t table, size_t index,
                ImVec2* a, ImVec2* b) {
  view::EventLocation where;
  if (!view::locate_event(d.tracks, kind, table, index, &where)) return false;
  const TrackLane& tl = d.tracks.tracks[where.track].lanes[where.lane];
  float x0 = axis.x(double(tl.lane.start_at(where.position)));
  float x1 = std::max(axis.x(double(tl.lane.end_at(where.position))), x0 + 1);
  *a = ImVec2(std::max(x0, cv.x0 - 4), cv.top + tl.y0);
  *b = ImVec2(std::min(x1, cv.x1 + 4), cv.top + tl.y1);
  return true;
}

void handle_keys(ViewState& s) {
  ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput || io.KeyCtrl || io.KeyAlt || io.KeySuper) return;
  float mid = s.axis.x0 + s.axis.width * 0.5f;
  if (ImGui::IsKeyPressed(GLFW_KEY_F, false)) zoom_to_fit(s);
  if (ImGui::IsKeyPressed(GLFW_KEY_Z, false)) zoom_to_selection(s);
  if (ImGui::IsKeyPressed(GLFW_KEY_ESCAPE, false)) {
    s.has_range = false;
    s.selection = {};
    s.selected_finding = -1;
  }
  if (ImGui::IsKeyPressed(GLFW_KEY_W) || ImGui::IsKeyPressed(GLFW_KEY_EQUAL) || ImGui::IsKeyPressed(GLFW_KEY_KP_ADD))
    view::zoom_at(s.axis, mid, 0.8);
  if (ImGui::IsKeyPressed(GLFW_KEY_S) || ImGui::IsKeyPressed(GLFW_KEY_MINUS) ||
      ImGui::IsKeyPressed(GLFW_KEY_KP_SUBTRACT))
    view::zoom_at(s.axis, mid, 1.25);
  if (ImGui::IsKeyPressed(GLFW_KEY_A) || ImGui::IsKeyPressed(GLFW_KEY_LEFT)) view::pan(s.axis, s.axis.width * 0.1f);
  if (ImGui::IsKeyPressed(GLFW_KEY_D) || ImGui::IsKeyPressed(GLFW_KEY_RIGHT)) view::pan(s.axis, -s.axis.width * 0.1f);
}

void draw_ruler(ViewState& s, ImVec2 pos, float width) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  float x0 = s.axis.x0, x1 = s.axis.x0 + s.axis.width;
  dl->AddRectFilled(pos, ImVec2(pos.x + width, pos.y + kRulerHeight), palette::gutter);
  std::string what = s.compare ? "time since first step" : "trace time";
  dl->AddText(ImVec2(pos.x + 6, pos.y + 5), palette::text_dim, what.c_str());
  dl->PushClipRect(ImVec2(x0, pos.y), ImVec2(x1, pos.y + kRulerHeight), true);
  for (const view::Tick& t : view::ruler_ticks(s.axis, 14, 0)) {
    float h = t.major ? 10.0f : 4.0f;
    dl->AddLine(ImVec2(t.x, pos.y + kRulerHeight - h), ImVec2(t.x, pos.y + kRulerHeight), palette::ruler_tick);
    if (t.major) dl->AddText(ImVec2(t.x + 3, pos.y + 2), palette::text, t.label.c_str());
  }
  if (s.has_range) {
    float a = s.axis.x(std::min(s.range_start, s.range_end)), b = s.axis.x(std::max(s.range_start, s.range_end));
    dl->AddRectFilled(ImVec2(a, pos.y), ImVec2(b, pos.y + kRulerHeight), palette::range_band);
    std::string text = prof::format_duration(int64_t(std::llround(std::fabs(s.range_end - s.range_start))));
    ImVec2 ts = ImGui::CalcTextSize(text.c_str());
    float cx = std::clamp((a + b) * 0.5f - ts.x * 0.5f, x0, x1 - ts.x);
    dl->AddRectFilled(ImVec2(cx - 3, pos.y + 3), ImVec2(cx + ts.x + 3, pos.y + 3 + ts.y), palette::background);
    dl->AddText(ImVec2(cx, pos.y + 3), palette::selection, text.c_str());
  }
  dl->PopClipRect();
}

// One trace's part of a frame: what every step of drawing it reads.
struct DocFrame {
  ViewState& s;
  int di;
  Document& d;
  Canvas cv;
  TimeAxis axis;             // in this trace's time
  float scroll = 0;          // the child's vertical scroll
  float vis0 = 0, vis1 = 0;  // layout y in view
};

// The mouse over one trace's tracks this frame.
struct Pointer {
  ImVec2 mouse;
  bool hovered = false;    // over the canvas
  bool active = false;     // the canvas holds the mouse (a drag)
  bool over_axis = false;  // hovered, right of the gutter
  bool click = false;      // the left button released without dragging
  bool double_click = false;
};

// What is under the mouse, as drawn this frame: an item of a lane, or,
// failing that, an idle gap of a device.
struct Hover {
  const TrackLane* lane = nullptr;
  const DrawItem* item = nullptr;
  const view::DeviceGaps* gaps = nullptr;
  long gap = -1;  // index into gaps->lane's events
  bool on_item() const { return item != nullptr; }
  bool on_event() const { return item && item->count == 1; }
  size_t event() const { return lane->lane.event(item->first); }
};

// Each device's idle gaps as draw items, made on first use in a frame.
class GapItems {
 public:
  GapItems(const Document& d, const TimeAxis& axis) : d_(d), axis_(axis) {}
  const view::DeviceGaps* gaps(uint32_t device) const { return d_.analysis ? d_.analysis->gaps_of(device) : nullptr; }
  const std::vector<DrawItem>* items(uint32_t device) {
    const view::DeviceGaps* g = gaps(device);
    if (!g) return nullptr;
    for (auto& [dev, items] : items_)
      if (dev == device) return &items;
    items_.push_back({device, {}});
    view::lane_items(g->lane, axis_, 1, items_.back().second);
    return &items_.back().second;
  }

 private:
  const Document& d_;
  const TimeAxis& axis_;
  std::deque<std::pair<uint32_t, std::vector<DrawItem>>> items_;  // stable addresses
};

// The scrolling child window and its canvas, an invisible button as tall
// as the tracks that takes the mouse.
DocFrame begin_document(ViewState& s, int di, ImVec2 size) {
  Document& d = *s.docs[size_t(di)];
  ImGui::PushStyleColor(ImGuiCol_ChildBg, ImGui::ColorConvertU32ToFloat4(palette::background));
  ImGui::BeginChild(
      di == 0 ? "##timeline0" : "##timeline1", size, false,
      ImGuiWindowFlags_NoScrollWithMouse | ImGuiWindowFlags_AlwaysVerticalScrollbar | ImGuiWindowFlags_NoMove);
  ImGui::PopStyleColor();
  const float view_h = ImGui::GetWindowHeight();
  Canvas cv;
  cv.dl = ImGui::GetWindowDrawList();
  cv.left = ImGui::GetCursorScreenPos().x;
  cv.top = ImGui::GetCursorScreenPos().y;  // already scrolled
  cv.x0 = s.axis.x0;
  cv.x1 = s.axis.x0 + s.axis.width;
  cv.clip_top = ImGui::GetWindowPos().y;
  cv.clip_bottom = cv.clip_top + view_h;
  const float scroll = ImGui::GetScrollY();
  return DocFrame{s, di, d, cv, doc_axis(s, d), scroll, scroll - 2, scroll + view_h + 2};
}

Pointer read_pointer(const DocFrame& f) {
  const ImGuiIO& io = ImGui::GetIO();
  const float canvas_h = std::max(f.d.tracks.height, f.cv.clip_bottom - f.cv.clip_top - 4);
  ImGui::InvisibleButton("##canvas", ImVec2(f.cv.x1 - f.cv.left, canvas_h),
                         ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonRight);
  Pointer p;
  p.mouse = io.MousePos;
  p.hovered = ImGui::IsItemHovered();
  p.active = ImGui::IsItemActive();
  p.over_axis = p.hovered && p.mouse.x >= f.cv.x0 && p.mouse.x < f.cv.x1;
  p.double_click = p.hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left);
  return p;
}

// Wheel zoom, drag to pan, shift- or right-drag to select a range; ends a
// drag on release, noting whether it was a click.
void handle_drag(const DocFrame& f, Pointer& p) {
  ViewState& s = f.s;
  const ImGuiIO& io = ImGui::GetIO();
  if (p.hovered && io.MouseWheel != 0) {
    if (io.KeyShift) ImGui::SetScrollY(f.scroll - io.MouseWheel * 40);
    else view::zoom_at(s.axis, std::clamp(p.mouse.x, f.cv.x0, f.cv.x1), std::pow(0.8, double(io.MouseWheel)));
  }
  if (p.hovered && (ImGui::IsMouseClicked(ImGuiMouseButton_Left) || ImGui::IsMouseClicked(ImGuiMouseButton_Right))) {
    bool range = io.KeyShift || ImGui::IsMouseClicked(ImGuiMouseButton_Right);
    s.drag = range ? ViewState::Drag::range : ViewState::Drag::pan;
    s.range_anchor = s.axis.time(p.mouse.x);
  }
  if (p.active && s.drag == ViewState::Drag::pan && (io.MouseDelta.x != 0 || io.MouseDelta.y != 0)) {
    view::pan(s.axis, io.MouseDelta.x);
    ImGui::SetScrollY(f.scroll - io.MouseDelta.y);
  }
  if (p.active && s.drag == ViewState::Drag::range &&
      (ImGui::IsMouseDragging(ImGuiMouseButton_Left, 3) || ImGui::IsMouseDragging(ImGuiMouseButton_Right, 3))) {
    s.has_range = true;
    s.range_start = s.range_anchor;
    s.range_end = s.axis.time(std::clamp(p.mouse.x, f.cv.x0, f.cv.x1));
  }
  const bool released = ImGui::IsMouseReleased(ImGuiMouseButton_Left);
  p.click =
      released && p.hovered && s.drag == ViewState::Drag::pan && io.MouseDragMaxDistanceSqr[ImGuiMouseButton_Left] < 9;
  if (released || ImGui::IsMouseReleased(ImGuiMouseButton_Right)) s.drag = ViewState::Drag::none;
}

bool is_visible(const DocFrame& f, const Track& tr) { return tr.y1 >= f.vis0 && tr.y0 <= f.vis1; }

// Level of detail: the items of every visible lane for this frame.
void make_items(DocFrame& f) {
  Document& d = f.d;
  d.frame.reset(d.tracks);
  for (size_t t = 0; t < d.tracks.tracks.size(); ++t) {
    const Track& tr = d.tracks.tracks[t];
    for (size_t l = 0; l < tr.lanes.size(); ++l) {
      // Recompile markers draw a line across every track: always needed.
      if (is_visible(f, tr) || tr.lanes[l].kind == LaneKind::recompiles) {
        view::lane_items(tr.lanes[l].lane, f.axis, kMergePx, d.frame.items[t][l]);
      }
    }
  }
}

// The one hit test: the item under the mouse, else the idle gap under it
// on a stream track. Only while the mouse rests over the axis.
Hover find_hover(const DocFrame& f, const Pointer& p, GapItems& gap_items) {
  Hover h;
  if (!p.over_axis || f.s.drag != ViewState::Drag::none) return h;
  const Document& d = f.d;
  const float y = p.mouse.y - f.cv.top;
  view::Hit hit = view::hit_test(d.tracks, d.frame, p.mouse.x, y, 2);
  if (hit.ok()) {
    h.lane = &d.tracks.tracks[size_t(hit.track)].lanes[size_t(hit.lane)];
    h.item = &d.frame.items[size_t(hit.track)][size_t(hit.lane)][size_t(hit.item)];
    return h;
  }
  for (const Track& tr : d.tracks.tracks) {
    if (tr.kind != TrackKind::stream || y < tr.y0 || y >= tr.y1) continue;
    const std::vector<DrawItem>* items = gap_items.items(tr.device);
    long k = items ? view::hit_item(*items, p.mouse.x, 1) : -1;
    if (k < 0) continue;
    h.gaps = gap_items.gaps(tr.device);
    h.gap = long(h.gaps->lane.event((*items)[size_t(k)].first));
  }
  return h;
}

// A highlighted name: outlines over its events in track t.
void draw_highlight(const DocFrame& f, size_t t, std::vector<DrawItem>& scratch) {
  const Document& d = f.d;
  if (d.highlight.empty() || t >= d.highlight.lanes.size()) return;
  const Track& tr = d.tracks.tracks[t];
  for (size_t l = 0; l < tr.lanes.size() && l < d.highlight.lanes[t].size(); ++l) {
    const view::Lane& hl = d.highlight.lanes[t][l];
    if (hl.size() == 0) continue;
    scratch.clear();
    view::lane_items(hl, f.axis, kMergePx, scratch);
    const TrackLane& tl = tr.lanes[l];
    for (const DrawItem& it : scratch) {
      float x0 = std::max(it.x0, f.cv.x0 - 2), x1 = std::min(std::max(it.x1, it.x0 + 3), f.cv.x1 + 2);
      f.cv.dl->AddRect(ImVec2(x0, f.cv.top + tl.y0), ImVec2(x1, f.cv.top + tl.y1), palette::highlight, 0, 0, 2);
    }
  }
}

// A device's idle gaps behind its operations, coloured by cause.
void draw_gaps(const DocFrame& f, const Track& tr, GapItems& gap_items) {
  const std::vector<DrawItem>* items = gap_items.items(tr.device);
  if (!items) return;
  const view::DeviceGaps* g = gap_items.gaps(tr.device);
  const float ty0 = f.cv.top + tr.y0, ty1 = f.cv.top + tr.y1;
  for (const DrawItem& it : *items) {
    Color col = view::gap_color(g->cause[g->lane.event(it.first)]);
    f.cv.dl->AddRectFilled(ImVec2(std::max(it.x0, f.cv.x0), ty0), ImVec2(std::min(it.x1, f.cv.x1), ty1), col);
  }
}

// Where the tracks lie on screen, for the screenshot's layout line.
void record_layout(const DocFrame& f) {
  std::vector<DrawnTrack>& drawn = f.s.layout.tracks;
  std::erase_if(drawn, [&](const DrawnTrack& t) { return t.doc == f.di; });
  for (size_t t = 0; t < f.d.tracks.tracks.size(); ++t) {
    const Track& tr = f.d.tracks.tracks[t];
    drawn.push_back({f.di, t, f.cv.top + tr.y0, f.cv.top + tr.y1});
  }
}

void draw_tracks(const DocFrame& f, GapItems& gap_items) {
  const Document& d = f.d;
  std::vector<DrawItem> scratch;
  for (size_t t = 0; t < d.tracks.tracks.size(); ++t) {
    const Track& tr = d.tracks.tracks[t];
    if (!is_visible(f, tr)) continue;
    f.cv.dl->AddRectFilled(ImVec2(f.cv.x0, f.cv.top + tr.y0), ImVec2(f.cv.x1, f.cv.top + tr.y1),
                           palette::track_background);
    if (tr.kind == TrackKind::stream) draw_gaps(f, tr, gap_items);
    for (size_t l = 0; l < tr.lanes.size(); ++l) draw_lane(f.cv, d, tr.lanes[l], d.frame.items[t][l]);
    draw_highlight(f, t, scratch);
    if (tr.kind == TrackKind::memory) draw_memory(f.cv, d, tr, f.axis);
    if (tr.kind == TrackKind::counter) draw_counter(f.cv, d, tr, f.axis);
  }
}

// Recompiles: a thin line across every track.
void draw_recompile_lines(const DocFrame& f) {
  const Document& d = f.d;
  for (size_t t = 0; t < d.tracks.tracks.size(); ++t) {
    const Track& tr = d.tracks.tracks[t];
    for (size_t l = 0; l < tr.lanes.size(); ++l) {
      if (tr.lanes[l].kind != LaneKind::recompiles) continue;
      for (const DrawItem& it : d.frame.items[t][l]) {
        f.cv.dl->AddLine(ImVec2(it.x0, f.cv.clip_top), ImVec2(it.x0, f.cv.clip_bottom),
                         with_alpha(palette::recompile, 150));
      }
    }
  }
}

// The finding picked in the findings panel, when it is this trace's.
const prof::Finding* selected_finding(const DocFrame& f) {
  const ViewState& s = f.s;
  if (s.selected_finding < 0 || s.finding_doc != f.di || !f.d.analysis) return nullptr;
  const std::vector<prof::Finding>& all = f.d.analysis->report.findings;
  return size_t(s.selected_finding) < all.size() ? &all[size_t(s.selected_finding)] : nullptr;
}

// The critical path, while its finding is selected: a strip along the
// bottom of each track it ran on, coloured by what bound it, and a line
// where it moves from one track to another. Bars narrower than a pixel
// that follow one drawn in the same pixel on the same track are skipped.
void draw_critical_path(const DocFrame& f) {
  const std::vector<view::PathBar>& bars = f.d.analysis->path;
  const Canvas& cv = f.cv;
  const view::TrackList& tracks = f.d.tracks;
  float last_x = -1e9f;
  size_t last_track = SIZE_MAX;
  for (size_t i = view::first_bar_after(bars, int64_t(f.axis.start_ns)); i < bars.size(); ++i) {
    const view::PathBar& b = bars[i];
    if (double(b.start) > f.axis.end_ns()) break;
    const view::Track& t = tracks.tracks[b.track];
    float x0 = std::max(f.axis.x(double(b.start)), cv.x0), x1 = std::min(f.axis.x(double(b.end)), cv.x1);
    float y1 = cv.top + t.y1, y0 = y1 - 3;
    if (i > 0 && bars[i - 1].track != b.track) {
      float ya = cv.top + tracks.tracks[bars[i - 1].track].y1, yb = y1;
      cv.dl->AddLine(ImVec2(x0, std::min(ya, yb)), ImVec2(x0, std::max(ya, yb)), with_alpha(palette::selection, 140));
    }
    if (x1 - x0 < 1 && b.track == last_track && x0 < last_x + 1) continue;
    cv.dl->AddRectFilled(ImVec2(x0, y0), ImVec2(std::max(x1, x0 + 1), y1), view::path_color(b.category));
    last_x = x0;
    last_track = b.track;
  }
}

// Bands over every track: the selected finding's ranges, the range
// selection; outlines: the hovered item, the selected event.
void draw_overlays(const DocFrame& f, const Hover& h) {
  const ViewState& s = f.s;
  const Canvas& cv = f.cv;
  if (const prof::Finding* finding = selected_finding(f)) {
    if (finding->rule == "critical-path") draw_critical_path(f);
    for (const prof::TimeRange& r : finding->ranges) {
      float a = f.axis.x(double(r.start)), b = std::max(f.axis.x(double(r.end)), a + 2);
      if (b < cv.x0 || a > cv.x1) continue;
      cv.dl->AddRectFilled(ImVec2(std::max(a, cv.x0), cv.clip_top), ImVec2(std::min(b, cv.x1), cv.clip_bottom),
                           palette::finding_band);
      cv.dl->AddLine(ImVec2(a, cv.clip_top), ImVec2(a, cv.clip_bottom), with_alpha(palette::peak, 160));
    }
  }
  if (s.has_range) {
    float a = s.axis.x(std::min(s.range_start, s.range_end)), b = s.axis.x(std::max(s.range_start, s.range_end));
    cv.dl->AddRectFilled(ImVec2(std::max(a, cv.x0), cv.clip_top), ImVec2(std::min(b, cv.x1), cv.clip_bottom),
                         palette::range_band);
  }
  if (h.on_item()) {
    cv.dl->AddRect(ImVec2(std::max(h.item->x0, cv.x0) - 1, cv.top + h.lane->y0),
                   ImVec2(std::min(h.item->x1, cv.x1) + 1, cv.top + h.lane->y1), with_alpha(palette::selection, 160));
  }
  ImVec2 a, b;
  const Selection& sel = s.selection;
  if (sel.active && sel.doc == f.di && event_rect(cv, f.d, f.axis, sel.kind, sel.table, sel.index, &a, &b)) {
    cv.dl->AddRect(ImVec2(a.x - 1, a.y), ImVec2(b.x + 1, b.y), palette::selection, 0, 0, 2);
  }
}

int64_t event_start(const prof::TraceModel& m, LaneKind kind, uint32_t table, size_t index) {
  if (kind == LaneKind::launches) return m.launches[table].start[index];
  if (kind == LaneKind::transfers) return m.transfers[table].start[index];
  return m.device_ops[table].start[index];
}

// How far away a flow's end is, written beside it where it is pinned to
// the edge of the view.
void draw_flow_distance(const DocFrame& f, const Selection& from, ImVec2 end, float target_x) {
  const prof::TraceModel& m = f.d.model;
  const FlowCache& flow = f.s.flow;
  int64_t from_t = event_start(m, from.kind, from.table, from.index);
  int64_t to_t = event_start(m, flow.to_kind, flow.to.table, flow.to.index);
  std::string text = fmt::format("{}{}", to_t >= from_t ? "+" : "-", prof::format_duration(std::abs(to_t - from_t)));
  ImVec2 ts = ImGui::CalcTextSize(text.c_str());
  float tx = target_x > f.cv.x1 ? end.x - ts.x - 6 : end.x + 6;
  f.cv.dl->AddRectFilled(ImVec2(tx - 2, end.y - ts.y - 2), ImVec2(tx + ts.x + 2, end.y), palette::background);
  f.cv.dl->AddText(ImVec2(tx, end.y - ts.y - 1), palette::flow, text.c_str());
}

// A job's collective, linked across its ranks: its pieces on every rank
// outlined, and the starts of its transfers (when the last rank arrived)
// joined top to bottom.
void draw_collective_link(const DocFrame& f, const Selection& from) {
  const prof::TraceModel& m = f.d.model;
  std::vector<view::EventRef> pieces = view::same_collective(m, from.table, uint32_t(from.index));
  pieces.push_back({from.table, uint32_t(from.index)});
  std::vector<ImVec2> starts;
  for (const view::EventRef& e : pieces) {
    ImVec2 a, b;
    if (!event_rect(f.cv, f.d, f.axis, LaneKind::device_ops, e.table, e.index, &a, &b)) continue;
    f.cv.dl->AddRect(a, b, palette::flow, 0, 0, 2);
    if (m.device_ops[e.table].kind[e.index] == prof::DeviceOpKind::kernel) {
      starts.push_back(ImVec2(std::clamp(a.x, f.cv.x0, f.cv.x1), (a.y + b.y) / 2));
    }
  }
  std::sort(starts.begin(), starts.end(), [](const ImVec2& a, const ImVec2& b) { return a.y < b.y; });
  for (size_t i = 1; i < starts.size(); ++i) f.cv.dl->AddLine(starts[i - 1], starts[i], palette::flow, 2);
}

// A flow between a launch (or transfer) and its device operation, from the
// hovered event, else the selected one; in a job, a collective's pieces on
// every rank.
void draw_flow(const DocFrame& f) {
  ViewState& s = f.s;
  const Selection* from = nullptr;
  if (s.hover.active && s.hover.doc == f.di && is_flow_kind(s.hover.kind)) from = &s.hover;
  else if (s.selection.active && s.selection.doc == f.di && is_flow_kind(s.selection.kind)) from = &s.selection;
  if (!from) return;
  if (f.d.job) {
    if (from->kind == LaneKind::device_ops) draw_collective_link(f, *from);
    return;
  }
  update_flow(s, *from);
  ImVec2 fa, fb, ta, tb;
  if (!s.flow.found || !event_rect(f.cv, f.d, f.axis, from->kind, from->table, from->index, &fa, &fb) ||
      !event_rect(f.cv, f.d, f.axis, s.flow.to_kind, s.flow.to.table, s.flow.to.index, &ta, &tb))
    return;
  const Canvas& cv = f.cv;
  bool down = ta.y > fa.y;
  ImVec2 p0(from->kind == LaneKind::device_ops ? fa.x : fb.x, down ? fb.y : fa.y);
  ImVec2 p1(s.flow.to_kind == LaneKind::device_ops ? ta.x : tb.x, down ? ta.y : tb.y);
  // An end off screen is pinned to the edge, and says how far it is.
  const float target_x = p1.x;
  p0.x = std::clamp(p0.x, cv.x0, cv.x1);
  p1.x = std::clamp(p1.x, cv.x0, cv.x1);
  p0.y = std::clamp(p0.y, cv.clip_top, cv.clip_bottom);
  p1.y = std::clamp(p1.y, cv.clip_top, cv.clip_bottom);
  float bend = std::fabs(p1.y - p0.y) * 0.4f;
  cv.dl->AddBezierCubic(p0, ImVec2(p0.x, p0.y + (down ? bend : -bend)), ImVec2(p1.x, p1.y - (down ? bend : -bend)), p1,
                        palette::flow, 2);
  cv.dl->AddCircleFilled(p1, 3.5f, palette::flow);
  cv.dl->AddRect(ta, tb, palette::flow, 0, 0, 2);
  if (target_x != p1.x) draw_flow_distance(f, *from, p1, target_x);
}

// Whether the selected finding names the track's thread or device.
bool concerns(const prof::Finding& f, const Track& tr) {
  if (tr.kind == TrackKind::thread) return std::find(f.threads.begin(), f.threads.end(), tr.thread) != f.threads.end();
  if (tr.kind == TrackKind::counter) return false;
  return std::find(f.devices.begin(), f.devices.end(), tr.device) != f.devices.end();
}

// The track titles, drawn last so that nothing covers them; those the
// selected finding concerns stand out.
void draw_gutter(const DocFrame& f) {
  const Canvas& cv = f.cv;
  const prof::Finding* finding = selected_finding(f);
  const float font = ImGui::GetFontSize();
  cv.dl->AddRectFilled(ImVec2(cv.left, cv.clip_top), ImVec2(cv.x0, cv.clip_bottom), palette::gutter);
  for (const Track& tr : f.d.tracks.tracks) {
    if (!is_visible(f, tr)) continue;
    ImVec4 clip(cv.left + 4, cv.top + tr.y0, cv.x0 - 4, cv.top + tr.y1);
    Color col = finding && concerns(*finding, tr) ? palette::peak : palette::text;
    cv.dl->AddText(ImGui::GetFont(), font, ImVec2(cv.left + 6, cv.top + tr.y0 + 2), col, tr.title.c_str(), nullptr, 0,
                   &clip);
    if (!tr.subtitle.empty() && tr.y1 - tr.y0 >= 2 * font + 6) {
      cv.dl->AddText(ImGui::GetFont(), font, ImVec2(cv.left + 6, cv.top + tr.y0 + 4 + font), palette::text_dim,
                     tr.subtitle.c_str(), nullptr, 0, &clip);
    }
    cv.dl->AddLine(ImVec2(cv.left, cv.top + tr.y1 + 2), ImVec2(cv.x0, cv.top + tr.y1 + 2), palette::grid);
  }
}

// The track under the mouse's y, or null.
const Track* track_at(const DocFrame& f, const Pointer& p) {
  const float y = p.mouse.y - f.cv.top;
  for (const Track& tr : f.d.tracks.tracks)
    if (y >= tr.y0 && y < tr.y1) return &tr;
  return nullptr;
}

// A click on a memory lane: what was live at that time, in the details panel.
void pick_memory(ViewState& s, int doc, const Track& tr, int64_t t) {
  s.selection = {};
  s.memory_pick = MemoryPick{.doc = doc,
                             .table = tr.table,
                             .device = tr.device,
                             .time = t,
                             .live = prof::live_memory_at(s.doc(doc)->model, tr.table, t)};
  s.tab = view::Panel::details;
  s.switch_tab = true;
}

// A click selects the event under it (and shows its details), lists what
// was live at a point of a memory lane, zooms into a merged run, or clears
// the selection; a double click zooms to the event.
void handle_click(const DocFrame& f, const Pointer& p, const Hover& h) {
  ViewState& s = f.s;
  if (p.click && p.mouse.x < f.cv.x0 && f.d.job) {
    // A job's rank row's title expands or collapses the rank.
    const Track* tr = track_at(f, p);
    if (tr && tr->kind == TrackKind::stream && tr->device < f.d.job->ranks.size()) {
      s.requested_toggle = ViewState::RankToggle{f.di, f.d.job->ranks[tr->device]};
    }
  }
  if (p.click && p.over_axis) {
    const Track* tr = track_at(f, p);
    if (h.on_event()) {
      s.selection = {true, f.di, h.lane->kind, h.lane->table, h.event()};
      s.memory_pick.reset();
      s.tab = view::Panel::details;
      s.switch_tab = true;
    } else if (tr && tr->kind == TrackKind::memory) {
      pick_memory(s, f.di, *tr, int64_t(f.axis.time(p.mouse.x)));
    } else if (h.on_item()) {
      // A merged run: zoom into the part of it in view, or, when that is
      // most of the view, four times around the mouse.
      double lo = std::max(double(h.item->start - f.d.origin), s.axis.start_ns);
      double hi = std::min(double(h.item->end - f.d.origin), s.axis.end_ns());
      if (hi - lo < 0.5 * (s.axis.end_ns() - s.axis.start_ns)) zoom_to_range(s, lo, hi, 0.05);
      else view::zoom_at(s.axis, p.mouse.x, 0.25);
    } else {
      s.selection = {};
      s.memory_pick.reset();
      s.has_range = false;
    }
  }
  if (p.double_click && h.on_event()) {
    zoom_to_range(s, double(h.item->start - f.d.origin), double(h.item->end - f.d.origin), 0.1);
  }
}

void item_tooltip(const DocFrame& f, const Hover& h) {
  const TrackLane& tl = *h.lane;
  const DrawItem& it = *h.item;
  ImGui::BeginTooltip();
  if (it.count > 1) {
    ImGui::Text("%s events merged", prof::format_count(it.count).c_str());
    ImGui::Separator();
    ImGui::Text("from %s to %s (%s)", prof::format_duration(it.start).c_str(), prof::format_duration(it.end).c_str(),
                prof::format_duration(it.end - it.start).c_str());
    ImGui::Text("first: %s", view::event_name(f.d.model, tl.kind, tl.table, h.event()).c_str());
    ImGui::TextDisabled("click to zoom in");
  } else {
    tooltip_lines(view::describe_event(f.d.model, tl.kind, tl.table, h.event()));
  }
  ImGui::EndTooltip();
}

void gap_tooltip(const DocFrame& f, const Hover& h) {
  for (const prof::DeviceIdle& dev : f.d.analysis->report.devices) {
    if (dev.device != h.gaps->device || size_t(h.gap) >= dev.gaps.size()) continue;
    const prof::IdleGap& g = dev.gaps[size_t(h.gap)];
    ImGui::BeginTooltip();
    ImGui::Text("device %u idle for %s", dev.device, prof::format_duration(g.end - g.start).c_str());
    ImGui::Separator();
    ImGui::Text("cause: %s", std::string(prof::name_of(g.cause)).c_str());
    if (!g.detail.empty()) ImGui::TextUnformatted(g.detail.c_str());
    ImGui::EndTooltip();
  }
}

// Memory and counters: the values at the mouse.
void series_tooltip(const DocFrame& f, const Track& tr, float mouse_x) {
  double t = f.axis.time(mouse_x), v = 0, r = 0;
  if (tr.kind == TrackKind::memory && series_at(tr.allocated, t, &v)) {
    series_at(tr.reserved, t, &r);
    ImGui::BeginTooltip();
    ImGui::TextUnformatted(tr.title.c_str());
    ImGui::Separator();
    ImGui::Text("allocated  %s", prof::format_bytes(int64_t(v)).c_str());
    ImGui::Text("reserved   %s", prof::format_bytes(int64_t(r)).c_str());
    ImGui::Text("peak       %s", prof::format_bytes(int64_t(tr.allocated.max_value)).c_str());
    if (tr.capacity) ImGui::Text("capacity   %s", prof::format_bytes(tr.capacity).c_str());
    ImGui::EndTooltip();
  } else if (tr.kind == TrackKind::counter && series_at(tr.value, t, &v)) {
    ImGui::SetTooltip("%s = %.6g", tr.title.c_str(), v);
  }
}

// The tooltip for what the mouse rests on; in the gutter, a title in full.
void show_tooltip(const DocFrame& f, const Pointer& p, const Hover& h) {
  if (f.s.drag != ViewState::Drag::none) return;
  const Track* tr = track_at(f, p);
  if (p.hovered && p.mouse.x < f.cv.x0) {
    if (!tr) return;
    if (tr->subtitle.empty()) ImGui::SetTooltip("%s", tr->title.c_str());
    else ImGui::SetTooltip("%s\n%s", tr->title.c_str(), tr->subtitle.c_str());
    return;
  }
  if (!p.over_axis) return;
  if (h.on_item()) item_tooltip(f, h);
  else if (h.gap >= 0 && f.d.analysis) gap_tooltip(f, h);
  else if (tr) series_tooltip(f, *tr, p.mouse.x);
}

// One trace's tracks, in a child window that scrolls vertically.
void draw_document(ViewState& s, int di, ImVec2 size) {
  DocFrame f = begin_document(s, di, size);
  Pointer p = read_pointer(f);
  handle_drag(f, p);
  make_items(f);
  GapItems gap_items(f.d, f.axis);
  const Hover h = find_hover(f, p, gap_items);
  if (h.on_event()) s.hover = {true, di, h.lane->kind, h.lane->table, h.event()};
  record_layout(f);
  draw_tracks(f, gap_items);
  draw_recompile_lines(f);
  draw_overlays(f, h);
  draw_flow(f);
  if (f.d.tracks.tracks.empty()) {
    f.cv.dl->AddText(ImVec2(f.cv.x0 + 12, f.cv.top + 12), palette::text_dim, "this trace holds no events");
  }
  draw_gutter(f);
  handle_click(f, p, h);
  show_tooltip(f, p, h);
  ImGui::EndChild();
}

}  // namespace

void draw_timelines(ViewState& s, ImVec2 size) {
  const ImVec2 pos = ImGui::GetCursorScreenPos();
  const float scrollbar = ImGui::GetStyle().ScrollbarSize;
  s.axis.x0 = pos.x + kGutterWidth;
  s.axis.width = std::max(10.0f, size.x - kGutterWidth - scrollbar);
  s.layout.x0 = s.axis.x0;
  s.layout.width = s.axis.width;
  s.layout.top = pos.y;
  s.layout.bottom = pos.y + size.y;
  s.hover = {};
  if (!s.fitted) {
    // The first frame with every trace: show all of them.
    bool all = true;
    for (int i = 0; i < s.doc_count(); ++i) all &= s.docs[size_t(i)] != nullptr;
    if (all) {
      zoom_to_fit(s);
      s.fitted = true;
    }
  }
  draw_ruler(s, pos, size.x);
  ImGui::Dummy(ImVec2(size.x, kRulerHeight));
  const int n = s.doc_count();
  const float line = ImGui::GetTextLineHeightWithSpacing();
  float each = (size.y - kRulerHeight) / float(n);
  for (int i = 0; i < n; ++i) {
    if (s.compare) {
      std::string head = fmt::format("{}  {}", i == 0 ? "BASE" : "HEAD", s.paths[size_t(i)]);
      ImGui::TextColored(ImVec4(0.6f, 0.63f, 0.68f, 1), "%s", head.c_str());
    }
    float h = std::max(40.0f, each - (s.compare ? line : 0));
    if (s.docs[size_t(i)]) {
      draw_document(s, i, ImVec2(size.x, h));
    } else {
      ImGui::Dummy(ImVec2(size.x, h));
    }
  }
  if (ImGui::IsWindowFocused(ImGuiFocusedFlags_RootAndChildWindows)) handle_keys(s);
  clamp_view(s);
}

}  // namespace loupe::app
