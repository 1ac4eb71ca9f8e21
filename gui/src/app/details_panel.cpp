#include <fmt/format.h>
#include <imgui.h>

#include <cstdlib>

#include "loupe/prof/units.h"
#include "loupe/view/event_details.h"
#include "panel_widgets.h"
#include "panels.h"

namespace loupe::app {

namespace {

// What was live at the clicked point of a memory lane: the totals, the
// categories with evidence, and the allocation sites, most bytes first.
void draw_memory_pick(const MemoryPick& m) {
  const prof::LiveMemory& live = m.live;
  ImGui::Text("device %u memory at %s", m.device, prof::format_duration(m.time).c_str());
  ImGui::Separator();
  std::vector<std::pair<std::string, std::string>> rows = {
      {"allocated", prof::format_bytes(live.allocated)},
      {"held from before the trace", prof::format_bytes(live.held_before)}};
  for (const auto& [category, bytes] : live.by_category) rows.emplace_back(category, prof::format_bytes(bytes));
  what_value_table("##memory totals", rows);
  ImGui::Spacing();
  ImGui::TextDisabled("live blocks of the trace, by where they were allocated");
  // A site with its callers is long: the bytes lead each line.
  for (const prof::LiveSite& site : live.sites) {
    std::string line =
        fmt::format("{:>10} in {:>5} block{}  {}", prof::format_bytes(site.bytes), prof::format_count(site.blocks),
                    site.blocks == 1 ? " " : "s", site.site.empty() ? "unknown call site" : site.site);
    ImGui::TextUnformatted(line.c_str());
  }
}

}  // namespace

void draw_details_panel(ViewState& s) {
  if (s.memory_pick && s.doc(s.memory_pick->doc)) {
    draw_memory_pick(*s.memory_pick);
    return;
  }
  if (!s.selection.active || !s.doc(s.selection.doc)) {
    ImGui::TextDisabled("click an event on the timeline, or a point of a memory lane, to see it here");
    return;
  }
  const Document& d = *s.doc(s.selection.doc);
  view::EventDetails det = view::describe_event(d.model, s.selection.kind, s.selection.table, s.selection.index);
  ImGui::TextUnformatted(det.title.c_str());
  if (s.compare) {
    ImGui::SameLine();
    ImGui::TextDisabled("(%s)", s.selection.doc == 0 ? "base" : "head");
  }
  ImGui::Separator();
  what_value_table("##details", det.lines);
  if (s.flow.found && s.flow.from.same(s.selection.doc, s.selection.kind, s.selection.table, s.selection.index)) {
    view::EventDetails to = view::describe_event(d.model, s.flow.to_kind, s.flow.to.table, s.flow.to.index);
    ImGui::Spacing();
    ImGui::Text("%s: %s", s.flow.to_kind == view::LaneKind::device_ops ? "runs on the device as" : "launched by",
                to.title.c_str());
    ImGui::SameLine();
    ImGui::TextDisabled("(delay %s)", prof::format_duration(std::abs(to.start - det.start)).c_str());
  }
  if (s.selection.kind == view::LaneKind::recompiles) {
    const std::string& ir = d.model.compiles[s.selection.table].ir[s.selection.index];
    if (!ir.empty()) {
      ImGui::Spacing();
      ImGui::TextDisabled("IR");
      ImGui::TextWrapped("%s", ir.c_str());
    }
  }
  if (ImGui::SmallButton("zoom to it (Z)")) {
    zoom_to_range(s, double(det.start - d.origin), double(det.end - d.origin));
  }
}

}  // namespace loupe::app
