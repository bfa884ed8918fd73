#include "calib_data.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

#include "paratune/advisor/advisor.h"

namespace paratune::calib {

namespace {

std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string cell;
  bool q = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (q) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') { cell += '"'; ++i; }
      else if (c == '"') q = false;
      else cell += c;
    } else if (c == '"') {
      q = true;
    } else if (c == ',') {
      row.push_back(cell); cell.clear();
    } else if (c == '\n') {
      row.push_back(cell); cell.clear();
      rows.push_back(row); row.clear();
    } else if (c != '\r') {
      cell += c;
    }
  }
  if (!cell.empty() || !row.empty()) { row.push_back(cell); rows.push_back(row); }
  return rows;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}
bool has(const std::string& s, const char* w) { return lower(s).find(w) != std::string::npos; }
std::optional<double> num(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str()) return std::nullopt;
  return v;
}

}  // namespace

std::string source_of(const std::string& id) {
  if (id.rfind("NAR21", 0) == 0) return "A: Narayanan 2021 (Megatron-LM, A100)";
  if (id.rfind("KOR22", 0) == 0) return "B: Korthikanti 2022 (Megatron-LM, A100)";
  if (id.rfind("MPT", 0) == 0) return "D: MosaicML llm-foundry (FSDP, A100)";
  return "F: NVIDIA NeMo / Megatron-Bridge (FP8, H100)";
}

