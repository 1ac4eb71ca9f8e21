// Reading one row of an untrusted trace. SQLite lets a file that was edited
// hold any value in any column, whatever the schema says (NOT NULL and the
// declared types are checked only by the writer), so each value's storage
// class and range is checked as it is read: NULL or text where a number
// belongs is refused, never read as 0.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>

#include "loupe/prof/trace_format.h"
#include "store/sqlite.h"

namespace loupe::prof::store {

class CheckedRow {
 public:
  // `columns` names the selected columns, in order, for messages.
  CheckedRow(const Stmt& s, std::span<const std::string_view> columns) : s_(s), columns_(columns) {}

  // Each value is fetched once (sqlite3_column_value) and its type and
  // contents read from it: two column_* calls per value cost a quarter of
  // a large trace's load time.
  int64_t integer(int col) const {
    sqlite3_value* v = value(col);
    if (sqlite3_value_type(v) != SQLITE_INTEGER) [[unlikely]]
      wrong_type(col, v, "an integer");
    return sqlite3_value_int64(v);
  }
  // An integer in [lo, hi].
  int64_t in_range(int col, int64_t lo, int64_t hi) const {
    int64_t v = integer(col);
    if (v < lo || v > hi) [[unlikely]]
      out_of_range(col, v, lo, hi);
    return v;
  }
  int64_t non_negative(int col) const { return in_range(col, 0, std::numeric_limits<int64_t>::max()); }
  // Ids and counts stored in 32 bits in the model.
  uint32_t u32(int col) const { return uint32_t(in_range(col, 0, std::numeric_limits<uint32_t>::max())); }
  bool flag(int col) const { return in_range(col, 0, 1) != 0; }
  template <typename Enum>
  Enum enumerator(int col) const {
    int64_t v = integer(col);
    if (v < 0 || uint64_t(v) >= enumerator_count<Enum>()) [[unlikely]]
      undefined_kind(col, v);
    return Enum(v);
  }
  // A finite number (REAL, or an INTEGER SQLite stored compactly).
  double real(int col) const {
    sqlite3_value* v = value(col);
    int type = sqlite3_value_type(v);
    if (type != SQLITE_FLOAT && type != SQLITE_INTEGER) [[unlikely]]
      wrong_type(col, v, "a number");
    double d = sqlite3_value_double(v);
    if (!std::isfinite(d)) bad(col, "holds a value that is not finite");
    return d;
  }
  std::string_view text(int col) const {
    sqlite3_value* v = value(col);
    if (sqlite3_value_type(v) != SQLITE_TEXT) [[unlikely]]
      wrong_type(col, v, "text");
    const unsigned char* p = sqlite3_value_text(v);
    return p ? std::string_view(reinterpret_cast<const char*>(p), size_t(sqlite3_value_bytes(v))) : std::string_view();
  }

 private:
  static std::string holds(int type) {
    switch (type) {
      case SQLITE_NULL: return "is NULL";
      case SQLITE_INTEGER: return "holds an integer";
      case SQLITE_FLOAT: return "holds a real number";
      case SQLITE_TEXT: return "holds text";
      case SQLITE_BLOB: return "holds a blob";
    }
    return "holds an unknown type";
  }
  sqlite3_value* value(int col) const { return sqlite3_column_value(s_.get(), col); }
  // The messages, out of the way of the loop that reads millions of rows.
  [[noreturn, gnu::cold, gnu::noinline]] void wrong_type(int col, sqlite3_value* v, std::string_view wanted) const {
    int have = sqlite3_value_type(v);
    bad(col, have == SQLITE_NULL ? holds(have) : fmt::format("{}, not {}", holds(have), wanted));
  }
  [[noreturn, gnu::cold, gnu::noinline]] void out_of_range(int col, int64_t v, int64_t lo, int64_t hi) const {
    bad(col, fmt::format("holds {}, outside {}..{}", v, lo, hi));
  }
  [[noreturn, gnu::cold, gnu::noinline]] void undefined_kind(int col, int64_t v) const {
    bad(col, fmt::format("holds kind {}, which is not defined", v));
  }
  [[noreturn, gnu::cold, gnu::noinline]] void bad(int col, const std::string& what) const {
    std::string_view name = size_t(col) < columns_.size() ? columns_[size_t(col)] : "?";
    throw StoreError(fmt::format("'{}' {}", name, what));
  }

  const Stmt& s_;
  std::span<const std::string_view> columns_;
};

}  // namespace loupe::prof::store
