#include "store/schema.h"

#include <fmt/format.h>

#include <array>
#include <string>

#include "loupe/prof/trace_format.h"
#include "loupe/prof/trace_tables.h"

namespace loupe::prof::store {

// Event tables are WITHOUT ROWID tables clustered on (track, start, id):
// rows of one track are stored in time order, so a time-range query on one
// track is a range scan of the primary key and needs no separate index, and
// appends by track fill pages densely. `id` numbers the rows of each table
// in the order they were written and breaks ties between equal starts.
//
// Before the event tables: the metadata, strings, enumerations and the
// small tables.
static const char kSchemaHead[] = R"sql(
CREATE TABLE meta(
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE strings(
  id INTEGER PRIMARY KEY,
  text TEXT NOT NULL
);

CREATE TABLE span_kinds(id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE device_op_kinds(id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE copy_kinds(id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE host_memory_kinds(id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE memory_event_kinds(id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE compile_kinds(id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE device_kinds(id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE sync_kinds(id INTEGER PRIMARY KEY, name TEXT NOT NULL);

CREATE TABLE devices(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  kind INTEGER NOT NULL,
  memory_capacity INTEGER NOT NULL,
  copy_bandwidth INTEGER NOT NULL,
  detail TEXT NOT NULL
);

CREATE TABLE streams(
  device INTEGER NOT NULL,
  stream INTEGER NOT NULL,
  name TEXT NOT NULL,
  PRIMARY KEY(device, stream)
) WITHOUT ROWID;

CREATE TABLE threads(
  id INTEGER PRIMARY KEY,
  process INTEGER NOT NULL,
  os_tid INTEGER NOT NULL,
  name TEXT NOT NULL,
  dropped_events INTEGER NOT NULL
);

CREATE TABLE callsites(
  id INTEGER PRIMARY KEY,
  file INTEGER NOT NULL,
  line INTEGER NOT NULL,
  function INTEGER NOT NULL,
  parent INTEGER NOT NULL
);

)sql";

// After the event tables (generated from trace_tables.h below): the
// tracks table.
static const char kSchemaTail[] = R"sql(CREATE TABLE tracks(
  tbl TEXT NOT NULL,
  a INTEGER NOT NULL,
  b INTEGER NOT NULL,
  rows INTEGER NOT NULL,
  first_start INTEGER NOT NULL,
  last_end INTEGER NOT NULL,
  PRIMARY KEY(tbl, a, b)
) WITHOUT ROWID;
)sql";

namespace {

// One event table's CREATE statement, built column by column.
class EventTableSql {
 public:
  explicit EventTableSql(std::string_view name) : sql_(fmt::format("CREATE TABLE {}(\n", name)) {}
  // `check` is the column's check in trace_tables.h, which gives its type.
  void column(std::string_view name, std::string_view check) {
    std::string_view type = check == "real" ? "REAL" : check == "text" ? "TEXT" : "INTEGER";
    sql_ += fmt::format("  {} {} NOT NULL,\n", name, type);
  }
  void key(std::string_view name) { key_ += fmt::format("{}{}", key_.empty() ? "" : ", ", name); }
  std::string text() const { return fmt::format("{}  PRIMARY KEY({})\n) WITHOUT ROWID;\n\n", sql_, key_); }

 private:
  std::string sql_, key_;
};

#define LOUPE_SQL_KEY(name, type, check, init) \
  t.column(#name, #check);                     \
  t.key(#name);
#define LOUPE_SQL_SPAN(start, dur) \
  t.column(#start, "integer");     \
  t.key(#start);                   \
  t.column("id", "integer");       \
  t.key("id");                     \
  t.column(#dur, "integer");
#define LOUPE_SQL_POINT(time) \
  t.column(#time, "integer"); \
  t.key(#time);               \
  t.column("id", "integer");  \
  t.key("id");
#define LOUPE_SQL_COLUMN(name, type, check, init) t.column(#name, #check);
#define LOUPE_SQL_TABLE(Row, Track, table, member)                                                           \
  {                                                                                                          \
    EventTableSql t(#table);                                                                                 \
    LOUPE_COLUMNS_##table(LOUPE_SQL_KEY, LOUPE_SQL_SPAN, LOUPE_SQL_POINT, LOUPE_SQL_COLUMN) sql += t.text(); \
  }

std::string build_schema() {
  std::string sql = kSchemaHead;
  LOUPE_EVENT_TABLES(LOUPE_SQL_TABLE)
  return sql + kSchemaTail;
}

#undef LOUPE_SQL_TABLE
#undef LOUPE_SQL_COLUMN
#undef LOUPE_SQL_POINT
#undef LOUPE_SQL_SPAN
#undef LOUPE_SQL_KEY

#define LOUPE_TABLE_NAME(Row, Track, table, member) std::string_view(#table),
constexpr std::array kTables = {
    std::string_view("meta"),
    std::string_view("strings"),
    std::string_view("span_kinds"),
    std::string_view("device_op_kinds"),
    std::string_view("copy_kinds"),
    std::string_view("host_memory_kinds"),
    std::string_view("memory_event_kinds"),
    std::string_view("compile_kinds"),
    std::string_view("device_kinds"),
    std::string_view("sync_kinds"),
    std::string_view("devices"),
    std::string_view("streams"),
    std::string_view("threads"),
    std::string_view("callsites"),
    LOUPE_EVENT_TABLES(LOUPE_TABLE_NAME) std::string_view("tracks"),
};
#undef LOUPE_TABLE_NAME

}  // namespace

const char* schema_sql() {
  static const std::string sql = build_schema();
  return sql.c_str();
}

std::span<const std::string_view> schema_tables() { return kTables; }

int minor_version_adding(std::string_view table, std::string_view column) {
  if (column.empty()) {
    if (table == "collectives") return 2;
    return table == "syncs" || table == "sync_kinds" ? 5 : 0;
  }
  if (table == "devices" && column == "detail") return 3;
  return table == "callsites" && column == "parent" ? 4 : 0;
}

std::span<const EnumTable> enum_tables() {
  static const std::array<EnumTable, 8> tables = {{
      {"span_kinds", span_kind_names()},
      {"device_op_kinds", device_op_kind_names()},
      {"copy_kinds", copy_kind_names()},
      {"host_memory_kinds", host_memory_names()},
      {"memory_event_kinds", memory_event_kind_names()},
      {"compile_kinds", compile_kind_names()},
      {"device_kinds", device_kind_names()},
      {"sync_kinds", sync_kind_names()},
  }};
  return tables;
}

}  // namespace loupe::prof::store