std::vector<Row> load_rows(const std::string& path, std::string* error) {
  std::ifstream in(path);
  if (!in) { if (error) *error = "cannot open " + path; return {}; }
  std::stringstream ss;
  ss << in.rdbuf();
  const auto table = parse_csv(ss.str());
  if (table.empty()) { if (error) *error = "empty csv"; return {}; }
  const auto& head = table[0];
  std::vector<Row> rows;
  for (size_t i = 1; i < table.size(); ++i) {
    if (table[i].size() < head.size()) continue;
    Row r;
    for (size_t k = 0; k < head.size(); ++k) r.f[head[k]] = table[i][k];
    r.id = r.f["row_id"];
    r.source = source_of(r.id);
    r.group = r.f["comparison_group"];
    r.use = r.f["recommended_use"];
    const std::string model = r.f["model"];
    ModelSpec& m = r.s.model;
    m.name = model;
    m.layers = int(num(r.f["n_layers"]).value_or(1));
    m.hidden = int(num(r.f["hidden_size"]).value_or(0));
    m.heads = int(num(r.f["n_heads"]).value_or(1));
    m.kv_heads = int(num(r.f["n_kv_heads"]).value_or(m.heads));
    m.ffn_hidden = int(num(r.f["ffn_hidden_size"]).value_or(4 * m.hidden));
    m.vocab = int(num(r.f["vocab_size"]).value_or(51200));
    m.seq_len = int(num(r.f["seq_len"]).value_or(2048));
    m.gated_mlp = has(model, "llama");
    m.tied_embeddings = r.id.rfind("NAR21", 0) == 0 || r.id.rfind("KOR22", 0) == 0 || r.id.rfind("MPT", 0) == 0 ||
                        has(model, "gpt3");
    const bool legacy = r.id.rfind("NAR21", 0) == 0 || r.id.rfind("KOR22", 0) == 0;
    m.dropout = legacy;
    r.per_layer = r.id.rfind("KOR22-T4", 0) == 0;

    // Hardware.
    const int n = int(num(r.f["n_gpus"]).value_or(8));
    const int gpn = std::min(n, int(num(r.f["gpus_per_node"]).value_or(8)));
    const double mem = num(r.f["gpu_mem_GB"]).value_or(80);
    const std::string gpu = lower(r.f["gpu"]);
    ClusterSpec& c = r.s.cluster;
    if (has(gpu, "h100")) c.gpu = "h100-sxm5-80gb";
    else c.gpu = mem < 60 ? "a100-sxm4-40gb" : "a100-sxm4-80gb";
    c.gpus_per_node = gpn;
    c.nodes = std::max(1, n / gpn);
    c.nvlink_domain = gpn;
    c.nic_count = 8;
    const std::string net = lower(r.f["inter_node_network"]);
    if (has(net, "roce")) { c.fabric = Fabric::RoCE; c.nic_gbps = 200; }
    else if (has(net, "400")) { c.fabric = Fabric::InfiniBand; c.nic_gbps = 400; }
    else { c.fabric = Fabric::InfiniBand; c.nic_gbps = 200; }
    c.gpu_nic_path = "PXB";
    c.nvls = has(gpu, "h100");

    // Training.
    TrainingSpec& t = r.s.training;
    t.global_batch = int(num(r.f["global_batch_seqs"]).value_or(1));
    const std::string prec = lower(r.f["precision"]);
    t.precision = has(prec, "fp8") || (has(prec, "not stated") && has(prec, "fp8")) ? Precision::Fp8
                  : has(prec, "fp16") ? Precision::Fp16
                                      : Precision::Bf16;
    if (r.id.rfind("MBRIDGE", 0) == 0) t.precision = Precision::Fp8;  // "likely FP8" (the newer tables say FP8)
    const std::string fw = lower(r.f["framework"]);
    r.fw = has(fw, "composer") ? Framework::Fsdp : has(fw, "nemo") ? Framework::Nemo : Framework::Megatron;
    t.framework = r.fw;
    t.flash_attention = !legacy;
    t.overlap_dp_comm = !legacy;

    // Layout.
    Layout& l = r.l;
    l.tp = int(num(r.f["tp"]).value_or(1));
    l.pp = int(num(r.f["pp"]).value_or(1));
    l.dp = int(num(r.f["dp"]).value_or(1));
    l.cp = int(num(r.f["cp"]).value_or(1));
    const auto vpp = num(r.f["vpp"]);
    l.virtual_stages = vpp ? int(*vpp) : 1;
    r.vpp_known = vpp.has_value() || l.pp == 1 || has(r.f["vpp"], "n/a");
    if (has(r.f["vpp"], "interleaved") || has(r.f["vpp"], "not given")) r.vpp_known = l.pp == 1;
    const auto mb = num(r.f["micro_batch"]);
    l.micro_batch = mb ? int(*mb) : 1;
    r.mb_known = mb.has_value();
    const std::string z = lower(r.f["zero_or_fsdp"]);
    l.zero_stage = has(z, "full_shard") || has(z, "megatron-fsdp") ? 3 : has(z, "distributed optimizer") ? 1 : 0;
    const std::string rc = lower(r.f["activation_recompute"]);
    r.rc_known = !has(rc, "not given");
    if (has(rc, "full") || has(rc, "with recompute")) l.recompute = Recompute::Full;
    else if (has(rc, "selective")) l.recompute = Recompute::Selective;
    else l.recompute = Recompute::None;
    if (r.per_layer) l.recompute = has(rc, "with recompute") ? Recompute::Full
                                   : has(rc, "selective") ? Recompute::Selective : Recompute::None;
    if (legacy) l.sequence_parallel = has(rc, "sequence");
    else l.sequence_parallel = l.tp > 1;
    if (r.per_layer) {  // one layer on 8 GPUs; the per-layer time is what was measured
      m.layers = 1; m.vocab = 51200; l.dp = 1; l.pp = 1;
    }
    r.s.parallel = {};

    // Measured quantity -> iteration time, with the row's own FLOP formula (calibration README §3).
    const double B = t.global_batch, s = m.seq_len, L = m.layers, h = m.hidden, V = m.vocab, a = m.heads,
                 g = m.kv_heads, f = m.ffn_hidden;
    const std::string fc = r.f["flop_counting"];
    double F = 0;
    if (fc.rfind("NARAYANAN_EQ3", 0) == 0) F = 96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h));
    else if (fc.rfind("MEGATRON_MFU_72", 0) == 0) F = 72 * B * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h));
    else if (fc.rfind("MOSAIC_MFU", 0) == 0) F = B * (6 * total_params(m) * s + 12 * L * h * s * s);
    else if (fc.rfind("NEMO_MODEL_TFLOPS", 0) == 0) {
      const double causal = r.id.rfind("MBRIDGE", 0) == 0 ? 0.5 : 1.0;  // discount from NeMo 25.09 on
      if (has(model, "gpt3")) F = (24 * B * s * h * h + 4 * B * s * s * h * causal) * 3 * L + 6 * B * s * h * V;
      else F = B * s * L * h * h * (12 + 12 * g / a + (has(model, "nemotron") ? 12 : 18) * f / h +
                                     12 * (s / h) * causal + 6 * V / (L * h));
    }
    r.flops_row = F;
    const double N = n;
    if (auto it = num(r.f["meas_iter_time_s"])) {
      r.meas_time_s = *it; r.meas_what = "iteration time (s)"; r.meas_value = *it;
    } else if (auto tt = num(r.f["meas_tokens_per_s_total"])) {
      r.meas_time_s = B * s / *tt; r.meas_what = "tokens/s (total)"; r.meas_value = *tt;
    } else if (auto tg = num(r.f["meas_tokens_per_s_per_gpu"])) {
      r.meas_time_s = B * s / (*tg * N); r.meas_what = "tokens/s/GPU"; r.meas_value = *tg;
    } else if (auto tf = num(r.f["meas_tflops_per_gpu"]); tf && F > 0) {
      r.meas_time_s = F / (*tf * 1e12 * N); r.meas_what = "TFLOP/s/GPU"; r.meas_value = *tf;
    } else if (auto mfu = num(r.f["meas_mfu_pct"]); mfu && F > 0) {
      const double peak = has(gpu, "h100") ? 989.4 : 312;
      r.meas_time_s = F / (*mfu / 100 * peak * 1e12 * N); r.meas_what = "MFU %"; r.meas_value = *mfu;
    } else if (r.per_layer) {
      const std::string o = r.f["meas_other"];
      const auto p = o.find("combined ");
      if (p != std::string::npos) {
        r.meas_time_s = std::strtod(o.c_str() + p + 9, nullptr) * 1e-3;
        r.meas_what = "layer fwd+bwd (ms)";
        r.meas_value = r.meas_time_s * 1e3;
      }
    }
    if (r.meas_time_s <= 0 || has(r.use, "context-only")) continue;
    rows.push_back(std::move(r));
  }
  return rows;
}

