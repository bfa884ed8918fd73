// Every node's fingerprint check, carried to node 0's tuning-log line. A step that inherits the job's decision on
// another node records what it found (its fingerprint, whether it matches the plan's) as a small file in the job's
// root-owned directory log_dir/jobs/<jobid>/ (job_files.h); node 0 reads and removes them when it writes the job's
// line. That needs log_dir on a file system the nodes share (a central log); with a node-local log_dir each node's
// Slurm log and per-job log carry its warning, node 0's line lists only what its own file system holds, and each
// node's job epilog collects its own records into its job.log (finish_job_dir).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace paratune::job {

struct NodeCheck {
  std::string host;              // the checking node's host name
  std::string step;              // the step that checked ("0", "1", ...)
  std::string fingerprint;       // the node's own topology fingerprint
  std::string plan_fingerprint;  // the fingerprint the inherited plan was made for
  bool plan_readable = true;     // whether the step could read $PARATUNE_PLAN on that node
};

inline constexpr size_t kMaxNodeChecks = 4096;

// "node-<host>-<step>": only [A-Za-z0-9._-] of the host and step, capped, so no name can leave the directory.
std::string node_check_name(const std::string& host, const std::string& step);

// Write (replace) this node's record in the job's directory `job_dirfd`, as root; throws std::system_error naming
// the file. The cap is on write: a job directory that already holds kMaxNodeChecks records (one per step and
// node: a job of many steps) takes no more, and false is returned.
bool record_node_check(int job_dirfd, const NodeCheck& check);

// Read and remove the job's records (at most kMaxNodeChecks, each at most 4 KiB; anything else is skipped):
// {"checked": N, "mismatch": [{"host", "step", "fingerprint", "plan_fingerprint"}], "plan_unreadable": [hosts]}.
// Never throws: a directory that cannot be read gives {"checked": 0, ...}.
nlohmann::json collect_node_checks(int job_dirfd);

}  // namespace paratune::job
