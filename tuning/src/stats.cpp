#include "paratune/tuning/stats.h"

#include <algorithm>
#include <cmath>

namespace paratune::tuning {

double quantile_sorted(const std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  q = std::clamp(q, 0.0, 1.0);
  const double pos = q * double(v.size() - 1);
  const size_t lo = size_t(std::floor(pos));
  const size_t hi = std::min(v.size() - 1, lo + 1);
  const double frac = pos - double(lo);
  return v[lo] + (v[hi] - v[lo]) * frac;
}

RobustStats robust_stats(std::vector<double> values) {
  RobustStats r;
  if (values.empty()) return r;
  std::sort(values.begin(), values.end());
  r.n = values.size();
  r.median = quantile_sorted(values, 0.5);
  r.p10 = quantile_sorted(values, 0.1);
  r.p90 = quantile_sorted(values, 0.9);
  return r;
}

size_t warmup_count(const std::vector<double>& t, const WarmupRule& rule) {
  const size_t n = t.size();
  // Too few to find where the run settles: the first logged step may still hold the start-up (torchtitan logs step
  // 1, Megatron's first interval averages its first iterations); it goes when it is slower than the others' median
  // by more than the tolerance.
  if (n < std::max<size_t>(rule.min_steps, 1)) {
    if (n < 2) return 0;
    std::vector<double> rest(t.begin() + 1, t.end());
    std::sort(rest.begin(), rest.end());
    return t[0] > quantile_sorted(rest, 0.5) * (1 + std::max(0.0, rule.tolerance)) ? 1 : 0;
  }
  const size_t cap = n / 2;
  std::vector<double> tail(t.begin() + long(n / 2), t.end());
  std::sort(tail.begin(), tail.end());
  // The lower median of the second half: with two values, one slow outlier there is not the reference.
  const double ref = tail[(tail.size() - 1) / 2];
  const double tol = std::max(0.0, rule.tolerance) * ref;
  const size_t w = std::max<size_t>(1, rule.window);
  auto settled_at = [&](size_t i) {
    for (size_t k = i; k < std::min(n, i + w); ++k)
      if (std::fabs(t[k] - ref) > tol) return false;
    return true;
  };
  for (size_t i = std::min(rule.min_skip, cap); i <= cap; ++i)
    if (settled_at(i)) return i;
  return cap;
}

}  // namespace paratune::tuning
