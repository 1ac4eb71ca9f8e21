// The event tables of a TraceModel as whole columns for Python.
#pragma once

#include <nanobind/nanobind.h>

#include <string>
#include <vector>

#include "loupe/prof/trace_model.h"

namespace loupe::python {

// One column of an event table, over every track of the table: the track's
// key repeated for each of its events, then the events' own fields. A
// column of numbers, ids or enumerators is one NumPy array (never a Python
// object per row); a column of free text is a list of str.
struct Column {
  std::string name;
  std::string check;            // trace_tables.h's check: "string", "kind", "flag", "count", ...
  nanobind::object values;      // numpy.ndarray, or list[str] for "text"
  nanobind::object categories;  // the enumerators' names for "kind", else None
};

// Every column of the table `table` in docs/trace-format.md's order, but
// for the SQL-only `id`. Throws std::invalid_argument for an unknown table.
std::vector<Column> table_columns(const prof::TraceModel& model, const std::string& table);

}  // namespace loupe::python
