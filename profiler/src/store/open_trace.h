// Opens a trace file for reading, defensively: the one gate every reader
// (load_trace, `loupe sql`, `loupe info`) goes through.
#pragma once

#include <string>
#include <string_view>

#include "store/sqlite.h"

namespace loupe::prof::store {

// Opens `path` read-only with SQLite's defensive settings, and checks that
// it is a loupe trace of a known major version whose tables have the
// expected shape. Throws TraceError naming the file and the problem.
Db open_trace(const std::string& path);

// Whether the file has the table: one added by a later minor version
// than the file's (minor_version_adding) may be absent, and reads as empty.
bool has_table(sqlite3* db, std::string_view table);
// The same for a column added to a table after 1.0.
bool has_column(sqlite3* db, std::string_view table, std::string_view column);

// Opens any SQLite file read-only with the same defensive settings, but
// checks nothing about its schema (for `loupe sql` on damaged files).
Db open_sqlite_read_only(const std::string& path);

}  // namespace loupe::prof::store
