// One site log from many files: the tuning logs of several nodes (log_dir per node, gathered by a log shipper),
// rotated copies, or the same file named twice, merged into one list with one line per job.
//
// Which copy of a job wins (docs/tuning-log.md, "One site log from many files"): a job has one line when
// log_dir is shared (the jobs/<id>/line marker), but with a log_dir per node the marker is per node too, so the
// deciding steps of one allocation that start on different nodes each write one; a shipper that delivers at
// least once repeats lines; and logrotate's copytruncate leaves a line in both the old and the new file. Among
// the lines with the same job_id the most complete one is kept:
//   1. one with achieved figures (a step time or tokens/s) over one without,
//   2. then one with an out-of-memory record over one without (the job's death is the fact to keep),
//   3. then one with a scenario and plan over one without, then one not "truncated",
//   4. then the one that ended last ("time"; the last step saw the most of the job),
//   5. then the first read (sources in the order given, lines in file order).
// Lines are never mixed field by field: a line is one step's account, and a mix would be no step's. Lines without
// a job_id are all kept. Job ids are unique within one Slurm cluster: merge one cluster's logs at a time.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "paratune/tuning/tuning_log.h"

namespace paratune::tuning {

struct LogText {
  std::string name;     // file name, for messages ("FILE:LINE: problem") and for LogEntry::file
  std::string content;
};

struct SourcedProblem {
  std::string file;
  size_t line = 0;
  std::string message;
};

struct DroppedCopy {
  std::string job_id;
  std::string kept, dropped;  // "FILE:LINE"
  std::string why;            // the rule that decided ("achieved figures", "later end time", "first read", ...)
};

struct MergedLog {
  std::vector<LogEntry> entries;            // one per job id (and every line without one), by end time
  std::vector<SourcedProblem> problems;
  size_t files = 0;
  size_t lines = 0;                         // non-empty lines over all files
  size_t unreadable = 0;                    // lines that are not JSON objects (listed in problems)
  size_t duplicates = 0;                    // lines dropped because another copy of the job won
  std::vector<DroppedCopy> dropped;         // the first 1000 of them, with the reason
};

MergedLog merge_logs(const std::vector<LogText>& sources, const ReadLimits& limits = {});

// What the rules above compare of one copy (the streaming reader keeps only this of the lines it has not chosen).
struct CopyKeys {
  bool achieved = false, oom = false, plan = false, truncated = false;
  long long time = 0;
};
CopyKeys copy_keys(const LogEntry& e);
// The rule that prefers copy `a` over `b` ("achieved figures", "later end time", ...), "" when none does.
std::string prefers(const CopyKeys& a, const CopyKeys& b);
// Whether `challenger` (read later) replaces `holder`; `why` says by which rule, or why the holder stayed.
bool replaces(const CopyKeys& challenger, const CopyKeys& holder, std::string* why);

// "3 files, 212 lines, 205 jobs; 7 duplicate lines dropped (2 kept the other copy: achieved figures, 5 kept the
// other copy: first read)" for stderr.
std::string merge_summary(const MergedLog& m);
std::string merge_summary(size_t files, size_t lines, size_t jobs, size_t duplicates,
                          const std::vector<DroppedCopy>& dropped);

}  // namespace paratune::tuning
