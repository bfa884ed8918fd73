// Compute terms: GEMMs, the attention core, elementwise work, recompute, embedding and LM head (docs/model.md §2).
#include <algorithm>

#include "terms.h"

namespace paratune::advisor::terms {

double gemm_shape_factor(double M, double N, double K) { return 1.0 / (1.0 + 96.0 / N + 96.0 / K + 64.0 / M); }

double gemm_s(const Resolved& R, const ModelParams& p, double M, double N, double K, bool linear) {
  const double flops = 2 * M * N * K;
  const double compute = flops / ((linear ? R.peak_lin : R.peak) * gemm_shape_factor(M, N, K));
  const double bytes = 2 * (M * K + K * N + M * N);
  return std::max(compute, bytes / R.hbm) + p.gemm_t0_us * 1e-6;
}

namespace {

// (M tokens) x (K in) x (N out) after the TP split: QKV and fc1 split N, out-proj and fc2 split K.
double linear_forward_s(const Resolved& R, const ModelParams& p, double tok, int t) {
  const ModelDims& d = R.m;
  return gemm_s(R, p, tok, (d.h + 2 * d.h * d.g / d.a) / t, d.h) + gemm_s(R, p, tok, d.h, d.h / t) +
         gemm_s(R, p, tok, d.f * (d.gated ? 2 : 1) / t, d.h) + gemm_s(R, p, tok, d.h, d.f / t);
}

// Attention core: 4 b s^2 h / (t c) FLOPs; flash attention skips the masked half of causal scores and keeps no
// s x s matrix; its backward does 5 matmuls for the forward's 2 (x 2.5). Unfused attention computes all scores
// and streams softmax/mask/dropout through HBM (about 10 bytes per score forward, twice backward).
void attention_s(const Resolved& R, const ModelParams& p, const Layout& l, double* fwd, double* bwd) {
  const ModelDims& d = R.m;
  const int t = l.tp, c = l.cp, b = l.micro_batch;
  const double F_att = 4.0 * b * d.s * d.s * d.h / (double(t) * c);
  if (R.stack.flash) {
    *fwd = 0.5 * F_att / (R.peak * p.attn_eff_rel * R.stack.attn_gain) + 2 * p.gemm_t0_us * 1e-6;
    *bwd = 2.5 * *fwd;
  } else {
    const double scores = double(b) * (d.a / t) * d.s * d.s / c;
    *fwd = F_att / R.peak + 2 * p.gemm_t0_us * 1e-6 + 10 * scores / R.hbm;
    *bwd = 2 * *fwd;
  }
}

}  // namespace

LayerCompute layer_compute(const Resolved& R, const ModelParams& p, const Layout& l) {
  const ModelDims& d = R.m;
  const int t = l.tp;
  const double tok = double(l.micro_batch) * d.s / l.cp;
  const double hs = l.sequence_parallel && t > 1 ? double(t) : 1.0;
  LayerCompute c;
  c.gemm_f = linear_forward_s(R, p, tok, t);
  c.gemm_b = 2 * c.gemm_f;  // data-gradient and weight-gradient GEMM for each
  attention_s(R, p, l, &c.attn_f, &c.attn_b);
  // Elementwise work streamed through HBM (norms, residuals, rotary, activation function, dropout): about 32
  // bytes per token per hidden unit (replicated without SP) and 4-6 per FFN unit, backward twice (docs/model.md).
  const double elt_bytes =
      R.stack.elt_scale * (tok * d.h * (32 + (d.dropout ? 4 : 0)) / hs + tok * d.f * (d.gated ? 6 : 4) / t);
  c.elt_f = elt_bytes / R.hbm;
  c.elt_b = 2 * c.elt_f;
  return c;
}

double recompute_s(const Resolved& R, const ModelParams& p, const Layout& l, const LayerCompute& c) {
  using namespace recompute_module;
  if (l.recompute == Recompute::Full) return c.fwd();
  const unsigned mods = recompute_module_set(R.s, l, false);
  const ModelDims& d = R.m;
  const double tok = double(l.micro_batch) * d.s / l.cp, t = l.tp;
  const double hs = l.sequence_parallel && l.tp > 1 ? t : 1.0;
  double s = (mods & kCoreAttn) ? c.attn_f : 0;
  // The two norms read and write 2 bytes per token and hidden unit each (8 of layer_compute's 32).
  if (mods & kLayernorm) s += R.stack.elt_scale * tok * d.h * 8 / hs / R.hbm;
  if (mods & kMlp)
    s += gemm_s(R, p, tok, d.f * (d.gated ? 2 : 1) / t, d.h) + gemm_s(R, p, tok, d.h, d.f / t) +
         R.stack.elt_scale * tok * d.f * (d.gated ? 6 : 4) / t / R.hbm;
  return s;
}

double embedding_s(const Resolved& R, const Layout& l) {
  const double tok = double(l.micro_batch) * R.m.s / l.cp;
  const double hs = l.sequence_parallel && l.tp > 1 ? double(l.tp) : 1.0;
  return 3 * tok * R.m.h * 2 / R.hbm / hs;
}

double head_s(const Resolved& R, const ModelParams& p, const Layout& l) {
  const ModelDims& d = R.m;
  const int t = l.tp;
  const double tok = double(l.micro_batch) * d.s / l.cp;
  const double hs = l.sequence_parallel && t > 1 ? double(t) : 1.0;
  return 3 * gemm_s(R, p, tok, d.V / t, d.h, false) + 12 * tok * d.V / t / R.hbm + tok * d.h * 8 / hs / R.hbm;
}

}  // namespace paratune::advisor::terms
