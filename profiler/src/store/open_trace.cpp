#include "store/open_trace.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string_view>

#include "loupe/prof/input_file.h"
#include "loupe/prof/trace_format.h"
#include "loupe/prof/trace_reader.h"
#include "store/schema.h"

namespace loupe::prof::store {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw TraceError(fmt::format("{}: {}", path, what));
}

// The 100-byte header every SQLite database file starts with. Checked
// before SQLite sees the file, so that a random or empty file gets a plain
// answer; the file is opened through the input gate, so that a FIFO or a
// device is refused instead of blocking or read forever.
void check_header(const std::string& path) {
  int fd = open_input_file_or_throw<TraceError>(path);
  struct stat st {};
  ::fstat(fd, &st);
  char header[100] = {};
  ssize_t n = 0;
  do {
    n = ::pread(fd, header, sizeof header, 0);
  } while (n < 0 && errno == EINTR);
  int read_error = n < 0 ? errno : 0;
  ::close(fd);
  if (n < 0) fail(path, fmt::format("cannot read: {}", std::strerror(read_error)));
  if (n == 0) fail(path, "the file is empty, not a trace");
  if (size_t(n) < sizeof header || std::memcmp(header, "SQLite format 3", 16) != 0) {
    fail(path, "not a loupe trace (not a SQLite database)");
  }
  // Page size (bytes 16-17, big-endian; 1 means 65536) and the page count
  // the header claims (bytes 28-31): a file shorter than that is truncated.
  unsigned page_size = (unsigned(uint8_t(header[16])) << 8) | uint8_t(header[17]);
  if (page_size == 1) page_size = 65536;
  uint32_t pages = (uint32_t(uint8_t(header[28])) << 24) | (uint32_t(uint8_t(header[29])) << 16) |
                   (uint32_t(uint8_t(header[30])) << 8) | uint32_t(uint8_t(header[31]));
  if (page_size < 512 || (page_size & (page_size - 1)) != 0) fail(path, "corrupt SQLite header (bad page size)");
  // The page count is only valid when the change counter matches the
  // version-valid-for field (bytes 24-27 and 92-95).
  bool count_valid = std::memcmp(header + 24, header + 92, 4) == 0;
  struct stat wal {};
  bool has_wal = ::stat((path + "-wal").c_str(), &wal) == 0 && wal.st_size > 0;
  if (count_valid && !has_wal && uint64_t(st.st_size) < uint64_t(pages) * page_size) {
    fail(path, fmt::format("truncated: the header describes {} bytes, the file has {}", uint64_t(pages) * page_size,
                           uint64_t(st.st_size)));
  }
}

// A rollback journal beside the file, left by a writer that stopped in the
// middle of a transaction ("hot"): SQLite must play it back before the
// file can be read, which a read-only connection cannot do.
bool has_hot_journal(const std::string& path) {
  struct stat st {};
  return ::stat((path + "-journal").c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

// Reads the schema once, so that a file SQLite cannot read fails here with
// a message that says why.
void check_readable(sqlite3* db, const std::string& path) {
  char* err = nullptr;
  if (sqlite3_exec(db, "PRAGMA schema_version", nullptr, nullptr, &err) == SQLITE_OK) return;
  std::string message = err ? err : sqlite3_errmsg(db);
  sqlite3_free(err);
  if (has_hot_journal(path)) {
    fail(path, fmt::format("a program stopped in the middle of a write to it and left {0}-journal to undo that "
                           "write; loupe opens traces read-only and cannot: run `sqlite3 {0} 'PRAGMA quick_check'` "
                           "once (it rolls the write back), then try again",
                           path));
  }
  fail(path, fmt::format("cannot read: {}", message));
}

void harden(sqlite3* db) {
  int off = 0, on = 1;
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, on, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, off, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, off, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, off, nullptr);
  sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
  // A capture may hold the write lock for a moment while committing.
  sqlite3_busy_timeout(db, 2000);
}

// Column name -> declared type, for each table of the reference schema.
using Shape = std::map<std::string, std::map<std::string, std::string>>;

Shape table_shapes(sqlite3* db) {
  Shape shape;
  for (std::string_view table : schema_tables()) {
    Stmt s(db, fmt::format("SELECT name, type FROM pragma_table_info('{}')", table));
    auto& cols = shape[std::string(table)];
    while (s.step()) cols[std::string(s.text(0))] = std::string(s.text(1));
  }
  return shape;
}

const Shape& reference_shape() {
  static const Shape shape = [] {
    sqlite3* raw = nullptr;
    sqlite3_open_v2(":memory:", &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_MEMORY, nullptr);
    Db mem(raw);
    exec(mem.get(), schema_sql());
    return table_shapes(mem.get());
  }();
  return shape;
}

}  // namespace

