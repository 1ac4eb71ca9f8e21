// Small RAII wrappers over the SQLite C API, used by the writer and reader.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "loupe/prof/trace_writer.h"

namespace loupe::prof::store {

// An open database connection; closes on destruction.
class Db {
 public:
  Db() = default;
  explicit Db(sqlite3* db) : db_(db) {}
  ~Db() { sqlite3_close_v2(db_); }
  Db(Db&& o) noexcept : db_(std::exchange(o.db_, nullptr)) {}
  Db& operator=(Db&& o) noexcept {
    std::swap(db_, o.db_);
    return *this;
  }
  sqlite3* get() const { return db_; }
  std::string error() const { return db_ ? sqlite3_errmsg(db_) : "out of memory"; }

 private:
  sqlite3* db_ = nullptr;
};

// A prepared statement; finalizes on destruction.
class Stmt {
 public:
  Stmt() = default;
  Stmt(sqlite3* db, std::string_view sql);  // throws StoreError
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(Stmt&& o) noexcept : stmt_(std::exchange(o.stmt_, nullptr)) {}
  Stmt& operator=(Stmt&& o) noexcept {
    std::swap(stmt_, o.stmt_);
    return *this;
  }
  sqlite3_stmt* get() const { return stmt_; }
  explicit operator bool() const { return stmt_ != nullptr; }

  void bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void bind(int i, double v) { sqlite3_bind_double(stmt_, i, v); }
  void bind(int i, std::string_view v) { sqlite3_bind_text(stmt_, i, v.data(), int(v.size()), SQLITE_TRANSIENT); }
  void bind_static(int i, std::string_view v) { sqlite3_bind_text(stmt_, i, v.data(), int(v.size()), SQLITE_STATIC); }
  bool step();  // true: a row; false: done; throws StoreError on error
  void reset() { sqlite3_reset(stmt_); }
  // Binds `values` to parameters 1, 2, ... (text without a copy: it must
  // outlive the call), runs the statement once and resets it.
  template <typename... Values>
  void run_static(const Values&... values) {
    int i = 0;
    (bind_static_value(++i, values), ...);
    step();
    reset();
  }

  int64_t int64(int col) const { return sqlite3_column_int64(stmt_, col); }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  std::string_view text(int col) const {
    const unsigned char* p = sqlite3_column_text(stmt_, col);
    return p ? std::string_view(reinterpret_cast<const char*>(p), size_t(sqlite3_column_bytes(stmt_, col)))
             : std::string_view();
  }

 private:
  void bind_static_value(int i, int64_t v) { bind(i, v); }
  void bind_static_value(int i, double v) { bind(i, v); }
  void bind_static_value(int i, std::string_view v) { bind_static(i, v); }
  sqlite3_stmt* stmt_ = nullptr;
};

// Runs SQL without results; throws StoreError naming `what` on failure.
void exec(sqlite3* db, const char* sql, std::string_view what = {});

}  // namespace loupe::prof::store
