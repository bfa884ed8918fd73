// Suspect nodes: nodes that recur in jobs whose achieved throughput fell far below the prediction.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "paratune/tuning/report.h"
#include "paratune/tuning/tuning_log.h"

namespace paratune::tuning {

// The rule a logged job is judged by: `threshold` as is when its prediction was calibrated ("predicted"."calibrated"),
// widened by the model's out-of-sample error otherwise (SuspectRule, report.h).
SuspectRule suspect_rule(const LogEntry& e, double threshold);

// A logged job counts as flagged when its line carries a "suspect" flag with a "basis" (judged at job end by the
// same rule), or when its ratio is suspect under suspect_rule(e, threshold). A flag without a basis (lines written
// before it was recorded, against the unwidened threshold) is judged again from the ratio when there is one.
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

// The same, one entry at a time (a streamed log): memory per node, not per job.
class SuspectTally {
 public:
  explicit SuspectTally(double threshold) : threshold_(threshold) {}
  void add(const LogEntry& e);
  std::vector<SuspectNode> nodes(size_t min_flagged = 2) const;

 private:
  double threshold_;
  std::map<std::string, SuspectNode> by_;
};

}  // namespace paratune::tuning
