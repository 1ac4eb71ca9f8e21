#include "panel_widgets.h"

#include <imgui.h>

namespace loupe::app {

void what_value_table(const char* id, const std::vector<std::pair<std::string, std::string>>& rows) {
  if (!ImGui::BeginTable(id, 2, ImGuiTableFlags_RowBg)) return;
  ImGui::TableSetupColumn("what", ImGuiTableColumnFlags_WidthFixed, ImGui::GetFontSize() * 15);
  ImGui::TableSetupColumn("value", ImGuiTableColumnFlags_WidthStretch);
  for (const auto& [what, value] : rows) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextDisabled("%s", what.c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(value.c_str());
  }
  ImGui::EndTable();
}

Document* analysed_doc(ViewState& s, int& doc_index, bool then_same_line) {
  if (s.compare) {
    ImGui::RadioButton("base", &doc_index, 0);
    ImGui::SameLine();
    ImGui::RadioButton("head", &doc_index, 1);
    if (then_same_line) ImGui::SameLine();
  } else {
    doc_index = 0;
  }
  Document* d = s.doc(doc_index);
  if (!d || !d->analysis) {
    ImGui::TextDisabled("computing...");
    return nullptr;
  }
  return d;
}

}  // namespace loupe::app
