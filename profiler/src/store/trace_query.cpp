#include "loupe/prof/trace_query.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <stdexcept>

#include "loupe/prof/trace_reader.h"
#include "loupe/prof/trace_tables.h"
#include "store/open_trace.h"
#include "store/small_tables.h"
#include "store/sqlite.h"

namespace loupe::prof {

using store::Stmt;

namespace {

constexpr double kMaxQueryTimeoutSeconds = 100.0 * 365 * 24 * 3600;
constexpr int kMaxQueryValueBytes = 64 << 20;

// The time a statement has spent inside sqlite3_step(), checked by SQLite's
// progress handler every few thousand virtual machine instructions.
struct QueryClock {
  using Clock = std::chrono::steady_clock;
  Clock::duration limit{}, spent{};
  Clock::time_point step_started;
  bool limited = false;

  bool over() const { return limited && spent + (Clock::now() - step_started) > limit; }
  static int check(void* self) { return static_cast<QueryClock*>(self)->over() ? 1 : 0; }
};

}  // namespace

void query_trace(const std::string& path, const std::string& sql,
                 const std::function<void(const std::vector<std::string>&)>& on_columns,
                 const std::function<void(const QueryRow&)>& on_row, double timeout_seconds) {
  // The same gate as load_trace: a table replaced by a view (which could
  // recurse forever) or of the wrong shape is refused before any query.
  if (std::isnan(timeout_seconds)) throw std::invalid_argument("the query's timeout is not a number");
  store::Db db = store::open_trace(path);
  QueryClock clock;
  clock.limited = timeout_seconds > 0;
  // A timeout past a century is no limit in practice, and beyond 292 years
  // it would not fit the clock's 64 bits of nanoseconds.
  double seconds = std::min(timeout_seconds, kMaxQueryTimeoutSeconds);
  clock.limit = std::chrono::duration_cast<QueryClock::Clock::duration>(std::chrono::duration<double>(seconds));
  sqlite3_progress_handler(db.get(), 10000, &QueryClock::check, &clock);
  // A value a query makes (zeroblob(4e8), a printf two billion characters
  // wide) is bounded, so that a query cannot take gigabytes; SQLite stops
  // it with "string or blob too big".
  sqlite3_limit(db.get(), SQLITE_LIMIT_LENGTH, kMaxQueryValueBytes);
  sqlite3_stmt* raw = nullptr;
  const char* tail = nullptr;
  if (sqlite3_prepare_v2(db.get(), sql.c_str(), int(sql.size()), &raw, &tail) != SQLITE_OK) {
    throw TraceError(fmt::format("{}: query failed: {}", path, db.error()));
  }
  std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> stmt(raw, sqlite3_finalize);
  if (raw == nullptr) throw TraceError(fmt::format("{}: the query is empty", path));
  if (tail != nullptr && std::string_view(tail).find_first_not_of(" \t\r\n;") != std::string_view::npos) {
    throw TraceError(fmt::format("{}: give one statement at a time (found more after the first)", path));
  }
  if (!sqlite3_stmt_readonly(raw)) {
    throw TraceError(fmt::format("{}: only read-only queries are allowed", path));
  }
  int ncols = sqlite3_column_count(raw);
  std::vector<std::string> columns;
  columns.reserve(size_t(ncols));
  for (int i = 0; i < ncols; ++i) columns.emplace_back(sqlite3_column_name(raw, i));
  on_columns(columns);
  QueryRow row(static_cast<size_t>(ncols));
  for (;;) {
    clock.step_started = QueryClock::Clock::now();
    int rc = sqlite3_step(raw);
    clock.spent += QueryClock::Clock::now() - clock.step_started;
    if (rc == SQLITE_DONE) break;
    if (rc == SQLITE_INTERRUPT && clock.limited) {
      throw TraceError(fmt::format("{}: the query stopped after {:g} s (--timeout)", path, timeout_seconds));
    }
    if (rc != SQLITE_ROW) throw TraceError(fmt::format("{}: query failed: {}", path, db.error()));
    for (int i = 0; i < ncols; ++i) {
      if (sqlite3_column_type(raw, i) == SQLITE_NULL) {
        row[size_t(i)].reset();
      } else {
        const unsigned char* text = sqlite3_column_text(raw, i);
        row[size_t(i)].emplace(reinterpret_cast<const char*>(text), size_t(sqlite3_column_bytes(raw, i)));
      }
    }
    on_row(row);
  }
}

TraceSummary summarize_model(const TraceModel& m) {
  TraceSummary s{.info = m.info, .devices = m.devices, .streams = m.streams, .threads = m.threads};
  auto count = [&](const auto& tracks, std::string_view table) {
    uint64_t rows = 0;
    for (const auto& t : tracks) rows += t.size();
    s.counts.push_back({std::string(table), rows});
  };
#define LOUPE_COUNT_TABLE(Row, Track, table, member) count(m.member, #table);
  LOUPE_EVENT_TABLES(LOUPE_COUNT_TABLE)
#undef LOUPE_COUNT_TABLE
  s.start_ns = m.start_ns;
  s.end_ns = m.end_ns;
  return s;
}

TraceSummary summarize_trace(const std::string& path) {
  store::Db db = store::open_trace(path);
  TraceSummary s;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) s.file_bytes = uint64_t(st.st_size);
  try {
    store::exec(db.get(), "BEGIN");
    store::read_machine(db.get(), s);
    // The extent comes from the tracks table, which is checked against
    // each table's real row count (load_trace checks it row by row).
    std::map<std::string, std::vector<store::TrackClaim>> claims = store::read_tracks(db.get());
    bool any = false;
    for (std::string_view table : event_table_names()) {
      uint64_t rows = 0, claimed = 0;
      if (store::has_table(db.get(), table)) {  // a table added after the file's version is empty
        Stmt q(db.get(), fmt::format("SELECT count(*) FROM {}", table));
        q.step();
        rows = uint64_t(q.int64(0));
      }
      for (const store::TrackClaim& t : claims[std::string(table)]) {
        claimed += uint64_t(t.rows);
        s.start_ns = any ? std::min(s.start_ns, t.first) : t.first;
        s.end_ns = any ? std::max(s.end_ns, t.last) : t.last;
        any = true;
      }
      if (claimed != rows) {
        throw StoreError(
            fmt::format("the tracks table says {} holds {} rows, the table has {}; the file was damaged "
                        "or edited",
                        table, claimed, rows));
      }
      s.counts.push_back({std::string(table), rows});
    }
    store::exec(db.get(), "COMMIT");
  } catch (const StoreError& e) {
    throw TraceError(fmt::format("{}: {}", path, e.what()));
  }
  return s;
}

}  // namespace loupe::prof
