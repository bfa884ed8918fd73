// The tuning logs a command reads (`paratune log`, `calibrate`, `portability`, `summary`): each --log argument is
// a file, a directory (every tuning-log file below it: README "Where the tuning log lives") or a glob pattern;
// all of them are streamed (never loaded whole), without following symlinks, and merged with one line per job
// (tuning/log_merge.h, tuning/scan/log_stream.h).
#pragma once

#include <string>
#include <vector>

#include "paratune/tuning/log_merge.h"
#include "paratune/tuning/scan/log_stream.h"

namespace paratune::cli {

inline constexpr const char* kDefaultLogPath = "/var/log/paratune/tuning.jsonl";

// The files `specs` name, in order, without repeats. A directory contributes its regular files whose name holds
// ".jsonl" (tuning.jsonl, rotated tuning.jsonl.1 / tuning.jsonl-20250301) and does not start with '.' (lock files)
// or end in a compression suffix, down to 4 levels, sorted by path; the plugin's own directories there are not
// entered (jobs/: per-job markers and logs; NAME.index/: the tuning log's per-job index). A pattern (*, ?, [) that names no existing
// path is expanded with glob(3). Every spec that yields nothing is a problem ("PATH: no tuning log there").
std::vector<std::string> log_files(const std::vector<std::string>& specs, std::vector<std::string>* problems);

struct LogStream {
  tuning::scan::StreamStats stats;
  std::vector<std::string> files;   // what was read
  bool any = false;                 // at least one file could be read
  bool complete = false;            // every file named could be read, and no spec yielded nothing
  bool from_index = false;          // the history store answered (log_store.h)
};

// Where the merged log comes from: the files ("stream"), the history store when there is one and the files
// otherwise ("auto"), or the store alone ("index": an error naming why when it is missing or cannot be used). A
// store behind the files is first brought up to date (tuning/scan's update_store: the lines appended since, or a
// rebuild after a rotation); one that cannot be (not writable) is not used. Both give the same entries, problems
// and summary. `path` "": tuning/scan's default_store_path of the specs.
struct StoreChoice {
  enum class Mode { kStream, kAuto, kIndex } mode = Mode::kStream;
  std::string path;
};

// Expand, open, merge and hand the entries that pass `filter` to `sink` one at a time, in end-time order.
// Problems go to stderr prefixed with `command` ("paratune log: ..."), bad lines as FILE:LINE: problem, and, when
// more than one file was read or copies were dropped, the merge summary -- all before the first entry.
LogStream stream_logs(const std::vector<std::string>& specs, const char* command, const tuning::LogFilter& filter,
                      const tuning::scan::EntrySink& sink, const StoreChoice& store = {});

// The files of `specs` (default: the default log) after expansion, problems on stderr as stream_logs says them.
std::vector<std::string> expand_logs(const std::vector<std::string>& specs, const char* command);

}  // namespace paratune::cli
