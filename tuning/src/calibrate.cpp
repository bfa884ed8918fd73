#include "paratune/tuning/calibrate.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

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

namespace {

// Why an entry cannot be a sample ("" when it can); the sample is filled when it can.
std::string unusable(const LogEntry& e, const CalibrateOptions& o, Sample* out) {
  if (!e.scenario_problem.empty()) return "scenario or plan unreadable";
  if (!e.scenario || !e.layout) return "no scenario or plan";
  if (!e.achieved_step_s) return "no achieved figures";
  if (!is_gpu_key(e.scenario->cluster.gpu)) return "unknown GPU";  // a calibration entry names a catalog GPU
  Sample s{*e.scenario, *e.layout, *e.achieved_step_s, e.time};
  try {
    validate(s.scenario);
    if (!layout_problem(s.scenario, s.layout, s.scenario.training.framework).empty()) return "invalid plan";
    // Predicted with the scenario as logged, gpu_spec overrides included: the baseline the job was planned on.
    const double r = predict_step(s, {}) / s.achieved_step_s;
    if (!(r >= o.min_ratio && r <= o.max_ratio))
      return "ratio outside [" + fmt("%g", o.min_ratio) + ", " + fmt("%g", o.max_ratio) + "]";
  } catch (const std::exception&) {
    return "scenario the model rejects";
  }
  *out = std::move(s);
  return "";
}

}  // namespace

std::vector<Sample> usable_samples(const std::vector<LogEntry>& entries, const CalibrateOptions& o, SkipTally* skipped) {
  std::vector<Sample> out;
  for (const auto& e : entries) {
    Sample s;
    const std::string why = unusable(e, o, &s);
    if (why.empty()) out.push_back(std::move(s));
    else if (skipped) ++(*skipped)[why];
  }
  return out;
}

std::vector<Sample> usable_samples(const std::vector<LogEntry>& entries, const CalibrateOptions& o,
                                   std::vector<std::string>* skipped) {
  SkipTally why;
  auto out = usable_samples(entries, o, &why);
  if (skipped)
    for (const auto& [k, n] : why) skipped->push_back(std::to_string(n) + " skipped: " + k);
  return out;
}

std::string skipped_summary(const SkipTally& skipped) {
  std::vector<std::pair<std::string, size_t>> v(skipped.begin(), skipped.end());
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (const auto& [why, n] : v) {
    if (n == 0) continue;
    out += (out.empty() ? "skipped " : "; ") + std::to_string(n) + ": " + why;
  }
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

namespace {

struct Group {
  std::string gpu, fabric, framework;
  std::vector<const Sample*> members;
};

std::string framework_of(const Sample& s) { return to_string(s.scenario.training.framework); }

// Per (GPU, fabric, framework) when the stack has min_samples jobs; the rest pooled per (GPU, fabric) with
// framework "" (the fallback entry). Jobs of a stack with its own entry stay out of the fallback: they are
// described by their entry and would only pull the fallback towards their stack.
std::vector<Group> make_groups(const std::vector<Sample>& samples, const CalibrateOptions& o) {
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<const Sample*>> by_stack;
  for (const auto& s : samples)
    by_stack[{gpu_spec(s.scenario.cluster.gpu).key, to_string(s.scenario.cluster.fabric),
              o.per_framework ? framework_of(s) : ""}].push_back(&s);
  std::vector<Group> out;
  std::map<std::pair<std::string, std::string>, std::vector<const Sample*>> pooled;
  for (auto& [key, members] : by_stack) {
    const auto& [gpu, fabric, framework] = key;
    if (!framework.empty() && members.size() >= o.min_samples) out.push_back({gpu, fabric, framework, members});
    else pooled[{gpu, fabric}].insert(pooled[{gpu, fabric}].end(), members.begin(), members.end());
  }
  for (auto& [key, members] : pooled) out.push_back({key.first, key.second, "", members});
  return out;
}

std::string stacks_of(const std::vector<const Sample*>& members) {
  std::map<std::string, size_t> n;
  for (const Sample* s : members) ++n[framework_of(*s)];
  std::string out;
  for (const auto& [fw, k] : n) out += (out.empty() ? "" : ", ") + fw;
  return out;
}

// Fit one group's entry: coordinate descent in log space, compute first (it moves every job), then the network
// (multi-node jobs only, and only with enough of them).
CalibrationEntry fit_entry(const Group& g, const std::vector<Sample>& local, size_t multinode, const CalibrateOptions& o) {
  CalibrationEntry e;
  e.gpu = g.gpu;
  e.fabric = g.fabric;
  e.framework = g.framework;
  const bool fit_net = multinode >= o.min_multinode;
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
  double lc = 0, ln = 0;
  for (int round = 0; round < (fit_net ? 4 : 1); ++round) {
    lc = golden([&](double x) { return loss(x, ln); }, std::log(0.2), std::log(2.5));
    if (fit_net) ln = golden([&](double x) { return loss(lc, x); }, std::log(0.1), std::log(3.0));
  }
  e.compute_scale = std::exp(lc);
  e.network_scale = std::exp(ln);
  e.samples = int(local.size());
  e.multinode_samples = int(multinode);
  return e;
}

GroupReport report_group(const Group& grp, const CalibrateOptions& o, Calibration* out) {
  GroupReport g;
  g.gpu = grp.gpu;
  g.fabric = grp.fabric;
  g.framework = grp.framework;
  g.stacks = stacks_of(grp.members);
  g.samples = grp.members.size();
  std::vector<Sample> local;
  for (const Sample* s : grp.members) {
    g.multinode += s->scenario.cluster.nodes > 1;
    local.push_back(*s);
  }
  g.before = error_stats(local, {});
  if (g.samples < o.min_samples) {
    g.note = "kept shipped parameters: " + std::to_string(g.samples) + " jobs < minimum " + std::to_string(o.min_samples);
    g.after = g.before;
    return g;
  }
  CalibrationEntry e = fit_entry(grp, local, g.multinode, o);
  g.compute_scale = e.compute_scale;
  g.network_scale = e.network_scale;
  Calibration one;
  one.entries.push_back(e);
  // The group's own jobs under its own entry (a framework-less entry reaches every stack of the pool).
  g.after = error_stats(local, one);
  e.error_before = g.before.mean_abs;
  e.error_after = g.after.mean_abs;
  g.fitted = true;
  g.note = "compute_scale " + fmt("%.3f", e.compute_scale) +
           (g.multinode >= o.min_multinode ? ", network_scale " + fmt("%.3f", e.network_scale)
                                           : ", network_scale kept (" + std::to_string(g.multinode) +
                                                 " multi-node jobs < " + std::to_string(o.min_multinode) + ")");
  out->entries.push_back(e);
  return g;
}

}  // namespace

CalibrationResult calibrate(const std::vector<Sample>& samples, const CalibrateOptions& o) {
  CalibrationResult res;
  for (const Group& grp : make_groups(samples, o)) res.groups.push_back(report_group(grp, o, &res.calibration));
  res.before = error_stats(samples, {});
  res.after = error_stats(samples, res.calibration);
  return res;
}

}  // namespace paratune::tuning
