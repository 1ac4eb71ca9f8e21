// Pieces the panels share: one place each, so that they look alike.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "view_state.h"

namespace loupe::app {

// (what, value) rows in a two-column table, the `what` column dimmed:
// a finding's evidence, an event's details.
void what_value_table(const char* id, const std::vector<std::pair<std::string, std::string>>& rows);

// When comparing, base/head buttons pick the trace a panel shows (kept in
// `doc_index`; `then_same_line` continues the row after them). The picked
// trace once its analysis is done; until then null, and the panel says so.
Document* analysed_doc(ViewState& s, int& doc_index, bool then_same_line);

}  // namespace loupe::app
