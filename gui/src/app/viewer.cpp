#include "viewer.h"

#include <fmt/format.h>
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "loupe/prof/units.h"
#include "loupe/view/overlays.h"
#include "loupe/view/recent_files.h"
#include "panels.h"
#include "timeline_view.h"

namespace loupe::app {

namespace {

template <typename T>
bool ready(const std::future<T>& f) {
  return f.valid() && f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

// Runs `work` on a thread of its own and then wakes the UI (also when it
// throws), so that the next frame shows what it made.
template <typename Work>
auto async_then_wake(const std::function<void()>& wake, Work work) {
  return std::async(std::launch::async, [wake, work] {
    struct Wake {
      const std::function<void()>& f;
      ~Wake() {
        if (f) f();
      }
    } w{wake};
    return work();
  });
}

}  // namespace

Viewer::Viewer(std::function<void()> wake) : wake_(std::move(wake)) {
  s_.recent = view::load_recent_files(view::recent_files_path());
}

Viewer::~Viewer() {
  // Waits for work under way (a read, an analysis), starting nothing new.
  retire();
  retired_.clear();
}

void Viewer::retire() {
  if (!busy()) return;
  Retired r;
  r.docs = std::move(s_.docs);
  r.loading = std::move(loading_);
  r.analysing = std::move(analysing_);
  r.diffing = std::move(diffing_);
  retired_.push_back(std::move(r));
}

bool Viewer::Retired::done() const {
  auto over = [](const auto& f) { return !f.valid() || ready(f); };
  return over(loading[0]) && over(loading[1]) && over(analysing[0]) && over(analysing[1]) && over(diffing);
}

void Viewer::open(const std::string& base, const std::string& head) {
  // Work on the traces being replaced goes on in the background; its
  // results are dropped when it ends.
  retire();
  ViewState fresh;
  fresh.recent = std::move(s_.recent);
  fresh.panel_height = s_.panel_height;
  fresh.axis = s_.axis;
  s_ = std::move(fresh);
  s_.compare = !head.empty();
  s_.paths = {base, head};
  for (int i = 0; i < s_.doc_count(); ++i) {
    std::string path = s_.paths[size_t(i)];
    loading_[size_t(i)] = async_then_wake(wake_, [path] { return load_document(path); });
  }
}

void Viewer::start_analysis(int i) {
  const Document* d = s_.docs[size_t(i)].get();
  analysing_[size_t(i)] = async_then_wake(wake_, [d] { return analyse_document(*d); });
}

bool Viewer::poll() {
  retired_.erase(std::remove_if(retired_.begin(), retired_.end(), [](const Retired& r) { return r.done(); }),
                 retired_.end());
  bool changed = false;
  for (int i = 0; i < 2; ++i) {
    auto& lf = loading_[size_t(i)];
    if (ready(lf)) {
      changed = true;
      try {
        auto doc = lf.get();
        if (s_.compare) doc->origin = view::alignment_origin(doc->model);
        s_.docs[size_t(i)] = std::move(doc);
        remember(s_.paths[size_t(i)]);
        start_analysis(i);
      } catch (const std::exception& e) {
        s_.errors[size_t(i)] = e.what();
      }
    }
    auto& af = analysing_[size_t(i)];
    if (ready(af)) {
      changed = true;
      try {
        s_.docs[size_t(i)]->analysis = af.get();
      } catch (const std::exception& e) {
        s_.docs[size_t(i)]->analysis_error = std::string("analysis failed: ") + e.what();
      }
    }
  }
  if (s_.compare && !s_.diff && !diffing_.valid() && s_.diff_error.empty() && s_.docs[0] && s_.docs[1] &&
      s_.docs[0]->analysis && s_.docs[1]->analysis) {
    const Document* a = s_.docs[0].get();
    const Document* b = s_.docs[1].get();
    auto wake = wake_;
    diffing_ = std::async(std::launch::async, [a, b, wake] {
      struct Wake {
        std::function<void()> f;
        ~Wake() {
          if (f) f();
        }
      } w{wake};
      return prof::diff_traces(a->model, a->analysis->report, b->model, b->analysis->report);
    });
  }
  if (ready(diffing_)) {
    changed = true;
    try {
      s_.diff = diffing_.get();
    } catch (const std::exception& e) {
      s_.diff_error = std::string("comparison failed: ") + e.what();
    }
  }
  return changed;
}

bool Viewer::busy() const {
  auto pending = [](const auto& f) { return f.valid(); };
  return pending(loading_[0]) || pending(loading_[1]) || pending(analysing_[0]) || pending(analysing_[1]) ||
         pending(diffing_);
}

void Viewer::finish_loading() {
  for (auto& f : loading_)
    if (f.valid()) f.wait();
  poll();
}

void Viewer::finish_jobs() {
  // Each round collects what finished and may start what depends on it.
  while (busy()) {
    for (auto& f : loading_)
      if (f.valid()) f.wait();
    for (auto& f : analysing_)
      if (f.valid()) f.wait();
    if (diffing_.valid()) diffing_.wait();
    poll();
  }
}

bool Viewer::toggle_rank(int doc, int64_t rank, std::string* why) {
  Document* d = s_.doc(doc);
  if (!d || !d->job) {
    *why = "only a job's ranks can be expanded";
    return false;
  }
  if (analysing_[size_t(doc)].valid()) {
    *why = "the job's analysis is still running";
    return false;
  }
  try {
    app::toggle_rank(*d, rank);
  } catch (const std::exception& e) {
    *why = fmt::format("rank {}: {}", rank, e.what());
    return false;
  }
  // The model was rebuilt: what pointed into it is dropped or found again.
  s_.selection = {};
  s_.hover = {};
  s_.flow = {};
  set_highlight(s_, s_.highlight);
  return true;
}

void Viewer::remember(const std::string& path) {
  if (!remember_recent_) return;
  s_.recent = view::add_recent_file(s_.recent, path);
  view::save_recent_files(view::recent_files_path(), s_.recent);
}

void Viewer::frame_menu() {
  if (!ImGui::BeginMenuBar()) return;
  if (ImGui::BeginMenu("File")) {
    if (ImGui::MenuItem("Open...", "Ctrl+O")) s_.show_open_popup = true;
    if (ImGui::BeginMenu("Open recent", !s_.recent.empty())) {
      for (const std::string& r : s_.recent) {
        if (ImGui::MenuItem(r.c_str())) s_.requested_open = r;
      }
      ImGui::EndMenu();
    }
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("View")) {
    if (ImGui::MenuItem("Zoom to fit", "F")) zoom_to_fit(s_);
    if (ImGui::MenuItem("Zoom to selection", "Z", false, s_.has_range || s_.selection.active)) zoom_to_selection(s_);
    if (ImGui::MenuItem("Clear selection and highlight", "Esc")) {
      s_.selection = {};
      s_.has_range = false;
      s_.selected_finding = -1;
      set_highlight(s_, "");
    }
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("Help")) {
    ImGui::TextUnformatted(
        "wheel: zoom at the mouse      shift+wheel: scroll tracks\n"
        "drag: pan                     shift+drag or right drag: select a time range\n"
        "click: select an event        click a merged run or double-click: zoom to it\n"
        "F: zoom to fit                Z: zoom to the range or selected event\n"
        "W/S or +/-: zoom in/out       A/D or arrows: pan\n"
        "Esc: clear the selection      Ctrl+O: open a trace (or drop one on the window)");
    ImGui::EndMenu();
  }
  ImGui::EndMenuBar();
}

void Viewer::frame_status() {
  for (int i = 0; i < s_.doc_count(); ++i) {
    const Document* d = s_.docs[size_t(i)].get();
    if (i) ImGui::SameLine(0, 24);
    if (s_.compare) {
      ImGui::TextDisabled("%s", i == 0 ? "base" : "head");
      ImGui::SameLine();
    }
    if (!s_.errors[size_t(i)].empty()) {
      ImGui::TextColored(ImVec4(1, 0.4f, 0.4f, 1), "cannot open %s", s_.paths[size_t(i)].c_str());
    } else if (!d) {
      ImGui::Text("reading %s ...", s_.paths[size_t(i)].c_str());
    } else {
      ImGui::Text("%s  %s events, %s", d->path.c_str(), prof::format_count(d->model.total_events()).c_str(),
                  prof::format_duration(d->model.end_ns - d->model.start_ns).c_str());
      ImGui::SameLine();
      if (d->analysis) {
        ImGui::TextDisabled("| %zu findings", d->analysis->report.findings.size());
      } else if (!d->analysis_error.empty()) {
        ImGui::TextColored(ImVec4(1, 0.4f, 0.4f, 1), "| %s", d->analysis_error.c_str());
      } else {
        ImGui::TextDisabled("| analysing...");
      }
    }
  }
}

void Viewer::frame_open_popup() {
  if (s_.show_open_popup) {
    ImGui::OpenPopup("Open a trace");
    s_.show_open_popup = false;
  }
  if (!ImGui::BeginPopupModal("Open a trace", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) return;
  ImGui::TextUnformatted(
      "Path of a trace (loupe's .db; PyTorch, JAX or Chrome JSON; an Nsight Systems SQLite export;\n"
      "a memory snapshot; a JAX profile folder; a job's folder), or drop one on the window:");
  ImGui::SetNextItemWidth(520);
  if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();
  bool go = ImGui::InputText("##path", &s_.open_path, ImGuiInputTextFlags_EnterReturnsTrue);
  go |= ImGui::Button("Open");
  ImGui::SameLine();
  if (ImGui::Button("Cancel")) ImGui::CloseCurrentPopup();
  if (go && !s_.open_path.empty()) {
    s_.requested_open = s_.open_path;
    ImGui::CloseCurrentPopup();
  }
  if (!s_.recent.empty()) {
    ImGui::Separator();
    ImGui::TextDisabled("recent");
    for (const std::string& r : s_.recent) {
      if (ImGui::Selectable(r.c_str())) {
        s_.requested_open = r;
        ImGui::CloseCurrentPopup();
      }
    }
  }
  ImGui::EndPopup();
}

void Viewer::frame_panels(float height) {
  ImGui::BeginChild("##panels", ImVec2(0, height), false);
  if (ImGui::BeginTabBar("##tabs")) {
    for (const view::PanelInfo& p : view::kPanels) {
      view::Panel tab = p.panel;
      if (tab == view::Panel::diff && !s_.compare) continue;
      ImGuiTabItemFlags flags = s_.switch_tab && s_.tab == tab ? ImGuiTabItemFlags_SetSelected : 0;
      if (ImGui::BeginTabItem(p.title, nullptr, flags)) {
        if (!s_.switch_tab) s_.tab = tab;
        switch (tab) {
          case view::Panel::findings: draw_findings_panel(s_); break;
          case view::Panel::statistics: draw_statistics_panel(s_); break;
          case view::Panel::compiles: draw_compile_panel(s_); break;
          case view::Panel::details: draw_details_panel(s_); break;
          case view::Panel::diff: draw_diff_panel(s_); break;
        }
        ImGui::EndTabItem();
      }
    }
    s_.switch_tab = false;
    ImGui::EndTabBar();
  }
  ImGui::EndChild();
}

void Viewer::frame(float width, float height) {
  ImGui::SetNextWindowPos(ImVec2(0, 0));
  ImGui::SetNextWindowSize(ImVec2(width, height));
  ImGui::Begin("loupe-view", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_MenuBar |
                   ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_NoSavedSettings |
                   ImGuiWindowFlags_NoScrollWithMouse);
  ImGuiIO& io = ImGui::GetIO();
  if (io.KeyCtrl && ImGui::IsKeyPressed('O', false)) s_.show_open_popup = true;
  frame_menu();
  frame_status();

  bool any_doc = false;
  for (int i = 0; i < s_.doc_count(); ++i) any_doc |= s_.docs[size_t(i)] != nullptr;
  bool any_error = false;
  for (int i = 0; i < s_.doc_count(); ++i) {
    if (s_.errors[size_t(i)].empty()) continue;
    any_error = true;
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1, 0.45f, 0.45f, 1));
    ImGui::TextWrapped("%s", s_.errors[size_t(i)].c_str());
    ImGui::PopStyleColor();
  }
  if (!any_doc) {
    if (s_.paths[0].empty() && !any_error) {
      ImGui::Spacing();
      ImGui::TextUnformatted(
          "Open a trace: drop a file on this window, use File > Open, or run `loupe-view trace.json.gz`.");
    } else if (busy()) {
      ImGui::TextDisabled("reading...");
    }
    if (!s_.recent.empty() && !busy()) {
      ImGui::Spacing();
      ImGui::TextDisabled("recent traces");
      for (const std::string& r : s_.recent) {
        if (ImGui::Selectable(r.c_str())) s_.requested_open = r;
      }
    }
  } else {
    ImVec2 avail = ImGui::GetContentRegionAvail();
    if (s_.panel_height <= 0) s_.panel_height = std::round(avail.y * 0.36f);
    s_.panel_height = std::clamp(s_.panel_height, 60.0f, std::max(60.0f, avail.y - 120));
    const float splitter = 6;
    draw_timelines(s_, ImVec2(avail.x, std::max(60.0f, avail.y - s_.panel_height - splitter)));
    ImGui::InvisibleButton("##splitter", ImVec2(avail.x, splitter));
    if (ImGui::IsItemHovered() || ImGui::IsItemActive()) ImGui::SetMouseCursor(ImGuiMouseCursor_ResizeNS);
    if (ImGui::IsItemActive()) s_.panel_height -= io.MouseDelta.y;
    frame_panels(0);
  }
  frame_open_popup();
  ImGui::End();
  // A rank clicked: expanded now, or once the job's analysis is done (it
  // reads the model the toggle rebuilds); a failure is shown.
  if (s_.requested_toggle) {
    const size_t doc = size_t(s_.requested_toggle->doc);
    std::string why;
    bool done = toggle_rank(int(doc), s_.requested_toggle->rank, &why);
    if (!done && analysing_[doc].valid()) return;
    if (!done) s_.errors[doc] = why;
    s_.requested_toggle.reset();
  }
}

}  // namespace loupe::app
