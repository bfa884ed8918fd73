// Error statistics for the accuracy report: absolute and signed throughput errors of a set of rows.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace paratune::accuracy {

struct Stats {
  std::vector<double> signed_errors;
  void add(double e) { signed_errors.push_back(e); }
  size_t n() const { return signed_errors.size(); }
  double mape() const {
    double s = 0;
    for (double e : signed_errors) s += std::fabs(e);
    return n() ? s / double(n()) : 0;
  }
  double max_abs() const {
    double m = 0;
    for (double e : signed_errors) m = std::max(m, std::fabs(e));
    return m;
  }
  static double median_of(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  }
  double median_abs() const {
    std::vector<double> a;
    for (double e : signed_errors) a.push_back(std::fabs(e));
    return median_of(a);
  }
  double median_signed() const { return median_of(signed_errors); }
  double over_share() const {
    size_t k = 0;
    for (double e : signed_errors) k += e > 0;
    return n() ? double(k) / double(n()) : 0;
  }
};

// A number through a printf format (one double conversion), for the report's tables.
inline std::string formatted(double v, const char* fmt) {
  char b[64];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}
inline std::string pct(double v, const char* fmt = "%.1f %%") { return formatted(100 * v, fmt); }

// "rows | MAPE | median APE | signed median | over-predicted | max error" (bold MAPE when `bold`).
inline std::string stats_cells(const Stats& s, bool bold = false) {
  const std::string m = pct(s.mape());
  return std::to_string(s.n()) + " | " + (bold ? "**" + m + "**" : m) + " | " + pct(s.median_abs()) + " | " +
         pct(s.median_signed(), "%+.1f %%") + " | " + pct(s.over_share(), "%.0f %%") + " | " + pct(s.max_abs());
}

inline std::string stats_sentence(const Stats& s) {
  return "MAPE " + pct(s.mape()) + ", median " + pct(s.median_abs()) + ", signed median " +
         pct(s.median_signed(), "%+.1f %%") + ", max " + pct(s.max_abs()) + " (" + std::to_string(s.n()) + " rows)";
}

}  // namespace paratune::accuracy
