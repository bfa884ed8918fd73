#include "history.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include <nlohmann/json.hpp>

#include "calib_data.h"
#include "paratune/advisor/advisor.h"
#include "paratune/advisor/model.h"
#include "paratune/tuning/report.h"
#include "paratune/tuning/scenario_json.h"

namespace paratune::tuning::testing {

using namespace paratune::advisor;

std::string log_line(const std::string& job_id, long long time, const std::string& partition,
                     const std::vector<std::string>& nodes, const Scenario& s, const Layout& l,
                     double predicted_step_s, double achieved_step_s, bool calibrated) {
  const double tokens = double(s.training.global_batch) * s.model.seq_len;
  nlohmann::json j = {{"version", 1},
                      {"time", time},
                      {"job_id", job_id},
                      {"step_id", "batch"},
                      {"user", job_id.back() % 2 ? "alice" : "bob"},
                      {"partition", partition},
                      {"host", nodes.empty() ? "" : nodes.front()},
                      {"node_list", nodes},
                      {"nodes", s.cluster.nodes},
                      {"gpus_per_node", s.cluster.gpus_per_node},
                      {"gpu_model", s.cluster.gpu},
                      {"scenario", scenario_to_json(s)},
                      {"plan", layout_to_json(l)},
                      {"predicted", {{"step_time_s", predicted_step_s}, {"tokens_per_s", tokens / predicted_step_s},
                                     {"calibrated", calibrated}}}};
  ReportSummary r;
  r.valid = true;
  r.step_time = {achieved_step_s, achieved_step_s * 0.98, achieved_step_s * 1.03, 50};
  r.samples = 53;
  r.warmup_excluded = 3;
  add_achieved(j, r, kDefaultSuspectThreshold, nodes);
  j["state"] = "COMPLETED";
  return j.dump() + "\n";
}

namespace {

struct Template {
  Scenario s;
  Layout l;
};

Scenario make(const std::string& model, const std::string& gpu, Fabric fabric, int nodes, double nic_gbps, int gbs,
              Precision prec) {
  Scenario s;
  s.model = model_preset(model);
  s.training.global_batch = gbs;
  s.training.precision = prec;
  s.training.framework = Framework::Megatron;
  // The site reduces gradients in fp32 (--accumulate-allreduce-grads-in-fp32): twice the data-parallel traffic
  // of Megatron-Core's default, so that the network term is large enough to be recovered on its own.
  s.training.grad_reduce_fp32 = true;
  s.cluster.gpu = gpu;
  s.cluster.nodes = nodes;
  s.cluster.gpus_per_node = 8;
  s.cluster.nvlink_domain = 8;
  s.cluster.nic_count = 8;
  s.cluster.nic_gbps = nic_gbps;
  s.cluster.fabric = fabric;
  s.cluster.gpu_nic_path = "PIX";
  return s;
}

std::vector<Template> templates() {
  std::vector<Template> t;
  const std::vector<Scenario> ss = {
      make("llama3-8b", "h100-sxm5-80gb", Fabric::InfiniBand, 1, 400, 128, Precision::Bf16),
      make("llama3-8b", "h100-sxm5-80gb", Fabric::InfiniBand, 2, 400, 256, Precision::Bf16),
      make("llama2-7b", "h100-sxm5-80gb", Fabric::InfiniBand, 4, 200, 512, Precision::Fp8),
      make("gpt3-1.3b", "h100-sxm5-80gb", Fabric::InfiniBand, 8, 100, 512, Precision::Bf16),
      make("mpt-7b", "h100-sxm5-80gb", Fabric::InfiniBand, 4, 50, 256, Precision::Bf16),
      make("mpt-7b", "a100-sxm4-80gb", Fabric::RoCE, 1, 200, 128, Precision::Bf16),
      make("mpt-3b", "a100-sxm4-80gb", Fabric::RoCE, 2, 200, 256, Precision::Bf16),
      make("gpt3-1.3b", "a100-sxm4-80gb", Fabric::RoCE, 1, 200, 256, Precision::Bf16),
  };
  for (const auto& s : ss) {
    SearchLimits lim;
    lim.top_n = 1;
    const Plan p = advise(s, lim);
    t.push_back({s, p.layout});
  }
  return t;
}

}  // namespace

std::string synthetic_history(int jobs, const SiteTruth& truth, unsigned seed) {
  static const std::vector<Template> tpl = templates();
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, truth.noise);
  std::string out;
  const long long t0 = 1735689600;  // 2025-01-01T00:00Z
  for (int i = 0; i < jobs; ++i) {
    const Template& t = tpl[size_t(i) % tpl.size()];
    const bool h100 = t.s.cluster.gpu.rfind("h100", 0) == 0;
    CalibrationEntry e;
    e.compute_scale = h100 ? truth.h100_ib_compute : truth.a100_roce_compute;
    e.network_scale = h100 ? truth.h100_ib_network : 1.0;
    const ModelParams real = apply_entry(e, t.s);
    const double achieved_clean = Evaluator(t.s, t.s.training.framework, real).evaluate(t.l).step_s;
    const double predicted = Evaluator(t.s, t.s.training.framework).evaluate(t.l).step_s;
    std::vector<std::string> nodes;
    const int base = 1 + (i * 3) % 40;
    for (int n = 0; n < t.s.cluster.nodes; ++n) {
      char b[16];
      std::snprintf(b, sizeof b, "gpu%03d", base + n);
      nodes.push_back(b);
    }
    double achieved = achieved_clean * std::exp(noise(rng));
    if (std::find(nodes.begin(), nodes.end(), truth.slow_node) != nodes.end()) achieved *= 2.0;
    out += log_line(std::to_string(1000 + i), t0 + 3600LL * i, h100 ? "h100" : "a100", nodes, t.s, t.l, predicted,
                    achieved, truth.calibrated);
  }
  return out;
}

std::string published_history(const std::string& csv, size_t* n_rows) {
  std::string error;
  const auto rows = calib::load_rows(csv, &error);
  if (rows.empty()) return {};
  std::vector<size_t> order(rows.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(2025);
  std::shuffle(order.begin(), order.end(), rng);
  std::string out;
  size_t used = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const auto& r = rows[order[k]];
    if (r.per_layer) continue;  // one-layer micro-benchmarks are not jobs
    const auto rp = calib::predict_row(r, shipped_params());
    if (!rp.fits || rp.time_s <= 0) continue;
    Scenario s = r.s;
    s.training.framework = r.fw;
    const std::vector<std::string> nodes = {"row-" + r.id};
    out += log_line(r.id, 1735689600LL + 3600LL * static_cast<long long>(k), r.source.substr(0, 1), nodes, s, rp.layout,
                    rp.time_s, r.meas_time_s);
    ++used;
  }
  if (n_rows) *n_rows = used;
  return out;
}

}  // namespace paratune::tuning::testing
