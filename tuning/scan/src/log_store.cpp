#include "paratune/tuning/scan/log_store.h"

#include <sqlite3.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace paratune::tuning::scan {

namespace {

namespace fs = std::filesystem;

// Bumped when the tables change: a store of another version is stale.
constexpr int kSchemaVersion = 1;

constexpr const char* kSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE files(idx INTEGER PRIMARY KEY, path TEXT NOT NULL, device INTEGER NOT NULL, inode INTEGER NOT NULL,
                   size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL);
-- One row per merged job (and per line without a job id), in the order the merge hands them out (seq).
CREATE TABLE jobs(seq INTEGER PRIMARY KEY, job_id TEXT NOT NULL, user TEXT NOT NULL, partition TEXT NOT NULL,
                  time INTEGER NOT NULL, gpu TEXT NOT NULL, framework TEXT NOT NULL,
                  file INTEGER NOT NULL, offset INTEGER NOT NULL, length INTEGER NOT NULL, line INTEGER NOT NULL);
CREATE TABLE problems(seq INTEGER PRIMARY KEY, file TEXT NOT NULL, line INTEGER NOT NULL, message TEXT NOT NULL);
CREATE TABLE dropped(seq INTEGER PRIMARY KEY, job_id TEXT NOT NULL, kept TEXT NOT NULL, dropped TEXT NOT NULL,
                     why TEXT NOT NULL);
)sql";

constexpr const char* kIndexes = R"sql(
CREATE INDEX jobs_job ON jobs(job_id);
CREATE INDEX jobs_user ON jobs(user, time);
CREATE INDEX jobs_partition ON jobs(partition, time);
CREATE INDEX jobs_time ON jobs(time);
CREATE INDEX jobs_gpu ON jobs(gpu, time);
CREATE INDEX jobs_framework ON jobs(framework, time);
)sql";

class Db {
 public:
  Db(const std::string& path, int flags) : path_(path) {
    if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
      // SQLite hands back a handle even when the open fails; the destructor will not run, so close it here.
      const std::string why = path_ + ": SQLite open: " + (db_ ? sqlite3_errmsg(db_) : "out of memory");
      sqlite3_close(db_);
      throw std::runtime_error(why);
    }
    sqlite3_busy_timeout(db_, 2000);
  }
  ~Db() { sqlite3_close(db_); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  sqlite3* get() const { return db_; }
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
    sqlite3_reset(st_);
    sqlite3_clear_bindings(st_);
  }
  int64_t i64(int col) const { return sqlite3_column_int64(st_, col); }
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

void put_meta(Db& db, const char* key, int64_t value) {
  Stmt(db, "INSERT INTO meta(key, value) VALUES(?, ?)").bind(1, std::string(key)).bind(2, value).run();
}

int64_t get_meta(Db& db, const char* key) {
  Stmt s(db, "SELECT value FROM meta WHERE key = ?");
  s.bind(1, std::string(key));
  return s.row() ? s.i64(0) : -1;
}

void write_files(Db& db, const std::vector<FileSource*>& files) {
  Stmt ins(db, "INSERT INTO files(idx, path, device, inode, size, mtime_ns) VALUES(?, ?, ?, ?, ?, ?)");
  for (size_t i = 0; i < files.size(); ++i) {
    const FileStamp st = stamp_of(*files[i]);
    ins.bind(1, int64_t(i)).bind(2, st.path).bind(3, int64_t(st.device)).bind(4, int64_t(st.inode));
    ins.bind(5, int64_t(st.size)).bind(6, st.mtime_ns).run();
  }
}

void write_first_pass(Db& db, const StreamStats& st, size_t first_pass_problems) {
  Stmt p(db, "INSERT INTO problems(seq, file, line, message) VALUES(?, ?, ?, ?)");
  for (size_t i = 0; i < first_pass_problems; ++i)
    p.bind(1, int64_t(i)).bind(2, st.problems[i].file).bind(3, int64_t(st.problems[i].line))
        .bind(4, st.problems[i].message).run();
  Stmt d(db, "INSERT INTO dropped(seq, job_id, kept, dropped, why) VALUES(?, ?, ?, ?, ?)");
  for (size_t i = 0; i < st.dropped.size(); ++i)
    d.bind(1, int64_t(i)).bind(2, st.dropped[i].job_id).bind(3, st.dropped[i].kept).bind(4, st.dropped[i].dropped)
        .bind(5, st.dropped[i].why).run();
  put_meta(db, "schema", kSchemaVersion);
  put_meta(db, "files", int64_t(st.files));
  put_meta(db, "lines", int64_t(st.lines));
  put_meta(db, "unreadable", int64_t(st.unreadable));
  put_meta(db, "duplicates", int64_t(st.duplicates));
  put_meta(db, "jobs", int64_t(st.jobs));
}

std::vector<FileStamp> stored_files(Db& db) {
  std::vector<FileStamp> out;
  Stmt s(db, "SELECT path, device, inode, size, mtime_ns FROM files ORDER BY idx");
  while (s.row())
    out.push_back({s.text(0), uint64_t(s.i64(1)), uint64_t(s.i64(2)), uint64_t(s.i64(3)), s.i64(4)});
  return out;
}

}  // namespace

FileStamp stamp_of(const FileSource& f) {
  return {f.name(), uint64_t(f.device()), uint64_t(f.inode()), f.size_at_open(), f.mtime_ns_at_open()};
}

std::string default_store_path(const std::vector<std::string>& specs) {
  const std::string first = specs.empty() ? std::string("/var/log/paratune/tuning.jsonl") : specs.front();
  std::error_code ec;
  fs::path dir = fs::is_directory(fs::symlink_status(first, ec)) ? fs::path(first) : fs::path(first).parent_path();
  if (dir.empty()) dir = ".";
  return (dir / "tuning-index.sqlite").string();
}

