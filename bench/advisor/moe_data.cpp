#include "moe_data.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace paratune::calib {

namespace {

std::string read_file(const std::string& path, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    if (error) *error = "cannot open " + path;
    return "";
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The model presets the rows describe (their shapes are the presets' configs; the rows restate them).
std::string preset_of(const std::string& model) {
  if (has(model, "deepseek-v3")) return "deepseek-v3";
  if (has(model, "qwen3-30b")) return "qwen3-30b-a3b";
  if (has(model, "qwen3-235b")) return "qwen3-235b-a22b";
  if (has(model, "gpt-oss-120b")) return "gpt-oss-120b";
  if (has(model, "gpt-oss-20b")) return "gpt-oss-20b";
  return "";
}

std::string gpu_of(const std::string& gpu) {
  if (has(gpu, "gb300")) return "gb300";
  if (has(gpu, "gb200")) return "gb200";
  if (has(gpu, "b300")) return "b300-sxm-288gb";
  if (has(gpu, "b200")) return "b200-sxm-180gb";
  if (has(gpu, "h100")) return "h100-sxm5-80gb";
  return "";
}

void fill_cluster(Row& r, const std::string& key) {
  ClusterSpec& c = r.s.cluster;
  const int n = int(num(r.f["n_gpus"]).value_or(8));
  c.gpu = key;
  c.gpus_per_node = std::min(n, int(num(r.f["gpus_per_node"]).value_or(8)));
  c.nodes = std::max(1, n / c.gpus_per_node);
  const bool nvl72 = has(r.f["gpu"], "nvl72");
  c.nvlink_domain = nvl72 ? std::min(n, 72) : c.gpus_per_node;
  // One NIC per GPU on every system here: ConnectX-8 800 Gb/s on GB300 (CoreWeave: 16 x 200G RoCE ports per 4-GPU
  // tray, the same 800 Gb/s per GPU), ConnectX-7 400 Gb/s elsewhere (system JSONs and DGX specs).
  const std::string net = lower(r.f["inter_node_network"]);
  c.nic_count = c.gpus_per_node;
  c.nic_gbps = has(net, "800") || (has(r.f["gpu"], "gb300") && !has(net, "200 gb/s")) ? 800 : 400;
  if (has(net, "16x 200")) c.nic_gbps = 800;
  c.fabric = has(net, "roce") ? Fabric::RoCE : Fabric::InfiniBand;
  c.gpu_nic_path = "PXB";
  c.nvls = false;  // NVIDIA's launchers export NCCL_NVLS_ENABLE=0 (data/calibration/README.md)
  r.gen = generation_of(key);
}

void fill_training(Row& r, bool mlperf) {
  TrainingSpec& t = r.s.training;
  t.global_batch = int(num(r.f["global_batch_seqs"]).value_or(1));
  const std::string prec = lower(r.f["precision"]);
  t.precision = has(prec, "fp8") ? Precision::Fp8 : Precision::Bf16;
  if (has(prec, "mxfp8") || has(prec, "fp8-mx")) t.fp8_recipe = Fp8Recipe::Mxfp8;
  else if (t.precision == Precision::Fp8) t.fp8_recipe = Fp8Recipe::Tensorwise;  // FP8-CS: current scaling
  t.framework = r.fw = Framework::Nemo;
  r.stack = "NeMo / Megatron-Core";
  // NVIDIA's performance setups turn TP overlap on (as calib_data.cpp assumes for the dense rows without the fact);
  // paratune's NeMo plans price it only when told.
  t.tp_comm_overlap = true;
  // Megatron-Bridge's MoE benchmarks force-balance the routing (the summary's footnote); MLPerf trains for real.
  t.moe_force_balance = !mlperf;
  // The recipes' overlap_moe_expert_parallel_comm (MLPerf: "EP a2a overlap"): off where the recipe fact in the
  // dispatcher cell says so (Megatron-Bridge perf configs, data/calibration/README.md §7), else assumed on.
  t.moe_a2a_overlap = !has(lower(r.f["token_dispatcher"]), "a2a overlap off");
  if (!mlperf) megatron_bridge_loss(r);
}

void fill_layout(Row& r, bool mlperf) {
  Layout& l = r.l;
  l.tp = int(num(r.f["tp"]).value_or(1));
  l.pp = int(num(r.f["pp"]).value_or(1));
  l.cp = int(num(r.f["cp"]).value_or(1));
  l.ep = int(num(r.f["ep"]).value_or(1));
  l.etp = int(num(r.f["etp"]).value_or(1));
  l.dp = std::max(1, r.s.total_gpus() / (l.tp * l.pp * l.cp));
  l.virtual_stages = int(num(r.f["vpp"]).value_or(1));
  l.micro_batch = int(num(r.f["micro_batch"]).value_or(1));
  l.zero_stage = 1;  // distributed optimizer (every MoE recipe here; no FSDP row)
  l.sequence_parallel = l.tp > 1;
  const std::string rc = lower(r.f["recompute"]);
  r.rc_known = has(rc, "none");
  l.recompute = Recompute::None;
  // "selective: modules mla_up_proj, mlp (recipe fact: ...)": the recipe's own --recompute-modules.
  if (const auto at = rc.find("selective: modules "); at != std::string::npos) {
    const auto from = at + 19, to = rc.find(" (", from);
    try {
      l.recompute_modules = recompute_modules_from_string(rc.substr(from, to == std::string::npos ? to : to - from));
      l.recompute = Recompute::Selective;
      r.rc_known = true;
    } catch (const std::invalid_argument&) {
      // a module name this model does not know: left unstated, as before
    }
  }
  // Unstated recompute: the recipe configs of these MoE models (Megatron-Bridge perf recipes; data/calibration
  // README §7) use none or module-selective recompute, never full: predict_row tries none and selective.
  r.rc_moe_no_full = true;
  const std::string disp = lower(r.f["token_dispatcher"]);
  r.dispatcher_known = has(disp, "flex") || has(disp, "alltoall");
  l.dispatcher = has(disp, "flex") ? Dispatcher::Flex : Dispatcher::AllToAll;
  // Megatron-Bridge's DeepSeek-V3 recipes (and NVIDIA's MLPerf runs, whose notes give it) set
  // --pipeline-model-parallel-layout: the embedding and the LM head, loss and MTP take layers off the first and last
  // ranks. The tables do not state the split: predict_row tries the framework's own and the one balanced by cost.
  r.split_known = l.pp <= 1;
  (void)mlperf;
}

// "26.04.01" -> 260401: container releases in order.
long release_key(const std::string& id) {
  const auto a = id.find('-'), b = id.find('-', a + 1);
  if (a == std::string::npos || b == std::string::npos) return 0;
  long key = 0;
  int parts = 0;
  std::stringstream ss(id.substr(a + 1, b - a - 1));
  for (std::string p; std::getline(ss, p, '.') && parts < 3; ++parts) key = key * 100 + std::atol(p.c_str());
  for (; parts < 3; ++parts) key *= 100;
  return key;
}

// The Megatron-Bridge tables repeat a model on a system release after release while the software under it moves:
// the same layout runs up to 2.8x faster a release later (Qwen3-30B-A3B on 8 B200, 26.02 -> 26.04: 27.1 -> 9.8 s
// per step, micro-batch 1 -> 4), more than any layout term. The model describes the current stack, so each model
// and system is scored on its newest release in the file; the older releases are ranked, not scored or fitted.
void mark_older_releases(std::vector<Row>& rows, std::map<std::string, int>* skipped) {
  std::map<std::string, long> newest;
  auto key = [](const Row& r) { return r.s.model.name + "|" + r.f.at("gpu"); };
  for (const auto& r : rows)
    if (r.id.rfind("MB-", 0) == 0) newest[key(r)] = std::max(newest[key(r)], release_key(r.id));
  for (auto& r : rows)
    if (r.id.rfind("MB-", 0) == 0 && release_key(r.id) < newest[key(r)] && !r.rank_only) {
      r.rank_only = true;
      if (skipped) ++(*skipped)["older release of a model on a system (ranked, not scored)"];
    }
}

}  // namespace

std::string moe_source_of(const std::string& id) {
  if (id.rfind("MLPERF6", 0) == 0) return "M: MLPerf Training v6.0 (NVIDIA, CoreWeave; real routing)";
  return "G: Megatron-Bridge summary + archive (MoE rows; force-balanced routing)";
}

std::string moe_model_of(const Row& r) { return r.s.model.name; }

std::vector<Row> load_moe_rows(const std::string& path, std::string* error, std::map<std::string, int>* skipped) {
  const std::string text = read_file(path, error);
  if (text.empty()) return {};
  const auto table = parse_csv(text);
  if (table.empty()) return {};
  const auto& head = table[0];
  std::vector<Row> rows;
  auto skip = [&](const std::string& why) { if (skipped) ++(*skipped)[why]; };
  for (size_t i = 1; i < table.size(); ++i) {
    if (table[i].size() < head.size()) continue;
    Row r;
    for (size_t k = 0; k < head.size(); ++k) r.f[head[k]] = table[i][k];
    r.id = r.f["row_id"];
    r.source = moe_source_of(r.id);
    r.group = r.f["comparison_group"];
    r.use = r.f["recommended_use"];
    const bool mlperf = r.id.rfind("MLPERF6", 0) == 0;
    if (has(r.f["precision"], "nvfp4")) { skip("NVFP4 (4-bit) is not modelled"); continue; }
    const std::string preset = preset_of(r.f["model"]);
    if (preset.empty()) { skip("model without a preset"); continue; }
    const std::string gpu = gpu_of(r.f["gpu"]);
    if (gpu.empty()) { skip("GPU not in the catalog"); continue; }
    r.s.model = model_preset(preset);
    r.s.model.seq_len = int(num(r.f["seq_len"]).value_or(r.s.model.seq_len));
    if (has(r.f["model"], "without mtp")) r.s.model.mtp_layers = 0;
    if (has(r.f["capacity_factor"], "token dropping")) r.s.model.moe_capacity_factor = 1.0;
    fill_cluster(r, gpu);
    fill_training(r, mlperf);
    fill_layout(r, mlperf);
    const double B = r.s.training.global_batch, s = r.s.model.seq_len, N = r.s.total_gpus();
    if (auto t = num(r.f["meas_step_time_s"])) {
      r.meas_time_s = *t; r.meas_what = "step time (s)"; r.meas_value = *t;
    } else if (auto tg = num(r.f["meas_tokens_per_s_per_gpu"])) {
      r.meas_time_s = B * s / (*tg * N); r.meas_what = "tokens/s/GPU"; r.meas_value = *tg;
    }
    if (r.meas_time_s <= 0) { skip("nothing measured"); continue; }
    // The source's own caveat: "Performance regression in GPT-OSS 120B pre-training is a known issue" (26.06.01
    // footnote): ranked, not scored or fitted, like the dense sweep's pathological runs.
    if (has(r.f["notes"], "known issue")) r.rank_only = true;
    rows.push_back(std::move(r));
  }
  mark_older_releases(rows, skipped);
  return rows;
}

// --- the MoE fit ---------------------------------------------------------------------------------------------------
FitSpec moe_fit_spec() {
  FitSpec f;
  // What the step times constrain beyond the dense terms and the all-to-all bandwidths (those come from
  // alltoall_bw.csv; how much of them the 1F1B overlap hides follows from Megatron's layer schedule, not a fit):
  // the grouped expert GEMMs' efficiency and the busiest rank's excess under real routing (only the MLPerf rows
  // route for real).
  f.names = {"grouped_gemm_eff", "moe_route_imbalance", "grouped_gemm_hopper", "moe_layer_us"};
  f.prior = {0.85, 1.10, 0.8, 200};
  f.lo = {0.3, 1.0, 0.2, 10};
  f.hi = {1.0, 1.6, 1.2, 5000};
  return f;
}

ModelParams moe_apply_params(const ModelParams& base, const std::vector<double>& x) {
  ModelParams p = base;
  p.grouped_gemm_eff = x[0];
  p.moe_route_imbalance = x[1];
  p.grouped_gemm_hopper = x[2];
  p.moe_layer_us = x[3];
  return p;
}

std::vector<double> moe_extract(const ModelParams& p) {
  return {p.grouped_gemm_eff, p.moe_route_imbalance, p.grouped_gemm_hopper, p.moe_layer_us};
}

ModelParams moe_fit_where(const std::vector<Row>& rows, const ModelParams& start,
                          const std::function<bool(const Row&)>& use_row, double* final_loss) {
  // The dense fit's routine and loss, from the priors (not `start`'s values), 400 iterations a round.
  const FitSpec spec = moe_fit_spec();
  return huber_fit(rows, start, {spec, moe_apply_params, spec.prior, 400}, use_row, final_loss);
}

// --- all-to-all bandwidth points -----------------------------------------------------------------------------------
std::vector<A2aPoint> load_a2a_points(const std::string& path, std::string* error) {
  const std::string text = read_file(path, error);
  const auto table = parse_csv(text);
  std::vector<A2aPoint> out;
  if (table.empty()) return out;
  const auto& head = table[0];
  for (size_t i = 1; i < table.size(); ++i) {
    if (table[i].size() < head.size()) continue;
    std::map<std::string, std::string> f;
    for (size_t k = 0; k < head.size(); ++k) f[head[k]] = table[i][k];
    const std::string kind = f["bandwidth_kind"];
    // Training-mode (normal / HybridEP) kernels whose figure is a bottleneck or algorithm bandwidth of one link kind;
    // low-latency decode kernels, latency-only and secondary rows are left out.
    if (has(f["mode"], "decode") || has(kind, "latency") || has(kind, "nominal") || has(f["source"], "secondary"))
      continue;
    const auto bw = num(f["dispatch_bw_GBps"]);
    const auto ep = num(f["ep_ranks"]);
    if (!bw || !ep) continue;
    A2aPoint p;
    p.id = f["row_id"]; p.gpu = f["gpu"]; p.kind = kind; p.ep = int(*ep); p.measured_gbps = *bw;
    p.network = has(kind, "rdma") || (has(kind, "algorithm") && has(f["nic_or_fabric"], "ib") && *ep > 8 &&
                                      !has(f["nic_or_fabric"], "nvl72"));
    // Line rates: NVLink per GPU and direction (H800 400 GB/s total -> 200; H100 450; B200/GB200 900); one
    // 400 Gb/s NIC per GPU (50 GB/s). PCIe-mode H20 rows (NVLink disabled) are left out.
    if (has(f["gpu"], "nvlink disabled")) continue;
    if (p.network) p.link_gbps = 50;
    else if (has(f["gpu"], "h800")) p.link_gbps = 200;
    else if (has(f["gpu"], "h100")) p.link_gbps = 450;
    else if (has(f["gpu"], "b200") || has(f["gpu"], "gb200") || has(f["gpu"], "sm100")) p.link_gbps = 900;
    else continue;
    out.push_back(p);
  }
  return out;
}

double a2a_efficiency(const std::vector<A2aPoint>& pts, bool network) {
  std::vector<double> v;
  for (const auto& p : pts)
    if (p.network == network) v.push_back(p.measured_gbps / p.link_gbps);
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace paratune::calib
