#include "store/sqlite.h"

#include <fmt/format.h>

namespace loupe::prof::store {

Stmt::Stmt(sqlite3* db, std::string_view sql) {
  if (sqlite3_prepare_v3(db, sql.data(), int(sql.size()), SQLITE_PREPARE_PERSISTENT, &p_, nullptr) != SQLITE_OK) {
    throw StoreError(fmt::format("cannot prepare statement: {}", sqlite3_errmsg(db)));
  }
}

bool Stmt::step() {
  int rc = sqlite3_step(p_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  std::string message = sqlite3_errmsg(sqlite3_db_handle(p_));
  sqlite3_reset(p_);
  throw StoreError(message);
}

void exec(sqlite3* db, const char* sql, std::string_view what) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string message = err ? err : sqlite3_errmsg(db);
    sqlite3_free(err);
    throw StoreError(what.empty() ? message : fmt::format("{}: {}", what, message));
  }
}

}  // namespace loupe::prof::store
