// Counts the model's terms rest on: parameters, model FLOPs per token, activation bytes per layer (docs/model.md).
// The terms themselves are in advisor/src/model/.
#include "paratune/advisor/model.h"
#include "terms.h"

#include <algorithm>
#include <cmath>

namespace paratune::advisor {


// ---------------------------------------------------------------------------------------------------------------
// Counts.
double params_per_layer(const ModelSpec& m) {
  if (uses_moe_layer(m))  // MoE / MLA / head_dim: the generalised layer's average (moe_dims.cpp)
    return (moe_total_params(m) - double(m.vocab) * m.hidden * (m.tied_embeddings ? 1 : 2) - m.hidden) / m.layers;
  const double h = m.hidden, a = m.heads, g = m.kv_heads > 0 ? m.kv_heads : m.heads;
  const double f = m.ffn_hidden > 0 ? m.ffn_hidden : 4.0 * m.hidden;
  // QKV h*(h + 2h g/a), output h*h, MLP (2 or 3) h f, two norms 2h.
  return h * (h + 2 * h * g / a) + h * h + (m.gated_mlp ? 3 : 2) * h * f + 2 * h;
}

double total_params(const ModelSpec& m) {
  if (uses_moe_layer(m)) return moe_total_params(m);
  const double emb = double(m.vocab) * m.hidden;
  return m.layers * params_per_layer(m) + emb * (m.tied_embeddings ? 1 : 2) + m.hidden;
}

double model_flops_per_token(const ModelSpec& m) {
  if (uses_moe_layer(m)) return moe_flops_per_token(m);
  // 6 x (transformer params + the logits GEMM's V*h) + 12*l*h*s for attention scores (no causal discount).
  const double n = m.layers * params_per_layer(m) + double(m.vocab) * m.hidden;
  return 6 * n + 12.0 * m.layers * m.hidden * double(m.seq_len);
}

double activation_bytes_per_layer(const ModelSpec& m, int b, int tp, int cp, bool sp, Recompute r, bool flash,
                                  bool fp8, unsigned modules) {
  using namespace recompute_module;
  const unsigned mods = r != Recompute::Selective ? 0 : modules != 0 ? modules : kCoreAttn;
  const double h = m.hidden, a = m.heads, g = m.kv_heads > 0 ? m.kv_heads : m.heads;
  const double f = m.ffn_hidden > 0 ? m.ffn_hidden : 4.0 * m.hidden;
  const double s = m.seq_len, t = tp, tok = double(b) * s / cp, drop = m.dropout ? 1 : 0;
  if (r == Recompute::Full) return 2 * tok * h / (sp ? t : 1);  // the layer input only
  // Replicated across TP ranks without SP: two norm inputs (4), QKV input (2), MLP input (2), two dropout masks.
  const double lin_in = fp8 ? 1 : 2;  // QKV input and MLP input as saved for the backward GEMMs
  // Recomputing the norms ("layernorm") rebuilds the QKV and MLP inputs (the norm outputs) in the backward pass.
  const double replicated = 4 + ((mods & kLayernorm) ? 0 : 2 * lin_in) + 2 * drop;
  // Split by t: Q (2), K and V (4 g/a), attention output = out-proj input (2), MLP: fc1 output(s) and activation
  // output ((gated ? 6 : 4) f/h), which recomputing the MLP ("mlp": a checkpoint of its input) does not keep.
  const double mlp = (mods & kMlp) ? 0 : ((m.gated_mlp ? 4 : 2) + lin_in) * f / h;
  const double split = 2 + 4 * g / a + 2 + mlp;
  double bytes = tok * h * (replicated / (sp ? t : 1) + split / t);
  // Softmax input/output and dropout mask of the s x s scores (5 a s bytes per token), unless flash attention
  // or selective recompute of the attention core (Korthikanti et al. §4.2).
  if (!flash && !(mods & kCoreAttn)) bytes += 5 * (a / t) * s * tok;
  return bytes;
}

}  // namespace paratune::advisor
