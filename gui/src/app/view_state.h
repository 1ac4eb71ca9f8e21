// Everything the viewer's window shows and remembers between frames, as
// one plain struct the timeline and the panels read and change.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "document.h"
#include "loupe/prof/analysis.h"
#include "loupe/prof/trace_diff.h"
#include "loupe/view/flows.h"
#include "loupe/view/panel_list.h"
#include "loupe/view/time_axis.h"

namespace loupe::app {

// An event picked on the timeline or in a panel.
struct Selection {
  bool active = false;
  int doc = 0;
  view::LaneKind kind = view::LaneKind::spans;
  uint32_t table = 0;
  size_t index = 0;
  bool same(int d, view::LaneKind k, uint32_t t, size_t i) const {
    return active && doc == d && kind == k && table == t && index == i;
  }
};

// A point of a memory lane, clicked: what was live there, as the memory
// rule tells it at the peak (the details panel lists it).
struct MemoryPick {
  int doc = 0;
  uint32_t table = 0, device = 0;
  int64_t time = 0;  // trace time
  prof::LiveMemory live;
};

// A flow found for a launch or device operation, kept while the mouse
// rests on it (the search is not free).
struct FlowCache {
  Selection from;
  bool found = false;
  view::LaneKind to_kind = view::LaneKind::device_ops;
  view::EventRef to;
};

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

struct ViewState {
  std::array<std::unique_ptr<Document>, 2> docs;  // [1]: the head trace with --compare
  std::array<std::string, 2> paths;               // what is open or opening
  std::array<std::string, 2> errors;              // the reader's message when opening failed
  bool compare = false;

  view::TimeAxis axis;  // in view time: trace time - Document::origin
  bool fitted = false;  // zoomed to fit once the trace arrived
  bool has_range = false;
  double range_start = 0, range_end = 0;  // a range selection, view time

  // Mouse drags on the timeline: panning, or selecting a time range.
  enum class Drag { none, pan, range } drag = Drag::none;
  double range_anchor = 0;  // view time where the range drag began

  Selection selection;
  std::optional<MemoryPick> memory_pick;  // shown instead of the selection when set
  Selection hover;                        // what the mouse is on this frame
  FlowCache flow;
  TimelineLayout layout;      // where the last frame drew the tracks
  int finding_doc = 0;        // whose findings the panel lists
  int selected_finding = -1;  // index into that report's findings
  size_t finding_range = 0;   // which of its ranges the view shows
  std::string highlight;      // a name highlighted in every open trace

  std::optional<prof::TraceDiff> diff;
  std::string diff_error;
  std::vector<std::string> recent;

  view::Panel tab = view::Panel::findings;
  bool switch_tab = false;  // select `tab` in the next frame
  float panel_height = 0;   // the bottom panel; 0 = default share
  bool show_open_popup = false;
  std::string open_path;       // typed into the Open dialog
  std::string requested_open;  // a path the UI asked to open (the app opens it)
  // A job's rank the UI asked to expand or collapse (the viewer does it).
  struct RankToggle {
    int doc = 0;
    int64_t rank = 0;
  };
  std::optional<RankToggle> requested_toggle;

  Document* doc(int i) { return docs[size_t(i)].get(); }
  int doc_count() const { return compare ? 2 : 1; }
};

// View time <-> trace time for one document.
inline view::TimeAxis doc_axis(const ViewState& s, const Document& d) {
  view::TimeAxis a = s.axis;
  a.start_ns += double(d.origin);
  return a;
}

// Shows the panel of that name (panel_list.h; false for another name).
bool show_panel(ViewState& s, const std::string& name);

// Zooms so that [start, end) (view time) fills the middle of the view.
void zoom_to_range(ViewState& s, double start, double end, double margin = 0.15);
// Zooms to the range selection, else to the selected event.
void zoom_to_selection(ViewState& s);
// Fits every open trace.
void zoom_to_fit(ViewState& s);
// Keeps the view near the open traces.
void clamp_view(ViewState& s);
// Highlights `name` in every open trace ("" clears it).
void set_highlight(ViewState& s, const std::string& name);
// Selects finding i of doc d's report: zooms to its first range and
// highlights what its evidence names.
void select_finding(ViewState& s, int doc, int index);

}  // namespace loupe::app
