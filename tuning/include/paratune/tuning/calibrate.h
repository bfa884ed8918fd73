// Calibrating the model from the site's logged jobs: per (GPU model, fabric), refit a multiplier on the GEMM
// efficiency (compute_scale) and, when enough multi-node jobs exist, on the fabric efficiency (network_scale),
// minimising the mean Huber loss of the log step-time error (squared up to 10 %, linear beyond, so jobs slowed by
// a sick node do not drag the fit) with a weak pull towards 1 (no change). A group with
// fewer than `min_samples` usable jobs keeps the shipped parameters. docs/calibration.md.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "paratune/advisor/calibration_file.h"
#include "paratune/tuning/tuning_log.h"

namespace paratune::tuning {

struct CalibrateOptions {
  size_t min_samples = 5;            // jobs per (GPU, fabric) before compute_scale is fitted
  size_t min_multinode = 5;          // multi-node jobs in the group before network_scale is fitted
  double prior_weight = 0.02;        // pull of log(scale) towards 0, relative to the mean squared log error
  double huber_delta = 0.1;          // log errors beyond this count linearly (robust to sick-node jobs)
  double min_ratio = 0.05, max_ratio = 20;  // a job outside these ratios has a broken report: not used
};

// A job the fit can use: scenario + layout + achieved median step time.
struct Sample {
  advisor::Scenario scenario;
  advisor::Layout layout;
  double achieved_step_s = 0;
  long long time = 0;
};

// The usable samples of a log (and how many entries were skipped, by reason, in `skipped`).
std::vector<Sample> usable_samples(const std::vector<LogEntry>& entries, const CalibrateOptions& o,
                                   std::vector<std::string>* skipped = nullptr);

// Predicted step time of a sample under a calibration (the shipped parameters for an empty one).
double predict_step(const Sample& s, const advisor::Calibration& c);

// Error measures over samples: mean and median of |achieved/predicted - 1|.
struct ErrorStats {
  size_t n = 0;
  double mean_abs = 0, median_abs = 0;
};
ErrorStats error_stats(const std::vector<Sample>& samples, const advisor::Calibration& c);

struct GroupReport {
  std::string gpu, fabric;
  size_t samples = 0, multinode = 0;
  bool fitted = false;               // false: below the minimum-sample rule
  std::string note;                  // why not / what was fitted
  double compute_scale = 1, network_scale = 1;
  ErrorStats before, after;
};

struct CalibrationResult {
  advisor::Calibration calibration;  // entries only for fitted groups
  std::vector<GroupReport> groups;
  ErrorStats before, after;          // over all usable samples
};

CalibrationResult calibrate(const std::vector<Sample>& samples, const CalibrateOptions& o = {});

}  // namespace paratune::tuning
