// Compute of the generalised layer (docs/model.md §9): attention projections with their own head widths (or MLA),
// the attention core, and per layer kind the dense MLP or the MoE block — router, grouped expert GEMMs at the
// per-expert token count (the shape factor of small M), shared experts, permutation — plus the busiest EP rank's
// load imbalance. Averaged over the layer mix (DeepSeek-V3: 3 dense layers, 58 MoE layers).
#include <algorithm>
#include <cmath>

#include "terms.h"

namespace paratune::advisor::terms {

namespace {

double t0(const ModelParams& p) { return p.gemm_t0_us * 1e-6; }

}  // namespace

// The grouped kernel's rate by its per-expert shape, from the DeepGEMM tables (data/calibration/grouped_gemm.csv,
// the 38 H800 FP8 rows with M >= 256 tokens per expert): TFLOPS = E / (1 + 168/M + 950/N + 825/K) fits them to
// 6.7 % rms in log (the dense GEMMs' 1/(1 + 64/M + 96/N + 96/K) to 17.6 %). Per output tile a fixed cost (the
// pipeline's fill, the epilogue's store) stands beside a main loop that grows with K, and a short N or M wastes
// the tile's width. Scaled to equal gemm_shape_factor at an 8192-cube GEMM, the shape the dense efficiencies
// describe, so grouped_gemm_eff stays the expert kernel's rate relative to a large dense GEMM.
double grouped_shape_factor(double M, double N, double K) {
  constexpr double M0 = 168, N0 = 950, K0 = 825, ref = 8192;
  const double scale = gemm_shape_factor(ref, ref, ref) * (1 + M0 / ref + N0 / ref + K0 / ref);
  return scale / (1 + M0 / M + N0 / N + K0 / K);
}

namespace {

// E_loc experts of M rows each, one grouped kernel: every expert's weights are read, its rows run at the grouped
// kernel's shape factor (tile quantisation and per-tile fixed cost: a few hundred rows per expert, or a short
// reduction dimension, run well below peak).
double grouped_gemm_s(const Resolved& R, const ModelParams& p, double experts, double M, double N, double K) {
  if (experts <= 0 || M <= 0) return 0;
  const double eff = p.grouped_gemm_eff * (R.gpu.arch == GpuArch::Hopper ? p.grouped_gemm_hopper : 1.0);
  const double compute = 2 * M * N * K * experts / (R.peak_lin * grouped_shape_factor(M, N, K) * eff);
  const double bytes = 2 * experts * (M * K + K * N + M * N);
  return std::max(compute, bytes / R.hbm) + t0(p);
}

// Q/K/V and output projections after the TP split. MLA's down-projections (to the q and kv latents) are replicated
// on every TP rank (Megatron-Core MLA: duplicated linear layers); the up-projections and the output are split.
double attention_proj_s(const Resolved& R, const ModelParams& p, const Layout& l, double tok) {
  const MoeDims& d = R.moe;
  const double t = l.tp, h = R.m.h, a = R.m.a, g = R.m.g;
  if (d.kv_lora > 0) {
    const double q = d.q_lora > 0 ? gemm_s(R, p, tok, d.q_lora, h) + gemm_s(R, p, tok, a * d.dqk / t, d.q_lora)
                                  : gemm_s(R, p, tok, a * d.dqk / t, h);
    const double kv = gemm_s(R, p, tok, d.kv_lora + d.rope, h) +
                      gemm_s(R, p, tok, a * (d.dqk - d.rope + d.dv) / t, d.kv_lora);
    return q + kv + gemm_s(R, p, tok, h, a * d.dv / t);
  }
  return gemm_s(R, p, tok, (a + 2 * g) * d.dqk / t, h) + gemm_s(R, p, tok, h, a * d.dv / t);
}

// Attention core as compute.cpp's, with the query/key and value widths of the heads: 2 b s^2 a (dqk + dv) / (t c)
// FLOPs (= 4 b s^2 h when dqk = dv = h/a).
void attention_core_s(const Resolved& R, const ModelParams& p, const Layout& l, double* fwd, double* bwd) {
  const double t = l.tp, c = l.cp, b = l.micro_batch, s = R.m.s, a = R.m.a;
  const double F_att = 2.0 * b * s * s * a * (R.moe.dqk + R.moe.dv) / (t * c);
  // Fused attention's throughput grows with the head width (FlashAttention-3, Shah et al. 2024, FP16 forward on
  // H100: ~497 TFLOP/s at head dim 64, ~648 at 128, ~756 at 256): (d/128)^0.4 about the fitted head-128 rate.
  const double width = std::clamp(std::pow((R.moe.dqk + R.moe.dv) / 2 / 128, 0.4), 0.5, 1.3);
  if (R.stack.flash) {
    *fwd = 0.5 * F_att / (R.peak * p.attn_eff_rel * R.stack.attn_gain * width) + 2 * t0(p);
    *bwd = 2.5 * *fwd;
  } else {
    const double scores = b * (a / t) * s * s / c;
    *fwd = F_att / R.peak + 2 * t0(p) + 10 * scores / R.hbm;
    *bwd = 2 * *fwd;
  }
}

double dense_mlp_s(const Resolved& R, const ModelParams& p, double tok, double ffn, double t) {
  if (ffn <= 0) return 0;
  return gemm_s(R, p, tok, ffn * (R.m.gated ? 2 : 1) / t, R.m.h) + gemm_s(R, p, tok, R.m.h, ffn / t);
}

// Routed experts on one GPU: E/ep experts, rows per expert = etp x tokens x top-k / (E/ep), times `load`.
double experts_s(const Resolved& R, const ModelParams& p, const Layout& l, double load) {
  const MoeDims& d = R.moe;
  const double local = d.E / l.ep;
  const double rows = l.etp * moe_tokens_in(R, l) * d.k * load / local;
  const double n1 = d.fe * (R.m.gated ? 2 : 1) / l.etp;
  return grouped_gemm_s(R, p, local, rows, n1, R.m.h) + grouped_gemm_s(R, p, local, rows, R.m.h, d.fe / l.etp);
}

}  // namespace

MoePhases moe_layer_phases(const Resolved& R, const ModelParams& p, const Layout& l) {
  const MoeDims& d = R.moe;
  const double t = l.tp, h = R.m.h;
  const double tok = double(l.micro_batch) * R.m.s / l.cp;
  const double hs = l.sequence_parallel && l.tp > 1 ? t : 1.0;
  const double t_in = moe_tokens_in(R, l);
  double attn_f = 0, attn_b = 0;
  attention_core_s(R, p, l, &attn_f, &attn_b);
  const double proj = attention_proj_s(R, p, l, tok) + gemm_s(R, p, t_in, d.E, h, false);  // + the router
  // The same bytes moe_layer_compute streams: norms, residuals, rotary and the router's scores before the dispatch;
  // permutation, activation and the shared experts' activation in the MLP.
  const double pre_elt = R.stack.elt_scale * (tok * h * (32 + (R.m.dropout ? 4 : 0)) / hs + 16 * t_in * d.E) / R.hbm;
  const double rows = l.etp * t_in * d.k * expert_rows(d), act = R.m.gated ? 6 : 4;
  const double mlp_elt = R.stack.elt_scale * (rows * (d.fe / l.etp * act + 8 * h) + tok * d.fs * act / t) / R.hbm;
  const double mlp_gemm = experts_s(R, p, l, expert_rows(d)) + dense_mlp_s(R, p, tok, d.fs, t);
  MoePhases ph;
  ph.pre_f = proj + attn_f + pre_elt;
  ph.pre_b = 2 * proj + attn_b + 2 * pre_elt;
  ph.mlp_f = mlp_gemm + mlp_elt;
  ph.mlp_dgrad = mlp_gemm + 2 * mlp_elt;  // backward GEMMs: one for the inputs' gradient, one for the weights'
  ph.mlp_wgrad = mlp_gemm;
  return ph;
}

double moe_tokens_in(const Resolved& R, const Layout& l) {
  const double tok = double(l.micro_batch) * R.m.s / l.cp;
  return l.sequence_parallel && l.tp > 1 ? tok / l.tp : tok;
}

// The expert rows per fair share: padded to capacity (Megatron-Core's drop_and_pad, token_dispatcher.py: capacity =
// ceil(tokens k / E * cf) rows for every expert, real or padding), cf; else 1 (the busiest rank's excess is
// moe_imbalance_factor's).
double expert_rows(const MoeDims& d) { return d.pad ? d.cf : 1.0; }

double moe_imbalance_factor(const Resolved& R, const ModelParams& p, const Layout& l) {
  if (!R.moe.moe || l.ep <= 1) return 1.0;  // one rank holds every expert: no rank waits for another
  if (R.moe.pad) return 1.0;                // every expert runs its capacity: all ranks alike (expert_rows())
  const double route = R.moe.force_balance ? 1.0 : p.moe_route_imbalance;
  // Rows per rank are a sum of many independent routings: the maximum of ep of them lies about sqrt(2 ln ep)
  // standard deviations (sqrt(rows)) above the mean.
  const double rows = std::max(1.0, l.etp * moe_tokens_in(R, l) * R.moe.k);
  double f = route * (1 + std::sqrt(2 * std::log(double(l.ep)) / rows));
  if (R.moe.cf > 0) f = std::min(f, R.moe.cf);  // token dropping caps the busiest expert at its capacity
  return f;
}

LayerCompute moe_layer_compute(const Resolved& R, const ModelParams& p, const Layout& l, double* imbalance) {
  const MoeDims& d = R.moe;
  const double t = l.tp, h = R.m.h;
  const double tok = double(l.micro_batch) * R.m.s / l.cp;
  const double hs = l.sequence_parallel && l.tp > 1 ? t : 1.0;
  const double t_in = moe_tokens_in(R, l);
  LayerCompute c;
  const double dense = dense_mlp_s(R, p, tok, R.m.f, t);
  double moe = 0, extra = 0;
  if (d.moe) {
    const double routed = experts_s(R, p, l, expert_rows(d));
    moe = gemm_s(R, p, t_in, d.E, h, false) + routed + dense_mlp_s(R, p, tok, d.fs, t);
    const double f = moe_imbalance_factor(R, p, l);
    extra = f > 1 ? experts_s(R, p, l, f) - routed : 0;
  }
  c.gemm_f = attention_proj_s(R, p, l, tok) + (1 - d.mix) * dense + d.mix * moe;
  c.gemm_b = 2 * c.gemm_f;
  attention_core_s(R, p, l, &c.attn_f, &c.attn_b);
  // Elementwise traffic as compute.cpp's (norms, residuals, rotary: 32 bytes per token and hidden unit; the
  // activation function: 4-6 per FFN unit), and for MoE layers the permutation and un-permutation of the expert
  // rows (read + write, twice: 8 bytes per row and hidden unit) and the router's scores (fp32 logits, softmax/
  // sigmoid, top-k: ~16 bytes per token and expert).
  const double act = R.m.gated ? 6 : 4;
  const double rows = l.etp * t_in * d.k * expert_rows(d);
  const double moe_elt = d.moe ? rows * (d.fe / l.etp * act + 8 * h) + 16 * t_in * d.E + tok * d.fs * act / t : 0;
  const double elt = tok * h * (32 + (R.m.dropout ? 4 : 0)) / hs + (1 - d.mix) * tok * R.m.f * act / t + d.mix * moe_elt;
  c.elt_f = R.stack.elt_scale * elt / R.hbm;
  c.elt_b = 2 * c.elt_f;
  if (imbalance) *imbalance = 3 * d.mix * extra;  // forward + two backward GEMMs of the busiest rank's extra rows
  return c;
}

double moe_recompute_s(const Resolved& R, const ModelParams& p, const Layout& l, const LayerCompute& c) {
  using namespace recompute_module;
  if (l.recompute == Recompute::Full) return c.fwd();
  const unsigned mods = recompute_module_set(R.s, l, true);
  if (!mods) return 0;
  const MoeDims& d = R.moe;
  const double tok = double(l.micro_batch) * R.m.s / l.cp, t = l.tp, a = R.m.a;
  double s = (mods & kCoreAttn) ? c.attn_f : 0;
  // The norms and the activation functions: elementwise, together about a third of the layer's forward
  // elementwise work (what they stream), half each.
  if (mods & kLayernorm) s += c.elt_f / 6;
  if (mods & kMoeAct) s += c.elt_f / 6;
  // MLA's up-projections from the kept latents.
  if ((mods & kMlaUpProj) && d.kv_lora > 0) {
    s += gemm_s(R, p, tok, a * (d.dqk - d.rope + d.dv) / t, d.kv_lora);
    if (d.q_lora > 0) s += gemm_s(R, p, tok, a * d.dqk / t, d.q_lora);
  }
  // Whole sub-modules run their forward again: the dense layers' MLP, the MoE block (router and experts; its
  // dispatch and combine are charged in moe_comm_layer), the shared experts.
  if (mods & kMlp) s += (1 - d.mix) * dense_mlp_s(R, p, tok, R.m.f, t);
  if ((mods & kMoe) && d.moe)
    s += d.mix * (gemm_s(R, p, moe_tokens_in(R, l), d.E, R.m.h, false) + experts_s(R, p, l, expert_rows(d)) +
                  dense_mlp_s(R, p, tok, d.fs, t));
  else if ((mods & kSharedExperts) && d.moe)
    s += d.mix * dense_mlp_s(R, p, tok, d.fs, t);
  return s;
}

double moe_tp_comm_share(const Resolved& R, const Layout& l) {
  if (!R.moe.moe) return 1.0;
  // With expert TP 1 the routed experts need no TP collective (the dispatcher moves tokens); shared experts are a
  // TP-split MLP and keep theirs, as does expert TP > 1 (all-gather / reduce-scatter in the expert-TP group).
  const double moe_layer = (R.moe.fs > 0 || l.etp > 1) ? 1.0 : 0.5;
  return (1 - R.moe.mix) + R.moe.mix * moe_layer;
}

double mtp_s(const Resolved& R, const ModelParams& p, const Layout& l, double layer_s) {
  if (R.moe.mtp <= 0) return 0;
  const double tok = double(l.micro_batch) * R.m.s / l.cp;
  // Each module: the embedding of the next token joined to the hidden state (a 2h x h projection), one transformer
  // layer, the shared LM head and its loss again (DeepSeek-V3 §2.2).
  return R.moe.mtp * (layer_s + head_s(R, p, l) + 3 * gemm_s(R, p, tok, R.m.h / l.tp, 2 * R.m.h));
}

}  // namespace paratune::advisor::terms
