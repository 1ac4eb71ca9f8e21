#include <imgui.h>

#include "loupe/prof/units.h"
#include "panel_widgets.h"
#include "panels.h"

namespace loupe::app {

void draw_compile_panel(ViewState& s) {
  static int doc_index = 0;
  Document* d = analysed_doc(s, doc_index, false);
  if (!d) return;
  const auto& histories = d->analysis->compiles;
  if (histories.empty()) {
    ImGui::TextDisabled("no jitted functions in this trace");
    return;
  }
  const prof::TraceModel& m = d->model;
  ImGui::BeginChild("##compiles");
  for (size_t h = 0; h < histories.size(); ++h) {
    const CompileHistory& fn = histories[h];
    ImGui::PushID(int(h));
    bool open = ImGui::TreeNodeEx("##fn", ImGuiTreeNodeFlags_DefaultOpen, "%s: %zu compile%s, %s; %s cache hit%s",
                                  fn.function.c_str(), fn.compiles.size(), fn.compiles.size() == 1 ? "" : "s",
                                  prof::format_duration(fn.compile_ns).c_str(), prof::format_count(fn.hits).c_str(),
                                  fn.hits == 1 ? "" : "s");
    if (open) {
      ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit;
      if (ImGui::BeginTable("##history", 8, flags)) {
        for (const char* c : {"at", "kind", "duration", "trace", "optimize", "codegen", "signature", "reason"}) {
          ImGui::TableSetupColumn(c);
        }
        ImGui::TableHeadersRow();
        for (size_t i = 0; i < fn.compiles.size(); ++i) {
          const auto& e = fn.compiles[i];
          const prof::Compiles& c = m.compiles[e.table];
          ImGui::TableNextRow();
          ImGui::TableNextColumn();
          ImGui::PushID(int(i));
          bool on = s.selection.same(doc_index, view::LaneKind::recompiles, e.table, e.index);
          if (ImGui::Selectable(prof::format_duration(c.start[e.index]).c_str(), on,
                                ImGuiSelectableFlags_SpanAllColumns)) {
            s.selection = {true, doc_index, view::LaneKind::recompiles, e.table, e.index};
            zoom_to_range(s, double(c.start[e.index] - d->origin), double(c.end(e.index) - d->origin));
          }
          ImGui::PopID();
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(i == 0 && c.kind[e.index] == prof::CompileKind::miss
                                     ? "first"
                                     : std::string(prof::name_of(c.kind[e.index])).c_str());
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(prof::format_duration(c.dur[e.index]).c_str());
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(prof::format_duration(c.trace_ns[e.index]).c_str());
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(prof::format_duration(c.optimize_ns[e.index]).c_str());
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(prof::format_duration(c.codegen_ns[e.index]).c_str());
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(m.str(c.signature[e.index]).c_str());
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(c.reason[e.index].c_str());
        }
        ImGui::EndTable();
      }
      ImGui::TreePop();
    }
    ImGui::PopID();
  }
  ImGui::EndChild();
}

}  // namespace loupe::app
