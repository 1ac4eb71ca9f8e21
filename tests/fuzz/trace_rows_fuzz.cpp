// The reader and every analysis on a valid trace whose rows were changed:
// where the trace_reader target mutates bytes (and mostly meets SQLite's
// own checks), this one edits rows as a person with sqlite3 could. Any
// value in any column (NULL, text, blobs, reals, the ends of int64), rows
// deleted or copied, on every table including the tracks index. Whatever
// the result, loupe either refuses the file with TraceError or reads it,
// and then every rule, the statistics, the reports and the export run.
//
// The input is one byte of options, then a list of edits of 16 bytes each.
// Option bit 0: rebuild the tracks index from the edited rows afterwards,
// as an editor covering their tracks would, so that the edited values get
// past the index's check and reach the rules.
// An edit:
//   byte 0      table (modulo the number of tables)
//   byte 1      column (modulo the table's columns)
//   byte 2      what to do: set a value, delete the row, copy the row
//   byte 3      the kind of value (NULL, integer, an extreme, real, text, blob)
//   bytes 4-7   which row (modulo the table's rows)
//   bytes 8-15  the value's bits
#include <sqlite3.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "loupe/prof/analysis.h"
#include "loupe/prof/chrome_export.h"
#include "loupe/prof/report_format.h"
#include "loupe/prof/statistics.h"
#include "loupe/prof/synth.h"
#include "loupe/prof/trace_query.h"
#include "loupe/prof/trace_reader.h"

namespace {

struct Table {
  std::string name;
  std::vector<std::string> columns, key;  // all columns; the primary key's
};

// A small valid trace whose schema has no NOT NULL constraints (they only
// bind the writer; a reader must not rely on them), and its tables.
struct Seed {
  std::string bytes;
  std::vector<Table> tables;
};

void exec(sqlite3* db, const std::string& sql) { sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr); }

std::vector<std::string> strings_of(sqlite3* db, const std::string& sql) {
  std::vector<std::string> out;
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) return out;
  while (sqlite3_step(s) == SQLITE_ROW) out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)));
  sqlite3_finalize(s);
  return out;
}

const Seed& seed() {
  static const Seed seed = [] {
    Seed s;
    std::string path = loupe::fuzz::write_input(nullptr, 0, ".seed.db");
    loupe::prof::write_synthetic_trace(path, {.events = 1500, .seed = 7});
    sqlite3* db = nullptr;
    sqlite3_open(path.c_str(), &db);
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 0, nullptr);
    exec(db,
         "PRAGMA writable_schema=ON; UPDATE sqlite_schema SET sql = replace(sql, 'NOT NULL', '') "
         "WHERE type = 'table'; PRAGMA writable_schema=OFF;");
    sqlite3_close(db);
    sqlite3_open(path.c_str(), &db);
    for (const std::string& t : strings_of(db, "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")) {
      Table table{t, strings_of(db, "SELECT name FROM pragma_table_info('" + t + "') ORDER BY cid"),
                  strings_of(db, "SELECT name FROM pragma_table_info('" + t + "') WHERE pk > 0 ORDER BY pk")};
      if (table.key.empty()) table.key = {"rowid"};
      s.tables.push_back(table);
    }
    sqlite3_close(db);
    std::ifstream in(path, std::ios::binary);
    s.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return s;
  }();
  return seed;
}

