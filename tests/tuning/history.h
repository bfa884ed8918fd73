// Generated site histories (tuning-log text) for the tests: a synthetic site whose hardware is slower than the
// shipped model by a known factor, and the published runs of data/calibration/published as if a site had run them.
#pragma once

#include <string>
#include <vector>

#include "paratune/tuning/calibrate.h"

namespace paratune::tuning::testing {

struct SiteTruth {
  double h100_ib_compute = 0.85, h100_ib_network = 0.55;  // true multipliers of the h100/infiniband group
  double a100_roce_compute = 1.10;                         // and of the a100/roce group (network untouched)
  double noise = 0.03;                                     // lognormal sigma of each job's achieved step time
  std::string slow_node = "gpu017";                        // jobs on it run at half speed (suspect)
  bool calibrated = false;  // the lines say their prediction came from a calibration entry ("predicted"."calibrated")
};

// `jobs` tuning-log lines, end times one hour apart from 2025-01-01, partitions "h100" and "a100".
std::string synthetic_history(int jobs, const SiteTruth& truth = {}, unsigned seed = 7);

// One log line per usable row of measurements.csv (achieved = the row's measured iteration time, predicted = the
// shipped model's), end times a fixed pseudo-random permutation of the rows (so every group appears early and
// late). Empty when the file is missing.
std::string published_history(const std::string& csv_path, size_t* rows = nullptr);

// A single log line (what the plugin writes, plus "achieved"/"ratio"/"node_list").
std::string log_line(const std::string& job_id, long long time, const std::string& partition,
                     const std::vector<std::string>& nodes, const advisor::Scenario& s, const advisor::Layout& l,
                     double predicted_step_s, double achieved_step_s, bool calibrated = false);

}  // namespace paratune::tuning::testing
