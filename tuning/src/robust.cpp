#include "paratune/tuning/robust.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace paratune::tuning {

double effective_share_cap(size_t users, double max_share) {
  if (users == 0) return 1;
  return std::max(max_share, 1.0 / double(users));
}

std::vector<double> user_share_weights(const std::vector<size_t>& user_of, double max_share) {
  std::vector<double> w(user_of.size(), 1.0);
  if (user_of.empty()) return w;
  std::vector<double> n(*std::max_element(user_of.begin(), user_of.end()) + 1, 0.0);
  for (size_t u : user_of) n[u] += 1;
  std::vector<double> present;
  for (double c : n)
    if (c > 0) present.push_back(c);
  const double cap = effective_share_cap(present.size(), max_share);
  const double total = std::accumulate(present.begin(), present.end(), 0.0);
  std::sort(present.begin(), present.end(), std::greater<>());
  if (present.front() <= cap * total) return w;  // no user over the cap: every weight stays exactly 1
  // Cap the k largest users at a common total t with t = cap x (k t + rest): t = cap rest / (1 - cap k), valid when
  // the k-th user is above t and the next one is not. When every user would be capped (cap = 1/users), all are equal.
  double rest = total, level = present.back();
  for (size_t k = 1; k < present.size(); ++k) {
    rest -= present[k - 1];
    if (1 - cap * double(k) <= 0) break;
    const double t = cap * rest / (1 - cap * double(k));
    if (t < present[k - 1] && t >= present[k]) {
      level = t;
      break;
    }
  }
  for (size_t i = 0; i < user_of.size(); ++i)
    if (n[user_of[i]] > level) w[i] = level / n[user_of[i]];
  return w;
}

double weighted_median(const std::vector<double>& values, const std::vector<double>& weights) {
  if (values.empty()) return 0;
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  // The first value at which the cumulative weight reaches half; exactly half (an even split): the midpoint of it
  // and the next value, so that two equal halves are treated alike.
  double seen = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    seen += weights[order[k]];
    if (seen >= total / 2) {
      const bool even_split = std::fabs(seen - total / 2) <= 1e-12 * total && k + 1 < order.size();
      return even_split ? (values[order[k]] + values[order[k + 1]]) / 2 : values[order[k]];
    }
  }
  return values[order.back()];
}

double trim_cut(const std::vector<double>& residuals, const std::vector<double>& weights, double k, double floor) {
  const double med = weighted_median(residuals, weights);
  std::vector<double> dev;
  dev.reserve(residuals.size());
  for (double r : residuals) dev.push_back(std::fabs(r - med));
  return std::max(floor, k * 1.4826 * weighted_median(dev, weights));
}

}  // namespace paratune::tuning
