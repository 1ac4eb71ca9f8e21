#include <imgui.h>

#include <algorithm>

#include "loupe/prof/units.h"
#include "panel_widgets.h"
#include "panels.h"

namespace loupe::app {

namespace {

ImVec4 severity_color(prof::Severity s) {
  switch (s) {
    case prof::Severity::error: return ImVec4(1.0f, 0.35f, 0.35f, 1);
    case prof::Severity::warning: return ImVec4(1.0f, 0.78f, 0.25f, 1);
    case prof::Severity::info: return ImVec4(0.45f, 0.8f, 0.95f, 1);
  }
  return ImVec4(1, 1, 1, 1);
}

}  // namespace

void draw_findings_panel(ViewState& s) {
  if (s.compare) {
    ImGui::RadioButton("base", &s.finding_doc, 0);
    ImGui::SameLine();
    ImGui::RadioButton("head", &s.finding_doc, 1);
  }
  Document* d = s.doc(s.finding_doc);
  if (!d) return;
  if (!d->analysis) {
    ImGui::TextDisabled("%s", d->analysis_error.empty() ? "analysing..." : d->analysis_error.c_str());
    return;
  }
  const prof::AnalysisReport& r = d->analysis->report;
  ImGui::Text("%zu findings, active window %s", r.findings.size(),
              prof::format_duration(r.window_end - r.window_start).c_str());
  if (r.findings.empty()) return;
  float list_w = std::max(300.0f, ImGui::GetContentRegionAvail().x * 0.5f);
  ImGui::BeginChild("##findings", ImVec2(list_w, 0), true);
  for (size_t i = 0; i < r.findings.size(); ++i) {
    const prof::Finding& f = r.findings[i];
    ImGui::PushID(int(i));
    bool selected = s.selected_finding == int(i);
    if (ImGui::Selectable("##f", selected, 0, ImVec2(0, ImGui::GetTextLineHeight() * 2 + 2))) {
      select_finding(s, s.finding_doc, int(i));
    }
    ImGui::SameLine(0, 0);
    ImGui::BeginGroup();
    ImGui::TextColored(severity_color(f.severity), "%2zu. [%s] %s", i + 1,
                       std::string(prof::name_of(f.severity)).c_str(), f.rule.c_str());
    ImGui::SameLine();
    ImGui::TextDisabled("impact %s (%s)", prof::format_duration(f.impact_ns).c_str(),
                        prof::format_percent(f.impact_fraction).c_str());
    ImGui::TextUnformatted(f.title.c_str());
    ImGui::EndGroup();
    ImGui::PopID();
  }
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("##finding", ImVec2(0, 0), true);
  if (s.selected_finding >= 0 && size_t(s.selected_finding) < r.findings.size()) {
    const prof::Finding& f = r.findings[size_t(s.selected_finding)];
    ImGui::TextWrapped("%s", f.title.c_str());
    ImGui::Separator();
    what_value_table("##evidence", f.evidence);
    ImGui::Spacing();
    ImGui::TextWrapped("-> %s", f.suggestion.c_str());
    if (!f.ranges.empty()) {
      ImGui::Spacing();
      ImGui::Text("range %zu of %zu", s.finding_range + 1, f.ranges.size());
      ImGui::SameLine();
      bool moved = false;
      if (ImGui::SmallButton("< prev") && s.finding_range > 0) --s.finding_range, moved = true;
      ImGui::SameLine();
      if (ImGui::SmallButton("next >") && s.finding_range + 1 < f.ranges.size()) ++s.finding_range, moved = true;
      if (moved) {
        const prof::TimeRange& tr = f.ranges[s.finding_range];
        zoom_to_range(s, double(tr.start - d->origin), double(tr.end - d->origin));
      }
    }
    if (!s.highlight.empty()) ImGui::TextDisabled("highlighted: %s", s.highlight.c_str());
  } else {
    ImGui::TextDisabled("click a finding to see its evidence and where it happened");
  }
  ImGui::EndChild();
}

}  // namespace loupe::app
