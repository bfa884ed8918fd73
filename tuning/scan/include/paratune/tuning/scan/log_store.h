// The history store: an SQLite file (Debian libsqlite3) that answers `paratune log` queries (by job, user,
// partition, time, GPU, framework) without reading the whole log. The JSONL stays the source of truth: the store
// holds, per merged job, the filter fields and where the chosen line is (file, byte offset, length), plus what the
// first pass of the merge said (problems, counts, dropped copies); the entries themselves are read from the JSONL
// lines it points at, by the same code as the streaming reader's second pass. So both paths give the same result.
//
// A store describes one exact list of files (as named on the command line, in order) with each file's device,
// inode, size and modification time when it was last indexed. A reader uses it only when it matches the files
// exactly (open_current). The log is append-only between rotations, so an update (update_store) reads only the
// lines appended since, from the byte where it stopped in each file, and applies them with the merge's rules to
// what the store holds; a file that was replaced (rotated), truncated or rewritten, or another file list, makes
// it rebuild the store whole (to a temporary file renamed over the old one, so a reader never sees half a store).
// Writers take an exclusive lock on PATH.lock, so that two readers who find the store behind do not both write.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "paratune/tuning/scan/byte_source.h"
#include "paratune/tuning/scan/log_stream.h"
#include "paratune/tuning/tuning_log.h"

namespace paratune::tuning::scan {

// What a store records of one file, and what is compared to decide that it is current.
struct FileStamp {
  std::string path;
  uint64_t device = 0, inode = 0, size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

FileStamp stamp_of(const FileSource& f);

// The store's file name: "tuning-index.sqlite" in the directory of the first spec (the spec itself when it is a
// directory). Its name holds no ".jsonl", so directory scans never read it as a log.
std::string default_store_path(const std::vector<std::string>& specs);

struct RebuildResult {
  StreamStats stats;
  size_t rows = 0;
};

// Builds the store at `path` from `files` (opened by the caller; their stamps are taken from them, and each is
// read up to its size when it was opened), under the lock. Throws std::runtime_error naming the path on an SQLite
// error, a lock not had within `lock_wait_ms`, or what a source throws; the old store stays then.
RebuildResult rebuild_store(const std::string& path, const std::vector<FileSource*>& files, int lock_wait_ms = 30000);

struct UpdateResult {
  // kAhead: the store holds lines past what these files held when they were opened (another reader caught it up
  // since); nothing was written: open the files again.
  enum class Kind { kCurrent, kCaughtUp, kRebuilt, kAhead } kind = Kind::kCurrent;
  std::string why;          // kRebuilt: why not a catch-up ("no index at ...", "FILE was replaced", ...)
  size_t lines = 0;         // lines read (kCaughtUp: those appended since the last update)
  size_t files_grown = 0;   // kCaughtUp: files that had lines appended
  size_t jobs = 0;          // jobs in the store afterwards
};

// Brings the store at `path` up to date with `files` (opened by the caller: what each held when it was opened is
// what gets indexed), under an exclusive lock on `path`.lock (waited for at most `lock_wait_ms`): nothing when it
// is current; the lines appended since it was last indexed when every file only grew (the same device and
// inode, its first and last indexed 4 KiB unchanged, its last indexed line complete); a rebuild otherwise, or
// when there is no store. Throws as rebuild_store; the store is then as it was.
UpdateResult update_store(const std::string& path, const std::vector<FileSource*>& files, int lock_wait_ms = 30000);

class LogStore {
 public:
  // The store at `path` opened read-only if it describes exactly `files` as they are now; null with *why set
  // ("no index at PATH", "stale: FILE changed since the index was built", ...) otherwise. It is read in one
  // transaction: an update waits until this object is gone.
  static std::unique_ptr<LogStore> open_current(const std::string& path, const std::vector<FileSource*>& files,
                                                std::string* why);
  ~LogStore();
  LogStore(const LogStore&) = delete;
  LogStore& operator=(const LogStore&) = delete;

  // What stream_merged gives for the same files and filter: the first pass's problems and counts to
  // `after_first_pass`, then the selected entries, in end-time order, to the sink.
  StreamStats query(const LogFilter& filter, const EntrySink& sink,
                    const std::function<void(const StreamStats&)>& after_first_pass = {});

 private:
  struct Impl;
  explicit LogStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace paratune::tuning::scan
