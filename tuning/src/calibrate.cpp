#include "paratune/tuning/calibrate.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "paratune/advisor/advisor.h"
#include "paratune/advisor/catalog.h"
#include "paratune/advisor/model.h"

namespace paratune::tuning {

using namespace paratune::advisor;

namespace {

double predict_with(const Sample& s, const ModelParams& p) {
  Evaluator ev(s.scenario, s.scenario.training.framework, p);
  return ev.evaluate(s.layout).step_s;
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

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

}  // namespace

std::vector<Sample> usable_samples(const std::vector<LogEntry>& entries, const CalibrateOptions& o,
                                   std::vector<std::string>* skipped) {
  std::map<std::string, size_t> why;
  std::vector<Sample> out;
  for (const auto& e : entries) {
    if (!e.scenario || !e.layout) { ++why["no scenario/plan"]; continue; }
    if (!e.achieved_step_s) { ++why["no achieved step time"]; continue; }
    if (!is_gpu_key(e.scenario->cluster.gpu)) { ++why["unknown GPU model"]; continue; }
    Sample s{*e.scenario, *e.layout, *e.achieved_step_s, e.time};
    try {
      validate(s.scenario);
      if (!layout_problem(s.scenario, s.layout, s.scenario.training.framework).empty()) { ++why["invalid plan"]; continue; }
      const double pred = predict_step(s, {});
      const double r = pred / s.achieved_step_s;
      if (!(r >= o.min_ratio && r <= o.max_ratio)) { ++why["ratio outside [" + fmt("%g", o.min_ratio) + ", " + fmt("%g", o.max_ratio) + "]"]; continue; }
    } catch (const std::exception&) {
      ++why["scenario the model rejects"];
      continue;
    }
    out.push_back(std::move(s));
  }
  if (skipped)
    for (const auto& [k, n] : why) skipped->push_back(std::to_string(n) + " skipped: " + k);
  return out;
}

double predict_step(const Sample& s, const Calibration& c) {
  return predict_with(s, calibrated_params(c, s.scenario));
}

ErrorStats error_stats(const std::vector<Sample>& samples, const Calibration& c) {
  ErrorStats st;
  std::vector<double> abs;
  for (const auto& s : samples) abs.push_back(std::fabs(s.achieved_step_s / predict_step(s, c) - 1));
  st.n = abs.size();
  if (abs.empty()) return st;
  double sum = 0;
  for (double a : abs) sum += a;
  st.mean_abs = sum / double(abs.size());
  std::sort(abs.begin(), abs.end());
  st.median_abs = abs.size() % 2 ? abs[abs.size() / 2] : (abs[abs.size() / 2 - 1] + abs[abs.size() / 2]) / 2;
  return st;
}

CalibrationResult calibrate(const std::vector<Sample>& samples, const CalibrateOptions& o) {
  CalibrationResult res;
  std::map<std::pair<std::string, std::string>, std::vector<const Sample*>> groups;
  for (const auto& s : samples)
    groups[{gpu_spec(s.scenario.cluster.gpu).key, to_string(s.scenario.cluster.fabric)}].push_back(&s);

  for (const auto& [key, members] : groups) {
    GroupReport g;
    g.gpu = key.first;
    g.fabric = key.second;
    g.samples = members.size();
    for (const Sample* s : members) g.multinode += s->scenario.cluster.nodes > 1;
    std::vector<Sample> local;
    for (const Sample* s : members) local.push_back(*s);
    g.before = error_stats(local, {});
    if (g.samples < o.min_samples) {
      g.note = "kept shipped parameters: " + std::to_string(g.samples) + " jobs < minimum " + std::to_string(o.min_samples);
      g.after = g.before;
      res.groups.push_back(g);
      continue;
    }
    CalibrationEntry e;
    e.gpu = g.gpu;
    e.fabric = g.fabric;
    const bool fit_net = g.multinode >= o.min_multinode;
    auto loss = [&](double lc, double ln) {
      e.compute_scale = std::exp(lc);
      e.network_scale = std::exp(ln);
      double sum = 0;
      for (const auto& s : local) {
        const double r = std::fabs(std::log(s.achieved_step_s / predict_with(s, apply_entry(e, s.scenario))));
        sum += r <= o.huber_delta ? r * r : o.huber_delta * (2 * r - o.huber_delta);  // Huber: a sick node's job
      }                                                                                  // does not drag the fit
      return sum / double(local.size()) + o.prior_weight * (lc * lc + ln * ln);
    };
    // Coordinate descent in log space: compute first (it moves every job), then the network (multi-node only).
    double lc = 0, ln = 0;
    for (int round = 0; round < (fit_net ? 4 : 1); ++round) {
      lc = golden([&](double x) { return loss(x, ln); }, std::log(0.2), std::log(2.5));
      if (fit_net) ln = golden([&](double x) { return loss(lc, x); }, std::log(0.1), std::log(3.0));
    }
    e.compute_scale = std::exp(lc);
    e.network_scale = std::exp(ln);
    e.samples = int(g.samples);
    e.multinode_samples = int(g.multinode);
    g.compute_scale = e.compute_scale;
    g.network_scale = e.network_scale;
    Calibration one;
    one.entries.push_back(e);
    g.after = error_stats(local, one);
    e.error_before = g.before.mean_abs;
    e.error_after = g.after.mean_abs;
    g.fitted = true;
    g.note = "compute_scale " + fmt("%.3f", e.compute_scale) +
             (fit_net ? ", network_scale " + fmt("%.3f", e.network_scale)
                      : ", network_scale kept (" + std::to_string(g.multinode) + " multi-node jobs < " +
                            std::to_string(o.min_multinode) + ")");
    res.calibration.entries.push_back(e);
    res.groups.push_back(g);
  }
  res.before = error_stats(samples, {});
  res.after = error_stats(samples, res.calibration);
  return res;
}

}  // namespace paratune::tuning
