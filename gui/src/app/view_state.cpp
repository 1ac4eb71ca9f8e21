#include "view_state.h"

#include <algorithm>

#include "loupe/view/event_details.h"

namespace loupe::app {

namespace {

// The view-time span of every open trace.
bool open_span(const ViewState& s, double* lo, double* hi) {
  bool any = false;
  for (int i = 0; i < s.doc_count(); ++i) {
    const Document* d = s.docs[size_t(i)].get();
    if (!d) continue;
    *lo = any ? std::min(*lo, d->view_start()) : d->view_start();
    *hi = any ? std::max(*hi, d->view_end()) : d->view_end();
    any = true;
  }
  return any;
}

}  // namespace

bool show_panel(ViewState& s, const std::string& name) {
  std::optional<view::Panel> panel = view::panel_named(name);
  if (!panel) return false;
  s.tab = *panel;
  s.switch_tab = true;
  return true;
}

void zoom_to_range(ViewState& s, double start, double end, double margin) {
  // Never narrower than 20 us: a point (a memory peak) shows what surrounds it.
  constexpr double kNarrowest = 20'000;
  double span = std::max(end - start, 0.0);
  double lo = start - span * margin, hi = end + span * margin;
  if (hi - lo < kNarrowest) {
    double mid = (start + end) * 0.5;
    lo = mid - kNarrowest / 2;
    hi = mid + kNarrowest / 2;
  }
  view::fit(s.axis, lo, hi);
  clamp_view(s);
}

void zoom_to_selection(ViewState& s) {
  if (s.has_range) {
    zoom_to_range(s, std::min(s.range_start, s.range_end), std::max(s.range_start, s.range_end), 0);
  } else if (s.selection.active && s.doc(s.selection.doc)) {
    const Document& d = *s.doc(s.selection.doc);
    view::EventDetails det = view::describe_event(d.model, s.selection.kind, s.selection.table, s.selection.index);
    zoom_to_range(s, double(det.start - d.origin), double(det.end - d.origin));
  }
}

void zoom_to_fit(ViewState& s) {
  double lo = 0, hi = 0;
  if (open_span(s, &lo, &hi)) view::fit(s.axis, lo, hi + std::max(1.0, (hi - lo) * 0.005));
}

void clamp_view(ViewState& s) {
  double lo = 0, hi = 0;
  if (open_span(s, &lo, &hi)) view::clamp(s.axis, lo, hi);
}

void set_highlight(ViewState& s, const std::string& name) {
  s.highlight = name;
  for (auto& d : s.docs) {
    if (!d) continue;
    d->highlight = name.empty() ? view::NameHighlight{} : view::highlight_name(d->model, d->tracks, name);
  }
}

void select_finding(ViewState& s, int doc, int index) {
  Document* d = s.doc(doc);
  if (!d || !d->analysis || index < 0 || size_t(index) >= d->analysis->report.findings.size()) return;
  s.finding_doc = doc;
  s.selected_finding = index;
  s.finding_range = 0;
  const prof::Finding& f = d->analysis->report.findings[size_t(index)];
  if (!f.ranges.empty()) {
    const prof::TimeRange& r = f.ranges[0];
    zoom_to_range(s, double(r.start - d->origin), double(r.end - d->origin));
  }
  // Evidence that names something in the trace (a function, a kernel)
  // gets highlighted wherever it appears.
  std::string name;
  for (const auto& [what, value] : f.evidence) {
    prof::StringId id = 0;
    if (!value.empty() && view::find_string(d->model, value, &id)) {
      name = value;
      break;
    }
  }
  set_highlight(s, name);
}

}  // namespace loupe::app
