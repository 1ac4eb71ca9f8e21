// The panels under the timeline. Each draws into the current window.
#pragma once

#include "view_state.h"

namespace loupe::app {

// The analysis report, by impact; a click zooms to the finding.
void draw_findings_panel(ViewState& s);
// `loupe summary`'s tables: sortable, filterable; a click highlights a name.
void draw_statistics_panel(ViewState& s);
// Per jitted function, its compiles with reasons and times.
void draw_compile_panel(ViewState& s);
// `loupe diff`'s tables for the two traces being compared.
void draw_diff_panel(ViewState& s);
// The selected event, in full.
void draw_details_panel(ViewState& s);

}  // namespace loupe::app
