// The panels under the timeline, listed once: what `--panel` calls each,
// the title of its tab, in the order the tabs appear. The viewer draws
// them by a switch over Panel (viewer.cpp), so a new panel is one entry
// here, one case there and its draw function (docs/extending.md).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace loupe::view {

enum class Panel { findings, statistics, compiles, details, diff };

struct PanelInfo {
  Panel panel;
  const char* name;   // as --panel takes it
  const char* title;  // the tab's label
};

inline constexpr PanelInfo kPanels[] = {
    {Panel::findings, "findings", "Findings"},
    {Panel::statistics, "statistics", "Statistics"},
    {Panel::compiles, "compiles", "Compiles"},
    {Panel::details, "details", "Details"},
    {Panel::diff, "diff", "Diff"},
};

// The panel of that name; nullopt for another name.
std::optional<Panel> panel_named(std::string_view name);

// "findings, statistics, compiles, details, diff" for messages; with
// `last` = " or ", "..., details or diff" for help.
std::string panel_names(std::string_view last = ", ");

}  // namespace loupe::view
