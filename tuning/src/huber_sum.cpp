#include "huber_sum.h"

#include <algorithm>
#include <utility>

namespace paratune::tuning::detail {

HuberSum::HuberSum(const std::vector<double>& log_achieved, const std::vector<size_t>& config_of, size_t configs,
                   const std::vector<double>& weights, double delta)
    : configs_(configs), delta_(delta) {
  std::vector<std::vector<std::pair<double, double>>> jobs(configs);
  for (size_t i = 0; i < log_achieved.size(); ++i) jobs[config_of[i]].emplace_back(log_achieved[i], weights[i]);
  for (size_t k = 0; k < configs; ++k) {
    auto& js = jobs[k];
    std::sort(js.begin(), js.end());
    Config& c = configs_[k];
    c.center = js.empty() ? 0 : js[js.size() / 2].first;
    c.x.reserve(js.size());
    c.w.assign(js.size() + 1, 0);
    c.wx.assign(js.size() + 1, 0);
    c.wxx.assign(js.size() + 1, 0);
    for (size_t i = 0; i < js.size(); ++i) {
      const double x = js[i].first - c.center, w = js[i].second;
      c.x.push_back(x);
      c.w[i + 1] = c.w[i] + w;
      c.wx[i + 1] = c.wx[i] + w * x;
      c.wxx[i + 1] = c.wxx[i] + w * x * x;
    }
  }
}

double HuberSum::operator()(const std::vector<double>& log_predicted) const {
  const double d = delta_;
  double sum = 0;
  for (size_t k = 0; k < configs_.size(); ++k) {
    const Config& c = configs_[k];
    if (c.x.empty()) continue;
    const double t = log_predicted[k] - c.center;  // the prediction on the jobs' centred scale
    const size_t n = c.x.size();
    // [0, lo): x < t - d, r = t - x; [lo, hi): |x - t| <= d; [hi, n): x > t + d, r = x - t.
    const size_t lo = size_t(std::lower_bound(c.x.begin(), c.x.end(), t - d) - c.x.begin());
    const size_t hi = size_t(std::upper_bound(c.x.begin() + long(lo), c.x.end(), t + d) - c.x.begin());
    const double w_in = c.w[hi] - c.w[lo], wx_in = c.wx[hi] - c.wx[lo], wxx_in = c.wxx[hi] - c.wxx[lo];
    const double squared = wxx_in - 2 * t * wx_in + t * t * w_in;
    const double below = (2 * d * t - d * d) * c.w[lo] - 2 * d * c.wx[lo];
    const double w_up = c.w[n] - c.w[hi], wx_up = c.wx[n] - c.wx[hi];
    const double above = 2 * d * wx_up - (2 * d * t + d * d) * w_up;
    sum += squared + below + above;
  }
  return sum;
}

}  // namespace paratune::tuning::detail
