// The calibration fit's loss over a group's jobs (calibrate_fit.cpp): the weighted sum of the Huber losses of
// the log step-time errors, sum_i w_i H(|log achieved_i - log predicted_c(i)|), for predictions that are the same
// for every job of a configuration. Evaluated in O(configurations x log jobs) instead of O(jobs): a fit evaluates
// it hundreds of times, and a site's group holds a hundred thousand jobs of a few dozen configurations.
#pragma once

#include <cstddef>
#include <vector>

namespace paratune::tuning::detail {

class HuberSum {
 public:
  // Job i's log achieved step time, configuration (0 .. configs-1) and weight; H is squared up to `delta`,
  // linear (2 delta r - delta^2, continuous at delta) beyond.
  HuberSum(const std::vector<double>& log_achieved, const std::vector<size_t>& config_of, size_t configs,
           const std::vector<double>& weights, double delta);
  // The sum for log predictions per configuration.
  double operator()(const std::vector<double>& log_predicted) const;

 private:
  // One configuration's jobs, sorted by x = log achieved - center, with prefix sums of w, w x and w x^2: the
  // jobs within delta of a prediction are one run of them (squared), those below and above the two others
  // (linear), and each run's sum follows from three prefix sums. Centred so that the squares stay small and
  // their differences exact enough.
  struct Config {
    double center = 0;
    std::vector<double> x, w, wx, wxx;  // x sorted; prefix sums of size x.size() + 1
  };
  std::vector<Config> configs_;
  double delta_;
};

}  // namespace paratune::tuning::detail
