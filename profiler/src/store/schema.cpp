#include "store/schema.h"

#include <array>

#include "loupe/prof/trace_format.h"

namespace loupe::prof::store {

// Event tables are WITHOUT ROWID tables clustered on (track, start, id):
// rows of one track are stored in time order, so a time-range query on one
// track is a range scan of the primary key and needs no separate index, and
// appends by track fill pages densely. `id` numbers the rows of each table
// in the order they were written and breaks ties between equal starts.
static const char kSchema[] = R"sql(
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

CREATE TABLE devices(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  kind INTEGER NOT NULL,
  memory_capacity INTEGER NOT NULL,
  copy_bandwidth INTEGER NOT NULL
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
  function INTEGER NOT NULL
);

CREATE TABLE host_spans(
  thread INTEGER NOT NULL,
  start INTEGER NOT NULL,
  id INTEGER NOT NULL,
  dur INTEGER NOT NULL,
  name INTEGER NOT NULL,
  kind INTEGER NOT NULL,
  depth INTEGER NOT NULL,
  callsite INTEGER NOT NULL,
  PRIMARY KEY(thread, start, id)
) WITHOUT ROWID;

CREATE TABLE instants(
  thread INTEGER NOT NULL,
  time INTEGER NOT NULL,
  id INTEGER NOT NULL,
  name INTEGER NOT NULL,
  kind INTEGER NOT NULL,
  PRIMARY KEY(thread, time, id)
) WITHOUT ROWID;

CREATE TABLE counters(
  name INTEGER NOT NULL,
  time INTEGER NOT NULL,
  id INTEGER NOT NULL,
  value REAL NOT NULL,
  PRIMARY KEY(name, time, id)
) WITHOUT ROWID;

CREATE TABLE device_ops(
  device INTEGER NOT NULL,
  stream INTEGER NOT NULL,
  start INTEGER NOT NULL,
  id INTEGER NOT NULL,
  dur INTEGER NOT NULL,
  kind INTEGER NOT NULL,
  name INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  copy_kind INTEGER NOT NULL,
  correlation INTEGER NOT NULL,
  PRIMARY KEY(device, stream, start, id)
) WITHOUT ROWID;

CREATE TABLE launches(
  thread INTEGER NOT NULL,
  start INTEGER NOT NULL,
  id INTEGER NOT NULL,
  dur INTEGER NOT NULL,
  name INTEGER NOT NULL,
  device INTEGER NOT NULL,
  stream INTEGER NOT NULL,
  correlation INTEGER NOT NULL,
  PRIMARY KEY(thread, start, id)
) WITHOUT ROWID;

CREATE TABLE transfers(
  thread INTEGER NOT NULL,
  start INTEGER NOT NULL,
  id INTEGER NOT NULL,
  dur INTEGER NOT NULL,
  device INTEGER NOT NULL,
  direction INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  synchronous INTEGER NOT NULL,
  implicit INTEGER NOT NULL,
  host_memory INTEGER NOT NULL,
  callsite INTEGER NOT NULL,
  correlation INTEGER NOT NULL,
  PRIMARY KEY(thread, start, id)
) WITHOUT ROWID;

CREATE TABLE memory_events(
  device INTEGER NOT NULL,
  time INTEGER NOT NULL,
  id INTEGER NOT NULL,
  kind INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  address INTEGER NOT NULL,
  allocated INTEGER NOT NULL,
  reserved INTEGER NOT NULL,
  callsite INTEGER NOT NULL,
  PRIMARY KEY(device, time, id)
) WITHOUT ROWID;

CREATE TABLE compiles(
  thread INTEGER NOT NULL,
  start INTEGER NOT NULL,
  id INTEGER NOT NULL,
  dur INTEGER NOT NULL,
  function INTEGER NOT NULL,
  signature INTEGER NOT NULL,
  kind INTEGER NOT NULL,
  reason TEXT NOT NULL,
  trace_ns INTEGER NOT NULL,
  optimize_ns INTEGER NOT NULL,
  codegen_ns INTEGER NOT NULL,
  nodes INTEGER NOT NULL,
  kernels INTEGER NOT NULL,
  ir TEXT NOT NULL,
  callsite INTEGER NOT NULL,
  function_object INTEGER NOT NULL,
  PRIMARY KEY(thread, start, id)
) WITHOUT ROWID;

CREATE TABLE steps(
  thread INTEGER NOT NULL,
  start INTEGER NOT NULL,
  id INTEGER NOT NULL,
  dur INTEGER NOT NULL,
  number INTEGER NOT NULL,
  PRIMARY KEY(thread, start, id)
) WITHOUT ROWID;

CREATE TABLE tracks(
  tbl TEXT NOT NULL,
  a INTEGER NOT NULL,
  b INTEGER NOT NULL,
  rows INTEGER NOT NULL,
  first_start INTEGER NOT NULL,
  last_end INTEGER NOT NULL,
  PRIMARY KEY(tbl, a, b)
) WITHOUT ROWID;
)sql";

const char* schema_sql() { return kSchema; }

static constexpr std::array<std::string_view, 24> kTables = {
    "meta",          "strings",         "span_kinds",         "device_op_kinds", "copy_kinds",
    "host_memory_kinds", "memory_event_kinds", "compile_kinds", "device_kinds",   "devices",
    "streams",       "threads",         "callsites",          "host_spans",      "instants",
    "counters",      "device_ops",      "launches",           "transfers",       "memory_events",
    "compiles",      "steps",           "tracks",             "",
};

std::span<const std::string_view> schema_tables() { return {kTables.data(), kTables.size() - 1}; }

std::span<const EnumTable> enum_tables() {
  static const std::array<EnumTable, 7> tables = {{
      {"span_kinds", span_kind_names()},
      {"device_op_kinds", device_op_kind_names()},
      {"copy_kinds", copy_kind_names()},
      {"host_memory_kinds", host_memory_names()},
      {"memory_event_kinds", memory_event_kind_names()},
      {"compile_kinds", compile_kind_names()},
      {"device_kinds", device_kind_names()},
  }};
  return tables;
}

}  // namespace loupe::prof::store
