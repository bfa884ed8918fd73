// The history store: an SQLite file (Debian libsqlite3) that answers `paratune log` queries (by job, user,
// partition, time, GPU, framework) without reading the whole log. The JSONL stays the source of truth: the store
// holds, per merged job, the filter fields and where the chosen line is (file, byte offset, length), plus what the
// first pass of the merge said (problems, counts, dropped copies); the entries themselves are read from the JSONL
// lines it points at, by the same code as the streaming reader's second pass. So both paths give the same result.
//
// A store describes one exact list of files (as named on the command line, in order) with each file's device,
// inode, size and modification time when it was built. Any difference (a line appended, a rotation, another
// --log list) makes it stale, and the reader streams instead. `paratune index rebuild` writes it whole (to a
// temporary file renamed over the old one, so a reader never sees half a store).
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

// Builds the store at `path` from `files` (opened by the caller; their stamps are taken from them). Throws
// std::runtime_error naming the path on an SQLite error, or what a source throws; the old store stays then.
RebuildResult rebuild_store(const std::string& path, const std::vector<FileSource*>& files);

class LogStore {
 public:
  // The store at `path` opened read-only if it describes exactly `files` as they are now; null with *why set
  // ("no index at PATH", "stale: FILE changed since the index was built", ...) otherwise.
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
