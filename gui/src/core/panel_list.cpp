#include "loupe/view/panel_list.h"

#include <iterator>

namespace loupe::view {

std::optional<Panel> panel_named(std::string_view name) {
  for (const PanelInfo& p : kPanels) {
    if (name == p.name) return p.panel;
  }
  return std::nullopt;
}

std::string panel_names(std::string_view last) {
  std::string names;
  for (const PanelInfo& p : kPanels) {
    if (!names.empty()) names += &p == std::end(kPanels) - 1 ? last : std::string_view(", ");
    names += p.name;
  }
  return names;
}

}  // namespace loupe::view