RowPrediction predict_row(const Row& r, const ModelParams& p) {
  Evaluator ev(r.s, r.fw, p);
  RowPrediction best;
  best.time_s = 1e30;
  bool best_fits = false;
  const int per_replica = std::max(1, r.s.training.global_batch / r.l.dp);
  std::vector<int> mbs{r.l.micro_batch};
  if (!r.mb_known) {
    mbs.clear();
    for (int b = 1; b <= std::min(per_replica, 16); ++b)
      if (per_replica % b == 0) mbs.push_back(b);
  }
  std::vector<int> vs{r.l.virtual_stages};
  if (!r.vpp_known && r.l.pp > 1) {
    vs.clear();
    const int per = r.s.model.layers / r.l.pp;
    for (int v = 1; v <= per; ++v)
      if (per % v == 0) vs.push_back(v);
  }
  std::vector<Recompute> rcs{r.l.recompute};
  if (!r.rc_known) rcs = {Recompute::None, Recompute::Selective, Recompute::Full};
  for (int b : mbs)
    for (int v : vs)
      for (Recompute rc : rcs) {
        Layout l = r.l;
        l.micro_batch = b; l.virtual_stages = v; l.recompute = rc;
        const auto res = ev.evaluate(l);
        const double t = r.per_layer ? res.layer_fwd_s + res.layer_bwd_s : res.step_s;
        const bool better = (res.fits && !best_fits) || (res.fits == best_fits && t < best.time_s);
        if (better) {
          best.time_s = t; best.layout = l; best.fits = res.fits; best.mem_gib = res.mem_gib;
          best_fits = res.fits;
        }
      }
  return best;
}

// --- the fit -------------------------------------------------------------------------------------------------------
FitSpec fit_spec() {
  FitSpec f;
  // fp8_linear_gain is NOT fitted: every H100 row is FP8, so only the product (Hopper efficiency x FP8 gain) is
  // identifiable; the gain stays at its physical prior (cuBLASLt FP8 vs BF16 GEMM ~1.8x, minus casts and amax).
  f.names = {"gemm_eff_ampere", "hopper_vs_ampere", "attn_eff_rel", "elt_scale", "overlap_interference",
             "mb_overhead_us", "tp_overlap"};
  f.prior = {0.80, 0.80, 0.65, 1.0, 0.15, 300, 0.5};
  f.lo = {0.40, 0.50, 0.25, 0.3, 0.02, 20, 0.05};
  f.hi = {0.98, 1.10, 1.20, 4.0, 0.80, 3000, 0.95};
  return f;
}

ModelParams apply_params(const ModelParams& base, const std::vector<double>& x) {
  ModelParams p = base;
  const double a = x[0], hr = x[1];
  p.gemm_eff[int(GpuArch::Ampere)] = a;
  p.gemm_eff[int(GpuArch::Volta)] = a * 0.90;       // prior ratios (not fitted: no V100/Turing/Ada rows)
  p.gemm_eff[int(GpuArch::Pascal)] = a * 0.80;
  p.gemm_eff[int(GpuArch::Turing)] = a * 0.80;
  p.gemm_eff[int(GpuArch::Ada)] = a * 0.85;
  p.gemm_eff[int(GpuArch::Hopper)] = a * hr;
  p.gemm_eff[int(GpuArch::Blackwell)] = a * hr;
  p.gemm_eff[int(GpuArch::Cdna2)] = a * 0.60;
  p.gemm_eff[int(GpuArch::Cdna3)] = a * hr * 0.75;
  p.attn_eff_rel = x[2];
  p.elt_scale = x[3];
  p.overlap_interference = x[4];
  p.mb_overhead_us = x[5];
  p.tp_overlap = x[6];
  return p;
}

