// What every model's events must satisfy before an analysis reads them,
// whatever made the model (a file read by load_trace(), rows built in
// memory by ModelBuilder): times within +-2^62 ns, no negative duration,
// column totals under 2^60, and every string and call site a row names
// present (docs/trace-format.md, "What a reader checks").
#pragma once

#include <functional>

#include "loupe/prof/trace_model.h"

namespace loupe::prof::store {

// Checks the event tables `wanted` names (by table name, trace_tables.h);
// throws StoreError naming the table and the bad value.
void check_events(const TraceModel& m, const std::function<bool(const char* table)>& wanted);

// Sets the model's start_ns and end_ns: the earliest start and the latest
// end of any event (0, 0 when there is none).
void set_extent(TraceModel& m);

}  // namespace loupe::prof::store