bool has_table(sqlite3* db, std::string_view table) {
  Stmt s(db, "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?");
  s.bind(1, table);
  return s.step();
}

bool has_column(sqlite3* db, std::string_view table, std::string_view column) {
  Stmt s(db, "SELECT 1 FROM pragma_table_info(?) WHERE name = ?");
  s.bind(1, table);
  s.bind(2, column);
  return s.step();
}

Db open_sqlite_read_only(const std::string& path) {
  check_header(path);
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) fail(path, fmt::format("cannot open: {}", db.error()));
  harden(db.get());
  check_readable(db.get(), path);
  return db;
}

Db open_trace(const std::string& path) {
  Db db = open_sqlite_read_only(path);
  try {
    int64_t app_id = 0, user_version = 0;
    {
      Stmt s(db.get(), "PRAGMA application_id");
      if (s.step()) app_id = s.int64(0);
    }
    {
      Stmt s(db.get(), "PRAGMA user_version");
      if (s.step()) user_version = s.int64(0);
    }
    if (app_id != kApplicationId) {
      fail(path, fmt::format("a SQLite database of another program, not a loupe trace (application_id {})", app_id));
    }
    int64_t major = user_version >> 16, minor = user_version & 0xffff;
    if (major > kFormatMajor) {
      fail(path, fmt::format("written in trace format {}.{}, newer than this loupe reads ({}.x); upgrade loupe", major,
                             minor, kFormatMajor));
    }
    if (major < 1) fail(path, fmt::format("unknown trace format version {}.{}", major, minor));

    // Every table of the schema must be a real table (not a view or a
    // virtual table) with at least the expected columns and types.
    std::map<std::string, std::string> kinds;  // name -> type in sqlite_schema
    {
      Stmt s(db.get(), "SELECT name, type, coalesce(sql, '') FROM sqlite_schema");
      while (s.step()) {
        std::string type(s.text(1));
        if (type == "table" && s.text(2).find("VIRTUAL") != std::string_view::npos) type = "virtual table";
        kinds[std::string(s.text(0))] = type;
      }
    }
    const Shape& ref = reference_shape();
    for (std::string_view table : schema_tables()) {
      auto it = kinds.find(std::string(table));
      if (it == kinds.end() && minor < minor_version_adding(table)) continue;
      if (it == kinds.end()) fail(path, fmt::format("missing table '{}'", table));
      if (it->second != "table") fail(path, fmt::format("'{}' is a {}, not a table", table, it->second));
      Stmt s(db.get(), fmt::format("SELECT name, type FROM pragma_table_info('{}')", table));
      std::map<std::string, std::string> have;
      while (s.step()) have[std::string(s.text(0))] = std::string(s.text(1));
      for (const auto& [col, type] : ref.at(std::string(table))) {
        auto c = have.find(col);
        if (c == have.end() && minor < minor_version_adding(table, col)) continue;
        if (c == have.end()) fail(path, fmt::format("table '{}' lacks column '{}'", table, col));
        if (c->second != type) {
          fail(path, fmt::format("column '{}.{}' is declared {}, expected {}", table, col, c->second, type));
        }
      }
    }
  } catch (const StoreError& e) {
    fail(path, e.what());
  }
  return db;
}

}  // namespace loupe::prof::store
