// Small RAII wrappers over the SQLite C API, used by the writer and reader.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "loupe/prof/trace_writer.h"

namespace loupe::prof::store {

// Owns a SQLite object, which `Release` closes or finalizes on
// destruction; moves, never copies.
template <typename T, int (*Release)(T*)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(T* p) : p_(p) {}
  ~Handle() { Release(p_); }
  Handle(Handle&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  Handle& operator=(Handle&& o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  T* get() const { return p_; }

 protected:
  T* p_ = nullptr;
};

// An open database connection.
class Db : public Handle<sqlite3, sqlite3_close_v2> {
 public:
  using Handle::Handle;
  std::string error() const { return p_ ? sqlite3_errmsg(p_) : "out of memory"; }
};

// A prepared statement.
class Stmt : public Handle<sqlite3_stmt, sqlite3_finalize> {
 public:
  Stmt() = default;
  Stmt(sqlite3* db, std::string_view sql);  // throws StoreError
  explicit operator bool() const { return p_ != nullptr; }

  void bind(int i, int64_t v) { sqlite3_bind_int64(p_, i, v); }
  void bind(int i, double v) { sqlite3_bind_double(p_, i, v); }
  void bind(int i, std::string_view v) { sqlite3_bind_text(p_, i, v.data(), int(v.size()), SQLITE_TRANSIENT); }
  void bind_static(int i, std::string_view v) { sqlite3_bind_text(p_, i, v.data(), int(v.size()), SQLITE_STATIC); }
  bool step();  // true: a row; false: done; throws StoreError on error
  void reset() { sqlite3_reset(p_); }
  // Binds `values` to parameters 1, 2, ... (text without a copy: it must
  // outlive the call), runs the statement once and resets it.
  template <typename... Values>
  void run_static(const Values&... values) {
    int i = 0;
    (bind_static_value(++i, values), ...);
    step();
    reset();
  }

  int64_t int64(int col) const { return sqlite3_column_int64(p_, col); }
  double real(int col) const { return sqlite3_column_double(p_, col); }
  std::string_view text(int col) const {
    const unsigned char* p = sqlite3_column_text(p_, col);
    return p ? std::string_view(reinterpret_cast<const char*>(p), size_t(sqlite3_column_bytes(p_, col)))
             : std::string_view();
  }

 private:
  void bind_static_value(int i, int64_t v) { bind(i, v); }
  void bind_static_value(int i, double v) { bind(i, v); }
  void bind_static_value(int i, std::string_view v) { bind_static(i, v); }
};

// Runs SQL without results; throws StoreError naming `what` on failure.
void exec(sqlite3* db, const char* sql, std::string_view what = {});

}  // namespace loupe::prof::store
