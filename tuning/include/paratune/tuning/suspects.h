// Suspect nodes: nodes that recur in jobs whose achieved throughput fell far below the prediction.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "paratune/tuning/tuning_log.h"

namespace paratune::tuning {

// A logged job counts as flagged when its line carries a "suspect" flag, or when its ratio is below `threshold`.
bool flagged(const LogEntry& e, double threshold);

struct SuspectNode {
  std::string node;
  size_t flagged_jobs = 0;   // flagged jobs that ran on it
  size_t jobs = 0;           // all jobs (with a ratio or a flag) that ran on it
  std::vector<std::string> job_ids;  // the flagged ones
};

// Nodes in at least `min_flagged` flagged jobs, most flagged first (then by flagged share, then name).
std::vector<SuspectNode> suspect_nodes(const std::vector<const LogEntry*>& entries, double threshold,
                                       size_t min_flagged = 2);

}  // namespace paratune::tuning
