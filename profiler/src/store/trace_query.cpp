#include "loupe/prof/trace_query.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <array>

#include "loupe/prof/trace_reader.h"
#include "store/open_trace.h"
#include "store/sqlite.h"

namespace loupe::prof {

using store::Stmt;

void query_trace(const std::string& path, const std::string& sql,
                 const std::function<void(const std::vector<std::string>&)>& on_columns,
                 const std::function<void(const QueryRow&)>& on_row) {
  store::Db db = store::open_sqlite_read_only(path);
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
  for (int i = 0; i < ncols; ++i) columns.emplace_back(sqlite3_column_name(raw, i));
  on_columns(columns);
  QueryRow row(static_cast<size_t>(ncols));
  for (;;) {
    int rc = sqlite3_step(raw);
    if (rc == SQLITE_DONE) break;
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

TraceSummary summarize_trace(const std::string& path) {
  store::Db db = store::open_trace(path);
  TraceSummary s;
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0) s.file_bytes = uint64_t(st.st_size);
  try {
    store::exec(db.get(), "BEGIN");
    {
      Stmt q(db.get(), "SELECT key, value FROM meta");
      while (q.step()) s.info.meta.emplace(std::string(q.text(0)), std::string(q.text(1)));
    }
    auto meta = [&](const char* key) {
      auto it = s.info.meta.find(key);
      return it == s.info.meta.end() ? std::string() : it->second;
    };
    std::sscanf(meta("format_version").c_str(), "%d.%d", &s.info.format_major, &s.info.format_minor);
    s.info.producer = meta("producer");
    s.info.status = meta("status");
    s.info.origin_wall_ns = std::strtoll(meta("origin_wall_ns").c_str(), nullptr, 10);
    s.info.capture_end_ns = std::strtoll(meta("capture_end_ns").c_str(), nullptr, 10);
    s.info.dropped_events = std::strtoull(meta("dropped_events").c_str(), nullptr, 10);
    s.info.lost_events = std::strtoull(meta("lost_events").c_str(), nullptr, 10);
    {
      Stmt q(db.get(), "SELECT id, name, kind, memory_capacity, copy_bandwidth FROM devices ORDER BY id");
      while (q.step()) {
        s.devices.push_back({uint32_t(q.int64(0)), std::string(q.text(1)), DeviceKind(q.int64(2)), q.int64(3),
                             q.int64(4)});
      }
    }
    {
      Stmt q(db.get(), "SELECT device, stream, name FROM streams ORDER BY device, stream");
      while (q.step()) s.streams.push_back({uint32_t(q.int64(0)), uint32_t(q.int64(1)), std::string(q.text(2))});
    }
    {
      Stmt q(db.get(), "SELECT id, process, os_tid, name, dropped_events FROM threads ORDER BY id");
      while (q.step()) {
        s.threads.push_back({uint32_t(q.int64(0)), q.int64(1), q.int64(2), std::string(q.text(3)),
                             uint64_t(q.int64(4))});
      }
    }
    static constexpr std::array<const char*, 9> kEventTables = {
        "host_spans", "instants", "counters", "device_ops", "launches",
        "transfers",  "memory_events", "compiles", "steps"};
    for (const char* table : kEventTables) {
      Stmt q(db.get(), fmt::format("SELECT count(*) FROM {}", table));
      q.step();
      s.counts.push_back({table, uint64_t(q.int64(0))});
    }
    {
      Stmt q(db.get(), "SELECT min(first_start), max(last_end) FROM tracks");
      if (q.step()) {
        s.start_ns = q.int64(0);
        s.end_ns = q.int64(1);
      }
    }
    store::exec(db.get(), "COMMIT");
  } catch (const StoreError& e) {
    throw TraceError(fmt::format("{}: {}", path, e.what()));
  }
  return s;
}

}  // namespace loupe::prof
