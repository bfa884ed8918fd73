// What calibrate.cpp (samples) and calibrate_fit.cpp (the groups' fits) share.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "paratune/advisor/model.h"
#include "paratune/tuning/calibrate.h"

namespace paratune::tuning::detail {

// The step time the model predicts for a configuration under parameters `p`.
double predict_with(const SampleConfig& c, const advisor::ModelParams& p);

// The distinct configurations of some samples and which one each sample ran: a fit evaluates the model once per
// configuration, then sums over the samples in their order (the same sums, in the same order, as per sample).
struct ConfigIndex {
  std::vector<const SampleConfig*> configs;
  std::vector<size_t> of;
  explicit ConfigIndex(const std::vector<Sample>& samples);
  template <class Params>
  std::vector<double> predict(Params params) const {
    std::vector<double> out;
    out.reserve(configs.size());
    for (const SampleConfig* c : configs) out.push_back(predict_with(*c, params(c->scenario)));
    return out;
  }
};

std::string fmt(const char* f, double v);  // snprintf of one number

// Golden-section minimum of f on [lo, hi] (unimodal enough for a one-parameter efficiency fit).
template <class F>
double golden(F f, double lo, double hi, int iters = 40) {
  const double g = (std::sqrt(5.0) - 1) / 2;
  double a = lo, b = hi, c = b - g * (b - a), d = a + g * (b - a);
  double fc = f(c), fd = f(d);
  for (int i = 0; i < iters; ++i) {
    if (fc < fd) { b = d; d = c; fd = fc; c = b - g * (b - a); fc = f(c); }
    else { a = c; c = d; fc = fd; d = a + g * (b - a); fd = f(d); }
  }
  return (a + b) / 2;
}

}  // namespace paratune::tuning::detail
