// The generalised layer's dimensions and parameter counts: mixture of experts, head dimensions that are not
// hidden/heads, multi-head latent attention (MLA) and multi-token prediction (docs/model.md §9). Dense models with
// none of these never come here (MoeDims::on = false), so their numbers are the dense model's.
#include <algorithm>

#include "paratune/advisor/model.h"
#include "paratune/advisor/resolved.h"
#include "terms.h"

namespace paratune::advisor {

namespace {

// Attention weights of one layer and its two norms. Ordinary attention: Q (a dh), K and V (g dh each), output
// projection. MLA (DeepSeek-V2 §2.1, V3 config): queries through a q_lora latent (or directly), keys and values
// through one kv_lora latent plus a shared rotary key of qk_rope dims, the latents normalised.
double attention_params(const ModelSpec& m, const MoeDims& d) {
  const double h = m.hidden, a = m.heads, g = m.kv_heads > 0 ? m.kv_heads : m.heads;
  if (m.is_mla()) {
    const double q = d.q_lora > 0 ? h * d.q_lora + d.q_lora + d.q_lora * a * d.dqk : h * a * d.dqk;
    const double kv = h * (d.kv_lora + d.rope) + d.kv_lora + d.kv_lora * a * (m.qk_head_dim + d.dv);
    return q + kv + a * d.dv * h + 2 * h;
  }
  return h * (a * d.dqk + 2 * g * d.dqk) + a * d.dqk * h + 2 * h;
}

double mlp_params(const ModelSpec& m, double ffn) { return (m.gated_mlp ? 3 : 2) * double(m.hidden) * ffn; }

// One MoE layer: attention, shared experts, router and `experts` routed experts.
double moe_layer_params(const MoeDims& d, double experts) {
  return d.P_attn + d.P_shared + d.P_router + experts * d.P_expert;
}

double counted_params(const ModelSpec& m, double experts_per_layer) {
  const MoeDims d = moe_dims(Scenario{m, {}, {}, {}}, Framework::Megatron);
  const double emb = double(m.vocab) * m.hidden * (m.tied_embeddings ? 1 : 2);
  return d.L_dense * (d.P_attn + d.P_dense_mlp) + d.L_moe * moe_layer_params(d, experts_per_layer) + emb + m.hidden;
}

}  // namespace

MoeDims moe_dims(const Scenario& s, Framework f) {
  const ModelSpec& m = s.model;
  MoeDims d;
  d.on = uses_moe_layer(m);
  if (!d.on) return d;
  d.moe = m.is_moe();
  const double ffn = m.ffn_hidden > 0 ? m.ffn_hidden : 4.0 * m.hidden;
  d.E = m.moe_experts;
  d.k = m.moe_top_k;
  d.fe = m.moe_ffn_hidden > 0 ? m.moe_ffn_hidden : ffn;
  d.fs = m.moe_shared_experts * double(m.moe_shared_ffn_hidden > 0 ? m.moe_shared_ffn_hidden : d.fe);
  d.L_moe = d.moe ? m.layers - m.moe_dense_layers : 0;
  d.L_dense = m.layers - d.L_moe;
  d.mix = d.L_moe / m.layers;
  d.cf = m.moe_capacity_factor;
  d.groups = m.moe_router_groups;
  d.group_topk = m.moe_router_group_topk;
  d.pad = m.moe_pad_to_capacity && d.cf > 0;
  if (m.is_mla()) {
    d.dqk = m.qk_head_dim + m.qk_rope_head_dim;
    d.dv = m.v_head_dim;
    d.q_lora = m.q_lora_rank;
    d.kv_lora = m.kv_lora_rank;
    d.rope = m.qk_rope_head_dim;
  } else {
    d.dqk = d.dv = m.head_dim > 0 ? double(m.head_dim) : double(m.hidden) / m.heads;
  }
  d.P_attn = attention_params(m, d);
  d.P_dense_mlp = mlp_params(m, ffn);
  d.P_expert = d.moe ? mlp_params(m, d.fe) : 0;
  d.P_shared = d.moe ? mlp_params(m, d.fs) : 0;
  d.P_router = d.moe ? double(m.hidden) * d.E : 0;
  d.mtp = m.mtp_layers;
  d.force_balance = s.training.moe_force_balance.value_or(false);
  // Megatron-Core and NeMo overlap dispatch/combine with another micro-batch where asked
  // (--overlap-moe-expert-parallel-comm; NVIDIA's MoE recipes set it); torchtitan's EP does not.
  const bool mcore = f == Framework::Megatron || f == Framework::Nemo;
  d.a2a_overlap = mcore && s.training.moe_a2a_overlap.value_or(true);
  return d;
}

double moe_total_params(const ModelSpec& m) { return counted_params(m, m.moe_experts); }

double moe_flops_per_token(const ModelSpec& m) {
  const MoeDims d = moe_dims(Scenario{m, {}, {}, {}}, Framework::Megatron);
  const double emb = double(m.vocab) * m.hidden * (m.tied_embeddings ? 1 : 2);
  const double active_nonemb = counted_params(m, m.moe_top_k) - emb - m.hidden;
  // 6 x (active parameters + the logits GEMM) + the attention scores: 2 s a (dqk + dv) forward per layer, x 3.
  return 6 * (active_nonemb + double(m.vocab) * m.hidden) +
         6.0 * m.layers * double(m.seq_len) * m.heads * (d.dqk + d.dv);
}

double active_params(const ModelSpec& m) {
  if (!uses_moe_layer(m)) return total_params(m);
  return counted_params(m, m.moe_top_k);
}

namespace terms {

double moe_layer_params_avg(const Resolved& R) {
  return R.moe.L_dense / R.m.L * (R.moe.P_attn + R.moe.P_dense_mlp) +
         R.moe.mix * moe_layer_params(R.moe, R.moe.E);
}

double moe_layer_params_per_gpu(const Resolved& R, const Layout& l) {
  return R.moe.avg_layer_nonexpert() / l.tp + R.moe.avg_layer_expert() / (double(l.ep) * l.etp);
}

}  // namespace terms

}  // namespace paratune::advisor
