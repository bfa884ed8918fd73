// The tuning logs a command reads (`paratune log`, `calibrate`, `portability`, `summary`): each --log argument is
// a file, a directory (every tuning-log file below it: README "Where the tuning log lives") or a glob pattern;
// all of them are read bounded, without following symlinks, and merged with one line per job
// (tuning/log_merge.h).
#pragma once

#include <string>
#include <vector>

#include "paratune/tuning/log_merge.h"

namespace paratune::cli {

inline constexpr const char* kDefaultLogPath = "/var/log/paratune/tuning.jsonl";

// The files `specs` name, in order, without repeats. A directory contributes its regular files whose name holds
// ".jsonl" (tuning.jsonl, rotated tuning.jsonl.1 / tuning.jsonl-20250301) and does not start with '.' (lock files)
// or end in a compression suffix, down to 4 levels, sorted by path. A pattern (*, ?, [) that names no existing
// path is expanded with glob(3). Every spec that yields nothing is a problem ("PATH: no tuning log there").
std::vector<std::string> log_files(const std::vector<std::string>& specs, std::vector<std::string>* problems);

struct LogRead {
  tuning::MergedLog log;
  std::vector<std::string> files;   // what was read
  bool any = false;                 // at least one file could be read
  bool complete = false;            // every file named could be read, and no spec yielded nothing
};

// Expand, read (1 GiB per file), merge; problems go to stderr prefixed with `command` ("paratune log: ..."),
// bad lines as FILE:LINE: problem, and, when more than one file was read or copies were dropped, the merge summary.
LogRead read_logs(const std::vector<std::string>& specs, const char* command);

}  // namespace paratune::cli
