// A scenario resolved once for one framework: the GPU's numbers after catalog overrides, the achieved bandwidths of
// its NVLink, PCIe and NICs, the software stack's switches and the model's dimensions. Every model term
// (advisor/src/model/) reads from this one value instead of looking the cluster up again; an Evaluator holds one.
#pragma once

#include "paratune/advisor/catalog.h"
#include "paratune/advisor/scenario.h"

namespace paratune::advisor {

struct ModelParams;

// What the software stack changes, resolved from the framework and the scenario's switches (docs/model.md,
// "software stack").
struct StackProfile {
  Framework framework = Framework::Megatron;
  bool flash = true;          // fused attention (FlashAttention class): exists from Ampere on and unless "none"
  double attn_gain = 1;       // the scenario's attention kernel against the framework's default
  double elt_scale = 1;       // elementwise HBM traffic multiplier (fitted scale, torch.compile, eager kernels)
  bool overlap_dp = true;     // gradient reduce / parameter gather overlapped with compute
  bool tp_overlap = false;    // TP communication overlapped with GEMMs (userbuffers, async TP)
  bool megatron_core = true;  // Megatron-LM or NeMo (fused kernels, distributed optimizer semantics)
  bool pytorch_native = false;  // FSDP or torchtitan (per-parameter sharding, fp32 sharded parameters)
  bool grad_fp32 = false;     // gradients accumulated and reduced in fp32 (else in the 16-bit parameter dtype)
  bool fp8_params = false;    // FP8 primary weights, gathered in FP8 (Megatron-Core with fp8_param_gather)
  bool overlap_param_gather = true;  // ZeRO-1/2 parameter all-gather hidden behind the next forward
  bool balanced_stages = false;  // pipeline stages balanced by compute cost (PipelineSplit::Balanced)
  double loss_bytes = 6;      // per token and vocabulary entry at the loss (loss_fusion.h)
  double grad_bytes() const { return grad_fp32 ? 4 : 2; }
  double gather_bytes() const { return fp8_params ? 1 : 2; }  // per parameter in a parameter all-gather
};

struct ModelDims {
  double h = 0, a = 0, g = 0, f = 0, V = 0, s = 0, L = 0;  // hidden, heads, kv heads, ffn, vocab, sequence, layers
  double P_layer = 0, P_emb = 0;                          // parameters per layer, in the embedding table
  bool gated = false, dropout = false, tied = false;
};

// What the generalised layer needs beyond ModelDims (docs/model.md §9): mixture of experts, head dimensions that are
// not hidden/heads, multi-head latent attention, multi-token prediction. `on` = the model needs it (terms.h, MoE
// block); a plain dense model never takes this path, so its numbers do not change.
struct MoeDims {
  bool on = false;           // MoE, MLA, head_dim or MTP given
  bool moe = false;          // routed experts present
  double E = 0, k = 0;       // routed experts, top-k
  double fe = 0, fs = 0;     // one routed expert's FFN hidden; all shared experts' FFN hidden together
  double L_dense = 0, L_moe = 0, mix = 0;  // layers of each kind; mix = L_moe / L
  double cf = 0;             // capacity factor; 0 = dropless
  double groups = 0, group_topk = 0;  // group-limited routing (0 = unrestricted)
  bool pad = false;          // padded to capacity: each expert computes cf x its fair share of rows, no rank waits
  double dqk = 0, dv = 0;    // per-head query/key width (rotary part included) and value width
  double q_lora = 0, kv_lora = 0, rope = 0;
  double P_attn = 0;         // attention (and its norm) per layer
  double P_dense_mlp = 0;    // one dense layer's MLP (and its norm)
  double P_expert = 0;       // one routed expert
  double P_shared = 0, P_router = 0;  // per MoE layer
  double mtp = 0;            // MTP modules (each: one MoE layer + a 2h x h projection + norms; head shared)
  bool force_balance = false;  // benchmark routing (uniform)
  bool a2a_overlap = false;    // dispatch/combine overlapped with another micro-batch
  double avg_layer_nonexpert() const { return P_attn + (1 - mix) * P_dense_mlp + mix * (P_shared + P_router); }
  double avg_layer_expert() const { return mix * E * P_expert; }
};

struct Resolved {
  Scenario s;
  GpuSpec gpu;
  StackProfile stack;
  ModelDims m;
  MoeDims moe;
  double model_flops_per_token = 0;  // the model's 6N + attention convention (counts.cpp), once per scenario
  double peak = 0;         // FLOP/s, 16-bit, achieved for large GEMMs (fitted efficiency applied)
  double peak_lin = 0;     // FLOP/s for linear layers (FP8 gain applied)
  double hbm = 0;          // bytes/s achieved for streaming kernels
  double capacity_gib = 0;
  double host_capacity_gib = 0;  // host memory one GPU may pin for offloaded activations (model/offload.cpp)
  double node_net_gbps = 0;  // achieved NIC aggregate per node, GB/s
  double nvl_gbps = 0, pcie_gbps = 0;
  int G = 1;               // GPUs per node
  int D = 1;               // GPUs per NVLink domain
  int island() const { return G > D ? G : D; }  // GPUs that reach each other without the scale-out network
};

// Resolve `s` for framework `f` under parameters `p` (the only place the catalog is consulted).
Resolved resolve(const Scenario& s, Framework f, const ModelParams& p);
// The generalised layer's dimensions (advisor/src/model/moe_dims.cpp).
MoeDims moe_dims(const Scenario& s, Framework f);

}  // namespace paratune::advisor
