// RAII for the SQLite handles of the history store (log_store.cpp, store_update.cpp): a connection and a
// prepared statement, every error thrown as std::runtime_error naming the store's path.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace paratune::tuning::scan::detail {

class Db {
 public:
  Db(const std::string& path, int flags, int busy_ms = 2000) : path_(path) {
    if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
      // SQLite hands back a handle even when the open fails; the destructor will not run, so close it here.
      const std::string why = path_ + ": SQLite open: " + (db_ ? sqlite3_errmsg(db_) : "out of memory");
      sqlite3_close(db_);
      throw std::runtime_error(why);
    }
    sqlite3_busy_timeout(db_, busy_ms);
  }
  ~Db() { sqlite3_close(db_); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  sqlite3* get() const { return db_; }
  const std::string& path() const { return path_; }
  void exec(const char* sql) {
    if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail("exec");
  }
  [[noreturn]] void fail(const char* what) const {
    throw std::runtime_error(path_ + ": SQLite " + what + ": " + (db_ ? sqlite3_errmsg(db_) : "out of memory"));
  }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

class Stmt {
 public:
  Stmt(Db& db, const std::string& sql) : db_(db) {
    if (sqlite3_prepare_v2(db.get(), sql.c_str(), int(sql.size()), &st_, nullptr) != SQLITE_OK) db.fail("prepare");
  }
  ~Stmt() { sqlite3_finalize(st_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt& bind(int i, const std::string& s) {
    check(sqlite3_bind_text(st_, i, s.data(), int(s.size()), SQLITE_TRANSIENT));
    return *this;
  }
  Stmt& bind(int i, int64_t v) {
    check(sqlite3_bind_int64(st_, i, v));
    return *this;
  }
  bool row() {  // steps; true while a row is there
    const int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) db_.fail("step");
    return false;
  }
  void run() {
    row();
    reset();
  }
  void reset() {  // for the next use with other values
    sqlite3_reset(st_);
    sqlite3_clear_bindings(st_);
  }
  int64_t i64(int col) const { return sqlite3_column_int64(st_, col); }
  bool null(int col) const { return sqlite3_column_type(st_, col) == SQLITE_NULL; }
  std::string text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st_, col));
    return p ? std::string(p, size_t(sqlite3_column_bytes(st_, col))) : std::string();
  }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) db_.fail("bind");
  }
  Db& db_;
  sqlite3_stmt* st_ = nullptr;
};

}  // namespace paratune::tuning::scan::detail
