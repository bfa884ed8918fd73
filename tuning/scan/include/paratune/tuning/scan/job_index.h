// One job's line without reading the log: what `paratune summary --job ID` (the slurmctld epilog, once per
// finished job) needs in constant time on a log of millions of lines.
//   1. The writer's index (plugin/job/tuning_index.h): DIR/NAME.index/<last two characters>/<job id> says the
//      file (device and inode, so rotated copies are found), the byte offset and the length of the job's line.
//      The line there must be whole and carry the job id, else the marker is ignored.
//   2. Without a usable marker (lines from before the index, a log gathered by a shipper): the files are read
//      backwards, newest first, up to `scan_limit` bytes in all; among the job's lines found there the merge
//      rules of log_merge.h choose, as `paratune log` would.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "paratune/tuning/tuning_log.h"

namespace paratune::tuning::scan {

struct JobLookup {
  std::optional<LogEntry> entry;
  std::string how;            // "index: FILE at byte N" or "scan: N bytes of M files"
  bool scanned_everything = false;  // the scan read every file to its start (a miss is then certain)
  std::vector<std::string> problems;  // markers that could not be used, files that could not be read
};

inline constexpr uint64_t kDefaultScanLimit = uint64_t(64) << 20;

// `files`: the log files a command was given (log_input's expansion), in that order. scan_limit 0: no limit.
JobLookup find_job(const std::vector<std::string>& files, const std::string& job_id,
                   uint64_t scan_limit = kDefaultScanLimit);

// The name of the live log a file belongs to: "tuning.jsonl" for tuning.jsonl, tuning.jsonl.1 and
// tuning.jsonl-20250301 (the index is kept under the live name).
std::string live_log_name(const std::string& file_name);

}  // namespace paratune::tuning::scan
