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

double predict_with(const SampleConfig& c, const ModelParams& p) {
  Evaluator ev(c.scenario, c.scenario.training.framework, p);
  return ev.evaluate(c.layout).step_s;
}

// The distinct configurations of some samples and which one each sample ran: a fit evaluates the model once per
// configuration, then sums over the samples in their order (the same sums, in the same order, as per sample).
struct ConfigIndex {
  std::vector<const SampleConfig*> configs;
  std::vector<size_t> of;
  explicit ConfigIndex(const std::vector<Sample>& samples) {
    std::map<const SampleConfig*, size_t> at;
    for (const auto& s : samples) {
      const auto [it, fresh] = at.emplace(s.config.get(), configs.size());
      if (fresh) configs.push_back(s.config.get());
      of.push_back(it->second);
    }
  }
  template <class Params>
  std::vector<double> predict(Params params) const {
    std::vector<double> out;
    out.reserve(configs.size());
    for (const SampleConfig* c : configs) out.push_back(predict_with(*c, params(c->scenario)));
    return out;
  }
};

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

std::string job_name(const LogEntry& e) { return "job " + (e.job_id.empty() ? "(no id)" : e.job_id); }

}  // namespace

// A configuration's verdict, once per distinct scenario and plan.
const SampleCollector::Checked& SampleCollector::check(const LogEntry& e) {
  const std::pair<const void*, const void*> key{e.parsed_scenario.get(), e.parsed_layout.get()};
  if (key.first && key.second)
    if (auto it = configs_.find(key); it != configs_.end()) return it->second;
  Checked c;
  c.keep_scenario = e.parsed_scenario;
  c.keep_layout = e.parsed_layout;
  auto cfg = std::make_shared<SampleConfig>(SampleConfig{*e.scenario, *e.layout, 0});
  if (!is_gpu_key(cfg->scenario.cluster.gpu)) {  // a calibration entry names a catalog GPU
    c.why = "unknown GPU";
    c.detail = "scenario.cluster.gpu '" + cfg->scenario.cluster.gpu + "'";
  } else {
    try {
      validate(cfg->scenario);
      if (auto p = layout_problem(cfg->scenario, cfg->layout, cfg->scenario.training.framework); !p.empty()) {
        c.why = "invalid plan";
        c.detail = "plan: " + p;
      } else {
        // Predicted with the scenario as logged, gpu_spec overrides included: the baseline the job was planned on.
        cfg->shipped_step_s = predict_with(*cfg, calibrated_params({}, cfg->scenario));
        c.config = std::move(cfg);
      }
    } catch (const std::exception& ex) {
      c.why = "scenario the model rejects";
      c.detail = std::string("scenario: ") + ex.what();
    }
  }
  if (!key.first || !key.second) {  // entries made by hand share nothing: not cached
    scratch_ = std::move(c);
    return scratch_;
  }
  return configs_.emplace(key, std::move(c)).first->second;
}

void SampleCollector::skip(const LogEntry& e, const std::string& why, const std::string& detail) {
  if (++skipped_[why] == 1) examples_[why] = job_name(e) + ": " + detail;
}

void SampleCollector::add(const LogEntry& e) {
  if (!e.scenario_problem.empty()) return skip(e, "scenario or plan unreadable", e.scenario_problem);
  if (!e.scenario || !e.layout) return skip(e, "no scenario or plan", e.scenario ? "no \"plan\"" : "no \"scenario\"");
  if (!e.achieved_step_s)
    return skip(e, "no achieved figures",
                "no achieved.median_step_time_s nor achieved.tokens_per_s" +
                    (e.report.empty() ? std::string() : " (report: " + e.report.substr(0, 80) + ")"));
  const Checked& c = check(e);
  if (!c.config) return skip(e, c.why, c.detail);
  const double r = c.config->shipped_step_s / *e.achieved_step_s;
  if (!(r >= o_.min_ratio && r <= o_.max_ratio))
    return skip(e, "ratio outside [" + fmt("%g", o_.min_ratio) + ", " + fmt("%g", o_.max_ratio) + "]",
                "achieved " + fmt("%.4g", *e.achieved_step_s) + " s/step vs predicted " +
                    fmt("%.4g", c.config->shipped_step_s) + " s (ratio " + fmt("%.3g", r) + ")");
  samples_.push_back({c.config, *e.achieved_step_s, e.time});
}

std::vector<Sample> usable_samples(const std::vector<LogEntry>& entries, const CalibrateOptions& o, SkipTally* skipped,
                                   SkipExamples* examples) {
  SampleCollector c(o);
  for (const auto& e : entries) c.add(e);
  if (skipped)
    for (const auto& [why, n] : c.skipped()) (*skipped)[why] += n;
  if (examples)
    for (const auto& [why, ex] : c.examples()) examples->emplace(why, ex);
  return std::move(c.samples());
}

std::vector<Sample> usable_samples(const std::vector<LogEntry>& entries, const CalibrateOptions& o,
                                   std::vector<std::string>* skipped) {
  SkipTally why;
  auto out = usable_samples(entries, o, &why);
  if (skipped)
    for (const auto& [k, n] : why) skipped->push_back(std::to_string(n) + " skipped: " + k);
  return out;
}

std::string skipped_summary(const SkipTally& skipped, const SkipExamples* examples) {
  std::vector<std::pair<std::string, size_t>> v(skipped.begin(), skipped.end());
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (const auto& [why, n] : v) {
    if (n == 0) continue;
    out += (out.empty() ? "skipped " : "; ") + std::to_string(n) + ": " + why;
    if (!examples) continue;
    if (auto it = examples->find(why); it != examples->end()) out += " (" + it->second + ")";
  }
  return out;
}

double predict_step(const Sample& s, const Calibration& c) {
  return predict_with(*s.config, calibrated_params(c, s.scenario()));
}

ErrorStats error_stats(const std::vector<Sample>& samples, const Calibration& c) {
  ErrorStats st;
  const ConfigIndex idx(samples);
  const auto pred = idx.predict([&](const Scenario& sc) { return calibrated_params(c, sc); });
  std::vector<double> abs;
  for (size_t i = 0; i < samples.size(); ++i)
    abs.push_back(std::fabs(samples[i].achieved_step_s / pred[idx.of[i]] - 1));
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

std::string framework_of(const Sample& s) { return to_string(s.scenario().training.framework); }

// Per (GPU, fabric, framework) when the stack has min_samples jobs; the rest pooled per (GPU, fabric) with
// framework "" (the fallback entry). Jobs of a stack with its own entry stay out of the fallback: they are
// described by their entry and would only pull the fallback towards their stack.
std::vector<Group> make_groups(const std::vector<Sample>& samples, const CalibrateOptions& o) {
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<const Sample*>> by_stack;
  for (const auto& s : samples)
    by_stack[{gpu_spec(s.scenario().cluster.gpu).key, to_string(s.scenario().cluster.fabric),
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
  const ConfigIndex idx(local);
  auto loss = [&](double lc, double ln) {
    e.compute_scale = std::exp(lc);
    e.network_scale = std::exp(ln);
    const auto pred = idx.predict([&](const Scenario& sc) { return apply_entry(e, sc); });
    double sum = 0;
    for (size_t i = 0; i < local.size(); ++i) {
      const auto& s = local[i];
      const double r = std::fabs(std::log(s.achieved_step_s / pred[idx.of[i]]));
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
    g.multinode += s->scenario().cluster.nodes > 1;
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
