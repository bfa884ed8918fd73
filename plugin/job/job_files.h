// What paratune keeps for one job under log_dir/jobs/: one directory per job, jobs/<jobid>/, root's (0750, not
// group/world-writable, opened without following links), holding
//   job.log               the job's messages on the nodes that share this log_dir, capped at kMaxJobLogBytes
//   line                  the marker of the job's one tuning-log line (created O_EXCL by the first deciding step)
//   partition             the job's partition as a step had it from Slurm (slurm_step_view.h), for later steps
//   node-<host>-<step>    a node's check of an inherited plan (node_checks.h), at most kMaxNodeChecks per job
// Everything but job.log only serves the job while it runs: node 0's deciding step collects the node checks into
// the tuning-log line (and removes them), and at the job's end each node's job epilog collects what is left there
// (a node-local log_dir: the checks nobody else could read) into job.log and removes it, and the directory with it
// when no log is left. What was never collected (a node that died, a slurmd that was down at the job's end) and
// the logs themselves are removed by age at slurmd's start (jobs_days=, bounded in time and entries). Finding
// or collecting one job's files costs a look into its own directory, never a scan of every job's.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <ctime>
#include <optional>
#include <string>

#include "paratune/common/safe_file.h"

namespace paratune::job {

inline constexpr size_t kMaxJobLogBytes = 1u << 20;  // per job and log_dir: a job with 10,000 steps stays bounded
inline constexpr const char* kJobLogName = "job.log";
inline constexpr const char* kLineMarkerName = "line";
inline constexpr const char* kPartitionRecordName = "partition";

// "<jobid>" with only [A-Za-z0-9_.-] kept (others become '_'), capped: no name can leave jobs/.
std::string job_dir_name(const std::string& job_id);

// jobs/<jobid>/ under `jobs_dirfd`, created (0750) when missing; root's and not group/world-writable, or
// std::runtime_error says why. `create` = false: an empty descriptor when it does not exist.
common::UniqueFd open_job_dir(int jobs_dirfd, const std::string& job_id, bool create = true);

// The job's directory as slurmstepd's steps use it: log_dir (0755) and log_dir/jobs (0750) made when missing,
// root's and not group/world-writable (so no user can plant a link or a file there), then jobs/<jobid>/ as
// open_job_dir makes it. Throws when any of them cannot be made or is wrong.
common::UniqueFd open_job_dir_in(const std::string& log_dir, const std::string& job_id);

// The job's partition, recorded by a step that had it from Slurm; read back (a regular root-owned file, one line,
// at most 256 bytes) by later steps on the nodes that share this log_dir.
void record_partition(int job_dirfd, const std::string& partition);
std::optional<std::string> recorded_partition(int job_dirfd);

// The per-job log's cap: `write` appends `text` while the file is below `cap`; the write that reaches it is
// replaced by one line saying so, later ones are dropped (the Slurm log still has them). Never throws.
class CappedLog {
 public:
  CappedLog(int fd, size_t cap) : fd_(fd), cap_(cap) {}
  void write(const std::string& text);

 private:
  int fd_;
  size_t cap_;
};

// At the job's end on one node (the job epilog): the records left in jobs/<jobid>/ (node checks nobody collected,
// the line marker, the partition record) are removed; the node checks are summarised in the returned text for the
// job's log ("" when there were none). The directory goes too when nothing else is left in it.
struct JobEnd {
  int node_checks = 0, mismatches = 0;
  std::string summary;        // one line for job.log, "" when there were no node checks
  bool directory_removed = false;
};
JobEnd finish_job_dir(int jobs_dirfd, const std::string& job_id);

// Age-based clean-up of jobs/: job directories (and the flat files of earlier releases: <jobid>.log, .line,
// .node-*) whose newest change is older than `max_age_s` before `now` are removed; at most `max_entries` entries
// of jobs/ are looked at. Only regular files inside job directories are removed, never followed links.
struct JobsGc {
  size_t looked_at = 0, removed = 0, kept = 0;
  bool stopped_early = false;  // max_entries reached
};
JobsGc collect_old_jobs(int jobs_dirfd, std::time_t now, long max_age_s, size_t max_entries);

}  // namespace paratune::job
