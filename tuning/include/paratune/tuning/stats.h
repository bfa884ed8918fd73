// Robust statistics of step times: quantiles, and where the settled (post-warm-up) regime begins.
#pragma once

#include <cstddef>
#include <vector>

namespace paratune::tuning {

struct RobustStats {
  double median = 0, p10 = 0, p90 = 0;
  size_t n = 0;
};

// Quantile q in [0,1] of an ascending-sorted, non-empty vector (linear interpolation between order statistics).
double quantile_sorted(const std::vector<double>& sorted, double q);

// Median, p10, p90 and count of `values` (all zero when empty).
RobustStats robust_stats(std::vector<double> values);

// Warm-up rule: the settled regime starts at the first index from which `window` consecutive steps all lie within
// `tolerance` of the reference (the median of the second half of the run); at least `min_skip` steps are dropped,
// at most half of them. Runs of fewer than `min_steps` samples are taken whole (too short to tell).
struct WarmupRule {
  size_t min_skip = 0;
  size_t window = 3;
  double tolerance = 0.15;
  size_t min_steps = 4;
};

// Number of leading samples (in the order given) that belong to the warm-up.
size_t warmup_count(const std::vector<double>& step_times, const WarmupRule& rule = {});

}  // namespace paratune::tuning
