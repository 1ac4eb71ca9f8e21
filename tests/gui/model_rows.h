// Builds a TraceModel in memory an event at a time, each event a row of
// trace_rows.h named field by field, as a writer takes them: a hand-built
// model then has every column of its tables, and a column added to a table
// gets its default, as in a model loaded from a file.
#pragma once

#include <algorithm>

#include "loupe/prof/trace_model.h"

namespace loupe::test {

// Appends `row` to the model's track with the row's key (a new one, after
// the others, when none has it; the key is set on either, which changes
// nothing on a track that has it). As in a loaded model, a track's rows
// must come in time order and tracks in the order of their keys.
#define LOUPE_ROWS_SAME_KEY(name, type, check, init) &&track.name == row.name
#define LOUPE_ROWS_SET_KEY(name, type, check, init) track.name = row.name;
#define LOUPE_ROWS_APPEND_SPAN(start, dur) \
  track.start.push_back(row.start);        \
  track.dur.push_back(row.dur);
#define LOUPE_ROWS_APPEND_POINT(time) track.time.push_back(row.time);
#define LOUPE_ROWS_APPEND_COLUMN(name, type, check, init) track.name.push_back(row.name);
#define LOUPE_ROWS_ADD(Row, Track, table, member)                                                       \
  inline void add_row(prof::TraceModel& m, const prof::Row& row) {                                      \
    auto it = std::find_if(m.member.begin(), m.member.end(), [&](const prof::Track& track) {            \
      return true LOUPE_COLUMNS_##table(LOUPE_ROWS_SAME_KEY, LOUPE_IGNORE, LOUPE_IGNORE, LOUPE_IGNORE); \
    });                                                                                                 \
    prof::Track& track = it != m.member.end() ? *it : m.member.emplace_back();                          \
    LOUPE_COLUMNS_##table(LOUPE_ROWS_SET_KEY, LOUPE_ROWS_APPEND_SPAN, LOUPE_ROWS_APPEND_POINT,          \
                          LOUPE_ROWS_APPEND_COLUMN)                                                     \
  }
LOUPE_EVENT_TABLES(LOUPE_ROWS_ADD)
#undef LOUPE_ROWS_ADD
#undef LOUPE_ROWS_APPEND_COLUMN
#undef LOUPE_ROWS_APPEND_POINT
#undef LOUPE_ROWS_APPEND_SPAN
#undef LOUPE_ROWS_SET_KEY
#undef LOUPE_ROWS_SAME_KEY

}  // namespace loupe::test
