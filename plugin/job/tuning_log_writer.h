// The site tuning log as slurmstepd writes it at a job's end, without Slurm: which file (the policy's tuning_log,
// else <log_dir>/tuning.jsonl, in a root-owned directory), with which mode (the policy's, never writable by
// others) and group (the policy's, by name or all-digit gid), the line appended and indexed (tuning_index.h); and
// the job's one claim on a line: the marker jobs/<jobid>/line (job_files.h), created O_EXCL by the first deciding
// step, so that several sruns in one allocation write one line. A marker that cannot be made (a read-only
// log_dir while the policy puts the log elsewhere) must not cost the line: the step writes it anyway and says why.
// Problems come back as text; the plugin (remote_exit.cpp) logs them.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "paratune/policies/policy.h"

namespace paratune::job {

// Where the tuning log is: `dir` (its directory, "/" for a file at the root) and `name` (the file in it).
struct TuningLogPath {
  std::string dir, name;
};
TuningLogPath tuning_log_path(const policies::LogSettings& log, const std::string& log_dir);

// The file's permission bits: the policy's, capped at 0664 (never writable by others, never executable).
mode_t tuning_log_mode(unsigned policy_mode);

// The file's group: the group of that name; else the string itself as a gid when it is all digits (at most 10);
// else -1 (the group is left unchanged) and `problem` says so.
struct TuningLogGroup {
  long gid = -1;
  std::string problem;
};
TuningLogGroup tuning_log_group(const std::string& group);

// Appends `text` as one line to the tuning log and indexes it for `job_id`. Never throws: `error` says why the line
// was not appended ("" = it was); `warnings` what went wrong around it, in the order it happened (the group, the
// index), each a complete message for the log.
struct TuningLineWrite {
  std::vector<std::string> warnings;
  std::string error;
};
TuningLineWrite append_tuning_line(const policies::LogSettings& log, const std::string& log_dir,
                                   const std::string& job_id, const std::string& text) noexcept;

// Whether this step writes the job's line. `write` = false only when an earlier step of the job holds the marker;
// `problem` says why the marker could not be made ("" = made, or held by an earlier step): the step then writes
// the line anyway.
struct LineClaim {
  bool write = true;
  std::string problem;
};
// In the job's directory under log_dir (made as job_files.h open_job_dir_in makes it).
LineClaim claim_tuning_line(const std::string& log_dir, const std::string& job_id) noexcept;
// In the job's directory, already open.
LineClaim claim_tuning_line_at(int job_dirfd, const std::string& job_id) noexcept;
// Gives the claim back when the line it was for could not be written (a full disk, a refused log), so that a later
// deciding step of the job can write it. "" when done, else why not.
std::string release_tuning_line(const std::string& log_dir, const std::string& job_id) noexcept;

}  // namespace paratune::job
