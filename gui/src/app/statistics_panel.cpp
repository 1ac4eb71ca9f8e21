#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cctype>

#include "loupe/prof/units.h"
#include "panel_widgets.h"
#include "panels.h"

namespace loupe::app {

namespace {

bool contains_nocase(const std::string& text, const std::string& needle) {
  if (needle.empty()) return true;
  auto it = std::search(text.begin(), text.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != text.end();
}

// Which rows to show, in which order: kept between frames, redone when the
// table, its sort or the filter changes.
struct RowOrder {
  std::shared_ptr<const Analysis> owner;  // keeps `table` alive, so its address names it
  const prof::StatTable* table = nullptr;
  std::string filter;
  std::vector<size_t> rows;
};

void sort_rows(const prof::StatTable& t, std::vector<size_t>& rows, const ImGuiTableSortSpecs* specs) {
  if (!specs || specs->SpecsCount == 0) return;
  std::stable_sort(rows.begin(), rows.end(), [&](size_t a, size_t b) {
    for (int i = 0; i < specs->SpecsCount; ++i) {
      const ImGuiTableColumnSortSpecs& sp = specs->Specs[i];
      const auto& ca = t.rows[a][size_t(sp.ColumnIndex)];
      const auto& cb = t.rows[b][size_t(sp.ColumnIndex)];
      int cmp = 0;
      if (ca.numeric && cb.numeric) cmp = ca.value < cb.value ? -1 : ca.value > cb.value ? 1 : 0;
      else cmp = ca.text.compare(cb.text);
      if (cmp != 0) return sp.SortDirection == ImGuiSortDirection_Ascending ? cmp < 0 : cmp > 0;
    }
    return false;
  });
}

// One radio button per table; keeps `table_index` in range.
void draw_table_choice(const std::vector<prof::StatTable>& tables, int& table_index) {
  table_index = std::clamp(table_index, 0, int(tables.size()) - 1);
  for (size_t i = 0; i < tables.size(); ++i) {
    if (i) ImGui::SameLine();
    if (ImGui::RadioButton(tables[i].title.c_str(), table_index == int(i))) table_index = int(i);
  }
}

// The name filter, and beside it what the timeline highlights, with a way to clear it.
void draw_filter_and_highlight(ViewState& s, std::string& filter) {
  ImGui::SetNextItemWidth(260);
  ImGui::InputTextWithHint("##filter", "filter by name", &filter);
  if (!s.highlight.empty()) {
    ImGui::SameLine();
    uint64_t matches = 0;
    for (const auto& doc : s.docs) matches += doc ? doc->highlight.matches : 0;
    if (matches)
      ImGui::TextDisabled("highlighted: %s (%s events)", s.highlight.c_str(), prof::format_count(matches).c_str());
    else ImGui::TextDisabled("no event on the timeline is named %s", s.highlight.c_str());
    ImGui::SameLine();
    if (ImGui::SmallButton("clear")) set_highlight(s, "");
  }
}

// Keeps the rows whose name contains the filter, in table order.
void refilter_rows(RowOrder& order, const Document& d, const prof::StatTable& t, const std::string& filter) {
  order.owner = d.analysis;
  order.table = &t;
  order.filter = filter;
  order.rows.clear();
  for (size_t r = 0; r < t.rows.size(); ++r) {
    if (!t.rows[r].empty() && contains_nocase(t.rows[r][0].text, filter)) order.rows.push_back(r);
  }
}

void setup_columns(const prof::StatTable& t, int ncols) {
  ImGui::TableSetupScrollFreeze(1, 1);
  for (int c = 0; c < ncols; ++c) {
    ImGuiTableColumnFlags cf = c == 0 ? ImGuiTableColumnFlags_WidthStretch : ImGuiTableColumnFlags_PreferSortDescending;
    ImGui::TableSetupColumn(t.columns[size_t(c)].c_str(), cf);
  }
  ImGui::TableHeadersRow();
}

// Rows come as `loupe summary` prints them (largest total first) until
// a header is clicked (tristate: a third click goes back to that).
void sort_if_asked(const prof::StatTable& t, std::vector<size_t>& rows, bool refilter) {
  if (ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs(); specs && (specs->SpecsDirty || refilter)) {
    if (specs->SpecsCount == 0) std::sort(rows.begin(), rows.end());
    else sort_rows(t, rows, specs);
    specs->SpecsDirty = false;
  }
}

// One row: its name is a selectable that spans the row and toggles the
// highlight; the other cells are text.
void draw_row(ViewState& s, const std::vector<prof::StatCell>& row, int i, int ncols) {
  for (int c = 0; c < ncols && size_t(c) < row.size(); ++c) {
    ImGui::TableSetColumnIndex(c);
    if (c == 0) {
      ImGui::PushID(i);
      bool on = row[0].text == s.highlight;
      if (ImGui::Selectable(row[0].text.c_str(), on, ImGuiSelectableFlags_SpanAllColumns)) {
        set_highlight(s, on ? "" : row[0].text);
      }
      ImGui::PopID();
    } else {
      ImGui::TextUnformatted(row[size_t(c)].text.c_str());
    }
  }
}

void draw_rows(ViewState& s, const prof::StatTable& t, const std::vector<size_t>& rows, int ncols) {
  ImGuiListClipper clipper;
  clipper.Begin(int(rows.size()));
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      const auto& row = t.rows[rows[size_t(i)]];
      ImGui::TableNextRow();
      draw_row(s, row, i, ncols);
    }
  }
}

}  // namespace

void draw_statistics_panel(ViewState& s) {
  static int table_index = 0;
  static std::string filter;
  static RowOrder order;
  static int doc_index = 0;
  Document* d = analysed_doc(s, doc_index, true);
  if (!d) return;
  const auto& tables = d->analysis->statistics;
  if (tables.empty()) return;
  draw_table_choice(tables, table_index);
  draw_filter_and_highlight(s, filter);
  const prof::StatTable& t = tables[size_t(table_index)];
  if (t.columns.empty()) return;
  const int ncols = int(std::min<size_t>(t.columns.size(), 64));
  bool refilter = order.table != &t || order.filter != filter;
  if (refilter) refilter_rows(order, *d, t, filter);
  ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_SortMulti | ImGuiTableFlags_SortTristate |
                          ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders | ImGuiTableFlags_ScrollY |
                          ImGuiTableFlags_Resizable | ImGuiTableFlags_SizingFixedFit;
  if (ImGui::BeginTable("##stats", ncols, flags)) {
    setup_columns(t, ncols);
    sort_if_asked(t, order.rows, refilter);
    draw_rows(s, t, order.rows, ncols);
    ImGui::EndTable();
  }
}

}  // namespace loupe::app
