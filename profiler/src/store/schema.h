// The trace file's schema: the one definition the writer
// creates and the reader checks files against. docs/trace-format.md
// explains each table and column.
#pragma once

#include <span>
#include <string_view>

namespace loupe::prof::store {

// CREATE statements for every table, in order.
const char* schema_sql();

// The tables of the schema, in the order schema_sql() creates them.
std::span<const std::string_view> schema_tables();

// The minor version of format 1 that added `table`, or its `column` (0 for
// those of 1.0): a file of an older minor version lacks it, and reads as
// if the table were empty, or the column held its default.
int minor_version_adding(std::string_view table, std::string_view column = {});

// The enumeration tables, filled from trace_format.h's names at creation.
struct EnumTable {
  std::string_view table;
  std::span<const std::string_view> names;
};
std::span<const EnumTable> enum_tables();

}  // namespace loupe::prof::store