template <typename T>
T read(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Binds the value an edit asks for.
void bind_value(sqlite3_stmt* s, int index, uint8_t kind, const uint8_t* bits) {
  static const int64_t kExtremes[] = {std::numeric_limits<int64_t>::min(),
                                      std::numeric_limits<int64_t>::max(),
                                      int64_t(1) << 62,
                                      -(int64_t(1) << 62),
                                      (int64_t(1) << 32),
                                      -1,
                                      0,
                                      1};
  int64_t i = read<int64_t>(bits);
  switch (kind % 6) {
    case 0: sqlite3_bind_null(s, index); break;
    case 1: sqlite3_bind_int64(s, index, i); break;
    case 2: sqlite3_bind_int64(s, index, kExtremes[uint64_t(i) % std::size(kExtremes)]); break;
    case 3: sqlite3_bind_double(s, index, read<double>(bits)); break;
    case 4: sqlite3_bind_text(s, index, reinterpret_cast<const char*>(bits), 8, SQLITE_TRANSIENT); break;
    case 5: sqlite3_bind_blob(s, index, bits, 8, SQLITE_TRANSIENT); break;
  }
}

void apply_edit(sqlite3* db, const Table& t, const uint8_t* e) {
  const std::string& column = t.columns[e[1] % t.columns.size()];
  std::string key, key_list;
  for (const std::string& k : t.key) key_list += (key_list.empty() ? "" : ", ") + k;
  key = "(" + key_list + ")";
  // One row, by its position in key order.
  std::string row = key + " = (SELECT " + key_list + " FROM " + t.name + " ORDER BY " + key_list +
                    " LIMIT 1 OFFSET (?2 % max(1, (SELECT count(*) FROM " + t.name + "))))";
  std::string sql;
  switch (e[2] % 3) {
    case 0: sql = "UPDATE OR IGNORE " + t.name + " SET " + column + " = ?1 WHERE " + row; break;
    case 1: sql = "DELETE FROM " + t.name + " WHERE " + row + " AND ?1 IS ?1"; break;
    case 2: {
      // A copy of the row with one column changed (a duplicate key is ignored).
      std::string cols, values;
      for (const std::string& c : t.columns) {
        cols += (cols.empty() ? "" : ", ") + c;
        values += (values.empty() ? "" : ", ") + (c == column ? std::string("?1") : c);
      }
      sql = "INSERT OR IGNORE INTO " + t.name + "(" + cols + ") SELECT " + values + " FROM " + t.name + " WHERE " + row;
      break;
    }
  }
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) return;
  bind_value(s, 1, e[3], e + 8);
  sqlite3_bind_int64(s, 2, read<uint32_t>(e + 4));
  sqlite3_step(s);
  sqlite3_finalize(s);
}

// The tracks index as the writer would have kept it for these rows.
void rebuild_tracks(sqlite3* db) {
  exec(db,
       "DELETE FROM tracks;"
       "INSERT INTO tracks SELECT 'host_spans', thread, 0, count(*), min(start), max(start + dur) FROM host_spans "
       "GROUP BY thread;"
       "INSERT INTO tracks SELECT 'instants', thread, 0, count(*), min(time), max(time) FROM instants GROUP BY thread;"
       "INSERT INTO tracks SELECT 'counters', name, 0, count(*), min(time), max(time) FROM counters GROUP BY name;"
       "INSERT INTO tracks SELECT 'device_ops', device, stream, count(*), min(start), max(start + dur) FROM device_ops "
       "GROUP BY device, stream;"
       "INSERT INTO tracks SELECT 'launches', thread, 0, count(*), min(start), max(start + dur) FROM launches "
       "GROUP BY thread;"
       "INSERT INTO tracks SELECT 'transfers', thread, 0, count(*), min(start), max(start + dur) FROM transfers "
       "GROUP BY thread;"
       "INSERT INTO tracks SELECT 'memory_events', device, 0, count(*), min(time), max(time) FROM memory_events "
       "GROUP BY device;"
       "INSERT INTO tracks SELECT 'compiles', thread, 0, count(*), min(start), max(start + dur) FROM compiles "
       "GROUP BY thread;"
       "INSERT INTO tracks SELECT 'steps', thread, 0, count(*), min(start), max(start + dur) FROM steps "
       "GROUP BY thread;");
}

// Everything that reads a model, on the model.
void use(const loupe::prof::TraceModel& m) {
  loupe::prof::AnalysisReport report = loupe::prof::analyze(m);
  loupe::prof::report_text(report, {});
  loupe::prof::report_json(report);
  loupe::prof::report_markdown(report);
  loupe::prof::trace_statistics(m);
  std::FILE* sink = std::fopen("/dev/null", "wb");
  if (sink != nullptr) {
    loupe::prof::export_chrome_trace(m, sink);
    std::fclose(sink);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Seed& s = seed();
  std::string path = loupe::fuzz::write_input(reinterpret_cast<const uint8_t*>(s.bytes.data()), s.bytes.size(), ".db");
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 0, nullptr);
  exec(db, "BEGIN");
  uint8_t options = size > 0 ? data[0] : 0;
  for (size_t at = 1; at + 16 <= size && at < 1 + 16 * 64; at += 16) {
    apply_edit(db, s.tables[data[at] % s.tables.size()], data + at);
  }
  if (options & 1) rebuild_tracks(db);
  exec(db, "COMMIT");
  sqlite3_close(db);
  try {
    loupe::prof::summarize_trace(path);
  } catch (const loupe::prof::TraceError&) {
  }
  try {
    use(loupe::prof::load_trace(path, {.threads = 1}));
  } catch (const loupe::prof::TraceError&) {
  }
  return 0;
}
