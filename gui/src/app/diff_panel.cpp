#include <fmt/format.h>
#include <imgui.h>

#include <cmath>

#include "loupe/prof/units.h"
#include "panels.h"

namespace loupe::app {

namespace {

std::string value_text(const prof::DiffRow& r, double v) {
  if (r.unit == "ns") return prof::format_duration(int64_t(std::llround(v)));
  if (r.unit == "bytes") return prof::format_bytes(int64_t(std::llround(v)));
  if (r.unit == "fraction") return prof::format_percent(v);
  if (r.unit == "count" && v == std::floor(v) && std::fabs(v) < 1e15) {
    return fmt::format("{}{}", v < 0 ? "-" : "", prof::format_count(uint64_t(std::fabs(v))));
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

void section(ViewState& s, const char* title, const std::vector<prof::DiffRow>& rows, bool names) {
  ImGui::TextUnformatted(title);
  ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable(title, 5, flags)) return;
  ImGui::TableSetupColumn("name", ImGuiTableColumnFlags_WidthStretch);
  for (const char* c : {"base", "head", "delta", "change"}) ImGui::TableSetupColumn(c);
  ImGui::TableHeadersRow();
  for (size_t i = 0; i < rows.size(); ++i) {
    const prof::DiffRow& r = rows[i];
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::PushID(int(i));
    if (names) {
      bool on = s.highlight == r.name;
      if (ImGui::Selectable(r.name.c_str(), on, ImGuiSelectableFlags_SpanAllColumns))
        set_highlight(s, on ? "" : r.name);
    } else {
      ImGui::TextUnformatted(r.name.c_str());
    }
    ImGui::PopID();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(value_text(r, r.base).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(value_text(r, r.head).c_str());
    ImGui::TableNextColumn();
    ImVec4 col = !r.beyond_noise ? ImVec4(0.6f, 0.63f, 0.68f, 1)
                 : r.delta > 0   ? ImVec4(1.0f, 0.45f, 0.4f, 1)
                                 : ImVec4(0.45f, 0.9f, 0.5f, 1);
    ImGui::TextColored(col, "%s%s", r.delta > 0 ? "+" : "", value_text(r, r.delta).c_str());
    ImGui::TableNextColumn();
    if (r.base != 0) ImGui::TextColored(col, "%+.1f%%%s", r.delta_fraction * 100, r.beyond_noise ? " *" : "");
    else if (r.beyond_noise) ImGui::TextColored(col, "%s *", r.change.c_str());
  }
  ImGui::EndTable();
}

}  // namespace

void draw_diff_panel(ViewState& s) {
  if (!s.diff) {
    ImGui::TextDisabled("%s", s.diff_error.empty() ? "comparing..." : s.diff_error.c_str());
    return;
  }
  const prof::TraceDiff& d = *s.diff;
  ImGui::Text("base %s, head %s; changes beyond noise (%s) are marked *; click a name to highlight it in both",
              s.paths[0].c_str(), s.paths[1].c_str(), prof::format_percent(d.noise_fraction).c_str());
  if (!d.verdict.empty()) ImGui::TextUnformatted(d.verdict.c_str());
  ImGui::BeginChild("##diff");
  section(s, "metrics", d.metrics, false);
  ImGui::Spacing();
  section(s, "device operations by name (time in the median step)", d.device_ops, true);
  ImGui::Spacing();
  section(s, "device operations by name (count in the median step)", d.device_op_counts, true);
  ImGui::Spacing();
  section(s, "host spans by name (time in the median step)", d.host_spans, true);
  ImGui::Spacing();
  section(s, "launch calls by name (calls in the median step)", d.launches, true);
  ImGui::Spacing();
  section(s, "critical path by what bounds it (time per step)", d.critical_path, false);
  ImGui::Spacing();
  section(s, "critical path by device operation (time on it per step)", d.critical_path_ops, true);
  ImGui::EndChild();
}

}  // namespace loupe::app
