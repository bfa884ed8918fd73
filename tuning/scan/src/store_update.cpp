// Writing the history store (log_store.h): the lock, the choice between catching up and rebuilding, and both.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "paratune/tuning/scan/log_store.h"
#include "store_indexer.h"

namespace paratune::tuning::scan {

namespace {

namespace fs = std::filesystem;
using detail::Db;
using detail::IndexedFile;

// An exclusive flock(2) on PATH.lock for as long as it lives: the one writer of the store. Readers do not take
// it (SQLite's own locking gives them a consistent snapshot).
class StoreLock {
 public:
  StoreLock(const std::string& store, int wait_ms) : path_(store + ".lock") {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd_ < 0) throw std::runtime_error(path_ + ": cannot open the lock: " + std::strerror(errno));
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR) fail(std::string("cannot lock: ") + std::strerror(errno));
      if (std::chrono::steady_clock::now() >= until)
        fail("held by another process (an update of the store) for " + std::to_string(wait_ms / 1000) + " s");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ~StoreLock() { ::close(fd_); }
  StoreLock(const StoreLock&) = delete;
  StoreLock& operator=(const StoreLock&) = delete;

 private:
  [[noreturn]] void fail(const std::string& why) {
    ::close(fd_);
    throw std::runtime_error(path_ + ": " + why);
  }
  std::string path_;
  int fd_ = -1;
};

// Which files grew since the store last read them, or why the store must be rebuilt ("" when it need not be).
struct Plan {
  std::vector<bool> grown;
  bool any_grown = false;
  bool ahead = false;  // a file is shorter as opened than indexed, but not now: the caller's view is older
};

std::string changed(Db& db, const std::vector<FileSource*>& files, const std::vector<IndexedFile>& stored,
                    Plan* plan) {
  if (detail::get_meta(db, "schema") != detail::kSchemaVersion) return "an index of another version";
  if (stored.size() != files.size())
    return "built from " + std::to_string(stored.size()) + " files, not these " + std::to_string(files.size());
  plan->grown.assign(files.size(), false);
  for (size_t i = 0; i < files.size(); ++i) {
    const FileStamp now = stamp_of(*files[i]), & was = stored[i].stamp;
    const std::string& name = files[i]->name();
    if (now.path != was.path) return name + " is another file than the one indexed (" + was.path + ")";
    if (now.device != was.device || now.inode != was.inode) return name + " was replaced (rotated?)";
    if (now.size < was.size) {
      if (files[i]->size_now() < was.size) return name + " was truncated";
      plan->ahead = true;  // appended to since the caller opened it, and indexed by another reader
      continue;
    }
    if (now.size == was.size) {
      if (now.mtime_ns != was.mtime_ns) return name + " was rewritten (modified, not appended to)";
      continue;
    }
    if (stored[i].ends_partial) return name + ": its last indexed line was incomplete";
    if (detail::head_hash(*files[i], was.size) != stored[i].head_hash ||
        detail::tail_hash(*files[i], was.size) != stored[i].tail_hash)
      return name + " was rewritten (the bytes indexed are not there any more)";
    plan->grown[i] = plan->any_grown = true;
  }
  return "";
}

RebuildResult stats_of(Db& db, size_t files) {
  RebuildResult r;
  r.stats.files = files;
  r.stats.lines = size_t(detail::get_meta(db, "lines"));
  r.stats.unreadable = size_t(detail::get_meta(db, "unreadable"));
  r.stats.duplicates = size_t(detail::get_meta(db, "duplicates"));
  r.stats.jobs = size_t(detail::get_meta(db, "jobs"));
  r.rows = r.stats.jobs;
  return r;
}

// The store written whole: a temporary file beside it, renamed over it when complete. Caller holds the lock.
RebuildResult rebuild_locked(const std::string& path, const std::vector<FileSource*>& files) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::error_code ec;
  fs::remove(tmp, ec);
  RebuildResult r;
  try {
    Db db(tmp, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    db.exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN");
    db.exec(detail::kSchema);
    db.exec(detail::kLookupIndexes);
    for (const char* key : {"lines", "unreadable", "duplicates", "jobs"}) detail::set_meta(db, key, 0);
    detail::set_meta(db, "schema", detail::kSchemaVersion);
    detail::Indexer indexer(db, files);
    for (size_t k = 0; k < files.size(); ++k) {
      IndexedFile f;
      f.stamp.path = files[k]->name();
      indexer.index_tail(k, &f);
      detail::write_file_row(db, k, f, true);
    }
    indexer.save_counts();
    db.exec(detail::kQueryIndexes);
    r = stats_of(db, files.size());
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

}  // namespace

RebuildResult rebuild_store(const std::string& path, const std::vector<FileSource*>& files, int lock_wait_ms) {
  const StoreLock lock(path, lock_wait_ms);
  return rebuild_locked(path, files);
}

UpdateResult update_store(const std::string& path, const std::vector<FileSource*>& files, int lock_wait_ms) {
  const StoreLock lock(path, lock_wait_ms);
  UpdateResult u;
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) {
    u.why = "no index at " + path;
  } else {
    // Under the lock, so what it says is what the last writer left. Rollback journal: readers keep their
    // snapshot while this writes, and wait for its commit (SQLite's own locks; busy: up to 30 s).
    Db db(path, SQLITE_OPEN_READWRITE, 30000);
    db.exec("BEGIN IMMEDIATE");
    std::vector<IndexedFile> stored;
    try {
      stored = detail::read_files(db);
    } catch (const std::exception& e) {  // another layout
      stored.clear();
    }
    Plan plan;
    u.why = changed(db, files, stored, &plan);
    if (u.why.empty() && plan.ahead) {
      db.exec("ROLLBACK");
      u.kind = UpdateResult::Kind::kAhead;
      return u;
    }
    if (u.why.empty()) {
      if (plan.any_grown) {
        detail::Indexer indexer(db, files);
        for (size_t k = 0; k < files.size(); ++k) {
          if (!plan.grown[k]) continue;
          u.lines += indexer.index_tail(k, &stored[k]);
          detail::write_file_row(db, k, stored[k], false);
          ++u.files_grown;
        }
        indexer.save_counts();
        u.kind = UpdateResult::Kind::kCaughtUp;
      }
      u.jobs = size_t(detail::get_meta(db, "jobs"));
      db.exec("COMMIT");
      return u;
    }
    db.exec("ROLLBACK");
  }
  const RebuildResult r = rebuild_locked(path, files);
  u.kind = UpdateResult::Kind::kRebuilt;
  u.lines = r.stats.lines;
  u.jobs = r.rows;
  return u;
}

}  // namespace paratune::tuning::scan
