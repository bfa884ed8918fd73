#include "paratune/tuning/calibrate.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>

#include "paratune/advisor/advisor.h"
#include "paratune/advisor/catalog.h"
#include "paratune/advisor/model.h"
#include "calibrate_detail.h"

namespace paratune::tuning {

using namespace paratune::advisor;

namespace {

// The shortest step the GPUs could run the model's FLOPs in: every GPU at the largest dense peak it has for the
// run's precision (FP8 runs: the FP8 peak). A reported step below it did not happen.
double fastest_step(const SampleConfig& c) {
  const Evaluator ev(c.scenario, c.scenario.training.framework, shipped_params());
  const GpuSpec g = effective_gpu(c.scenario.cluster);
  double peak = std::max(g.bf16_tflops, g.fp16_tflops);
  if (c.scenario.training.precision == Precision::Fp8) peak = std::max(peak, g.fp8_tflops);
  const double gpus = double(c.scenario.total_gpus());
  if (!(peak > 0) || !(gpus > 0)) return 0;
  return ev.evaluate(c.layout).model_flops_step / (gpus * peak * 1e12);
}

}  // namespace

namespace detail {

double predict_with(const SampleConfig& c, const ModelParams& p) {
  Evaluator ev(c.scenario, c.scenario.training.framework, p);
  return ev.evaluate(c.layout).step_s;
}

ConfigIndex::ConfigIndex(const std::vector<Sample>& samples) {
  std::unordered_map<const SampleConfig*, size_t> at;
  for (const auto& s : samples) {
    const auto [it, fresh] = at.emplace(s.config.get(), configs.size());
    if (fresh) configs.push_back(s.config.get());
    of.push_back(it->second);
  }
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

}  // namespace detail

using detail::ConfigIndex;
using detail::fmt;
using detail::predict_with;

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
  auto cfg = std::make_shared<SampleConfig>(SampleConfig{*e.scenario, *e.layout, 0, 0});
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
        cfg->fastest_step_s = fastest_step(*cfg);
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

std::shared_ptr<const std::string> SampleCollector::user(const std::string& name) {
  if (name.empty()) return nullptr;
  auto it = users_.find(name);
  if (it == users_.end()) it = users_.emplace(name, std::make_shared<const std::string>(name)).first;
  return it->second;
}

namespace {

StackKey stack_of(const Scenario& s) {
  return {gpu_spec(s.cluster.gpu).key, to_string(s.cluster.fabric), to_string(s.training.framework)};
}

}  // namespace

namespace {

// Why a job's step time does not measure the logged plan, "" when nothing says so: the user's own PARATUNE_*
// values replaced the plan's (their scripts read those), nodes unlike the plan's ran it, or its report counted
// another batch than the plan's global batch x sequence length.
std::string departure(const LogEntry& e) {
  if (!e.kept_paratune_vars.empty()) {
    std::string names;
    for (size_t i = 0; i < e.kept_paratune_vars.size() && i < 4; ++i) names += (i ? ", " : "") + e.kept_paratune_vars[i];
    return "the user's own " + names + " kept (env_kept)";
  }
  if (e.node_mismatches > 0)
    return std::to_string(e.node_mismatches) + " node(s) unlike the plan's (node_checks.mismatch)";
  if (e.achieved_tokens_per_step && e.scenario) {
    const double planned = double(e.scenario->training.global_batch) * double(e.scenario->model.seq_len);
    if (planned > 0 && std::fabs(*e.achieved_tokens_per_step / planned - 1) > 0.01)
      return "its report counted " + fmt("%.6g", *e.achieved_tokens_per_step) + " tokens a step, the plan " +
             fmt("%.6g", planned);
  }
  return "";
}

}  // namespace

void SampleCollector::add(const LogEntry& e) {
  if (!e.scenario_problem.empty()) return skip(e, "scenario or plan unreadable", e.scenario_problem);
  if (!e.scenario || !e.layout) return skip(e, "no scenario or plan", e.scenario ? "no \"plan\"" : "no \"scenario\"");
  if (!e.achieved_step_s)
    return skip(e, "no achieved figures",
                "no achieved.median_step_time_s nor achieved.tokens_per_s" +
                    (e.report.empty() ? std::string() : " (report: " + e.report.substr(0, 80) + ")"));
  if (e.achieved_steps > 0 && e.achieved_steps < o_.min_steps)
    return skip(e, "too few timed steps",
                std::to_string(e.achieved_steps) + " steps (at least " + std::to_string(o_.min_steps) +
                    " for a median past the warm-up)");
  if (const std::string why = departure(e); !why.empty()) return skip(e, "did not run the logged plan", why);
  const Checked& c = check(e);
  if (!c.config) return skip(e, c.why, c.detail);
  const double step = *e.achieved_step_s, r = c.config->shipped_step_s / step;
  const bool above_peak = step < c.config->fastest_step_s;
  if (!(r >= o_.min_ratio && r <= o_.max_ratio) || above_peak) {
    ++stack_drops_[stack_of(c.config->scenario)][kOutOfRange];
    const std::string why = above_peak ? "faster than the GPUs' dense peak allows: " +
                                             fmt("%.4g", c.config->fastest_step_s) + " s"
                                       : "outside [" + fmt("%g", o_.min_ratio) + ", " + fmt("%g", o_.max_ratio) + "]";
    return skip(e, kOutOfRange,
                "achieved " + fmt("%.4g", step) + " s/step vs predicted " + fmt("%.4g", c.config->shipped_step_s) +
                    " s (ratio " + fmt("%.3g", r) + ", " + why + ")");
  }
  samples_.push_back({c.config, step, e.time, user(e.user)});
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
  // The middle element(s) without sorting them all: the same values, a million jobs in linear time.
  const auto mid = abs.begin() + long(abs.size() / 2);
  std::nth_element(abs.begin(), mid, abs.end());
  st.median_abs = abs.size() % 2 ? *mid : (*std::max_element(abs.begin(), mid) + *mid) / 2;
  return st;
}

}  // namespace paratune::tuning