RebuildResult rebuild_store(const std::string& path, const std::vector<FileSource*>& files) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::error_code ec;
  fs::remove(tmp, ec);
  RebuildResult r;
  try {
    Db db(tmp, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    db.exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN");
    db.exec(kSchema);
    write_files(db, files);
    Stmt ins(db,
             "INSERT INTO jobs(seq, job_id, user, partition, time, gpu, framework, file, offset, length, line) "
             "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    std::vector<ByteSource*> sources(files.begin(), files.end());
    size_t first_pass_problems = 0;
    r.stats = stream_merged(
        sources, LogFilter{},
        LocatedSink([&](LogEntry& e, const ChosenLine& c) {
          ins.bind(1, int64_t(r.rows)).bind(2, e.job_id).bind(3, e.user).bind(4, e.partition).bind(5, int64_t(e.time));
          ins.bind(6, e.gpu_model).bind(7, e.framework()).bind(8, int64_t(c.source)).bind(9, int64_t(c.offset));
          ins.bind(10, int64_t(c.length)).bind(11, int64_t(c.line)).run();
          ++r.rows;
        }),
        {}, [&](const StreamStats& st) { first_pass_problems = st.problems.size(); });
    if (r.stats.problems.size() > first_pass_problems)
      throw std::runtime_error(r.stats.problems[first_pass_problems].file + ": changed while it was indexed; run again");
    write_first_pass(db, r.stats, first_pass_problems);
    db.exec(kIndexes);
    db.exec("COMMIT");
  } catch (...) {
    fs::remove(tmp, ec);
    throw;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string err = std::strerror(errno);
    fs::remove(tmp, ec);
    throw std::runtime_error(path + ": cannot replace: " + err);
  }
  return r;
}

struct LogStore::Impl {
  Db db;
  std::vector<ByteSource*> sources;
  explicit Impl(const std::string& path) : db(path, SQLITE_OPEN_READONLY) {}
};

LogStore::LogStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LogStore::~LogStore() = default;

std::unique_ptr<LogStore> LogStore::open_current(const std::string& path, const std::vector<FileSource*>& files,
                                                 std::string* why) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) {
    *why = "no index at " + path;
    return nullptr;
  }
  try {
    auto impl = std::make_unique<Impl>(path);
    if (get_meta(impl->db, "schema") != kSchemaVersion) {
      *why = path + ": an index of another version; rebuild it";
      return nullptr;
    }
    const std::vector<FileStamp> stored = stored_files(impl->db);
    if (stored.size() != files.size()) {
      *why = "stale: " + path + " was built from " + std::to_string(stored.size()) + " files, not these " +
             std::to_string(files.size());
      return nullptr;
    }
    for (size_t i = 0; i < files.size(); ++i)
      if (!(stored[i] == stamp_of(*files[i]))) {
        *why = "stale: " + files[i]->name() + " is not what " + path + " was built from (" +
               (stored[i].path != files[i]->name() ? "another file" : "changed since") + ")";
        return nullptr;
      }
    impl->sources.assign(files.begin(), files.end());
    return std::unique_ptr<LogStore>(new LogStore(std::move(impl)));
  } catch (const std::exception& e) {  // not an SQLite file, unreadable, another layout
    *why = e.what();
    return nullptr;
  }
}

StreamStats LogStore::query(const LogFilter& f, const EntrySink& sink,
                            const std::function<void(const StreamStats&)>& after_first_pass) {
  Db& db = impl_->db;
  StreamStats st;
  st.files = size_t(get_meta(db, "files"));
  st.lines = size_t(get_meta(db, "lines"));
  st.unreadable = size_t(get_meta(db, "unreadable"));
  st.duplicates = size_t(get_meta(db, "duplicates"));
  st.jobs = size_t(get_meta(db, "jobs"));
  for (Stmt s(db, "SELECT file, line, message FROM problems ORDER BY seq"); s.row();)
    st.problems.push_back({s.text(0), size_t(s.i64(1)), s.text(2)});
  for (Stmt s(db, "SELECT job_id, kept, dropped, why FROM dropped ORDER BY seq"); s.row();)
    st.dropped.push_back({s.text(0), s.text(1), s.text(2), s.text(3)});
  if (after_first_pass) after_first_pass(st);

  // The filter as LogFilter::matches applies it: an empty field or unset bound does not filter.
  std::string sql = "SELECT file, offset, length, line FROM jobs WHERE 1";
  std::vector<std::string> texts;
  auto text = [&](const char* column, const std::string& v) {
    if (v.empty()) return;
    sql += std::string(" AND ") + column + " = ?";
    texts.push_back(v);
  };
  text("user", f.user);
  text("partition", f.partition);
  text("job_id", f.job_id);
  text("gpu", f.gpu);
  text("framework", f.framework);
  if (f.since) sql += " AND time >= " + std::to_string(*f.since);
  if (f.until) sql += " AND time <= " + std::to_string(*f.until);
  sql += " ORDER BY seq";
  Stmt s(db, sql);
  for (size_t i = 0; i < texts.size(); ++i) s.bind(int(i + 1), texts[i]);
  std::vector<ChosenLine> lines;
  while (s.row()) lines.push_back({uint32_t(s.i64(0)), uint64_t(s.i64(1)), uint32_t(s.i64(2)), uint64_t(s.i64(3))});
  read_chosen(impl_->sources, lines, sink, &st);
  return st;
}

}  // namespace paratune::tuning::scan