std::vector<double> extract(const ModelParams& p) {
  const double a = p.gemm_eff[int(GpuArch::Ampere)];
  return {a, p.gemm_eff[int(GpuArch::Hopper)] / a, p.attn_eff_rel, p.elt_scale, p.overlap_interference,
          p.mb_overhead_us, p.tp_overlap};
}

ModelParams fit(const std::vector<Row>& rows, const ModelParams& start, const std::vector<std::string>& exclude,
                double* final_loss) {
  const FitSpec spec = fit_spec();
  const size_t n = spec.names.size();
  std::map<std::string, int> per_source;
  std::vector<const Row*> use;
  for (const auto& r : rows) {
    if (std::find(exclude.begin(), exclude.end(), r.source) != exclude.end()) continue;
    use.push_back(&r);
    per_source[r.source]++;
  }
  auto to_x = [&](const std::vector<double>& u) {
    std::vector<double> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = std::clamp(std::exp(u[i]), spec.lo[i], spec.hi[i]);
    return x;
  };
  auto loss = [&](const std::vector<double>& u) {
    const auto x = to_x(u);
    const ModelParams p = apply_params(start, x);
    double sum = 0, wsum = 0;
    for (const Row* r : use) {
      const double w = (has(r->use, "care") ? 0.5 : 1.0) / per_source[r->source];
      const double e = std::log(predict_row(*r, p).time_s / r->meas_time_s);
      sum += w * e * e;
      wsum += w;
    }
    double reg = 0;
    for (size_t i = 0; i < n; ++i) {
      const double d = std::log(x[i] / spec.prior[i]);
      reg += d * d;
    }
    return sum / wsum + 0.002 * reg;
  };
  // Nelder-Mead in log space, deterministic start simplex.
  std::vector<std::vector<double>> simplex(n + 1, std::vector<double>(n));
  const auto x0 = extract(start);
  for (size_t i = 0; i < n; ++i) simplex[0][i] = std::log(x0[i]);
  for (size_t k = 1; k <= n; ++k) {
    simplex[k] = simplex[0];
    simplex[k][k - 1] += 0.15;
  }
  std::vector<double> fv(n + 1);
  for (size_t k = 0; k <= n; ++k) fv[k] = loss(simplex[k]);
  for (int it = 0; it < 1500; ++it) {
    std::vector<size_t> idx(n + 1);
    for (size_t k = 0; k <= n; ++k) idx[k] = k;
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return fv[a] < fv[b]; });
    auto S = simplex; auto F = fv;
    for (size_t k = 0; k <= n; ++k) { simplex[k] = S[idx[k]]; fv[k] = F[idx[k]]; }
    if (fv[n] - fv[0] < 1e-9) break;
    std::vector<double> cen(n, 0);
    for (size_t k = 0; k < n; ++k)
      for (size_t i = 0; i < n; ++i) cen[i] += simplex[k][i] / n;
    auto lerp = [&](double t) {
      std::vector<double> y(n);
      for (size_t i = 0; i < n; ++i) y[i] = cen[i] + t * (simplex[n][i] - cen[i]);
      return y;
    };
    auto xr = lerp(-1); const double fr = loss(xr);
    if (fr < fv[0]) {
      auto xe = lerp(-2); const double fe = loss(xe);
      if (fe < fr) { simplex[n] = xe; fv[n] = fe; } else { simplex[n] = xr; fv[n] = fr; }
    } else if (fr < fv[n - 1]) {
      simplex[n] = xr; fv[n] = fr;
    } else {
      auto xc = lerp(fr < fv[n] ? -0.5 : 0.5); const double fc = loss(xc);
      if (fc < std::min(fr, fv[n])) { simplex[n] = xc; fv[n] = fc; }
      else {
        for (size_t k = 1; k <= n; ++k) {
          for (size_t i = 0; i < n; ++i) simplex[k][i] = simplex[0][i] + 0.5 * (simplex[k][i] - simplex[0][i]);
          fv[k] = loss(simplex[k]);
        }
      }
    }
  }
  size_t bi = size_t(std::min_element(fv.begin(), fv.end()) - fv.begin());
  if (final_loss) *final_loss = fv[bi];
  return apply_params(start, to_x(simplex[bi]));
}

}  // namespace paratune::calib
