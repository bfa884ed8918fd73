// Resolving a scenario once: catalog lookup, achieved bandwidths, the stack's switches, the model's dimensions.
#include <algorithm>

#include "paratune/advisor/framework_kernels.h"
#include "paratune/advisor/framework_traits.h"
#include "paratune/advisor/loss_fusion.h"
#include "paratune/advisor/model.h"
#include "paratune/advisor/profile.h"
#include "paratune/advisor/resolved.h"
#include "terms.h"

namespace paratune::advisor {

// DeepSpeed ZeRO-1/2 all-gathers the updated 16-bit parameters inside the optimizer step (stage_1_and_2.py,
// all_gather_dp_groups after the update): nothing to hide it behind. The others overlap it by default.
bool overlap_param_gather(const TrainingSpec& t, Framework f) {
  return t.overlap_param_gather.value_or(f != Framework::DeepSpeed);
}

namespace {

// The attention kernel's speed relative to the fitted attn_eff_rel, which describes the fastest fused kernel of the
// GPU: FlashAttention-2 class everywhere before Hopper; on Hopper and Blackwell FlashAttention-3 / cuDNN fused
// attention (wgmma, TMA), which FlashAttention-2 does not use and runs 1/fa3_gain as fast (Shah et al. 2024).
// Defaults: Megatron-Core and NeMo run cuDNN fused attention, the PyTorch stacks FlashAttention-2 through SDPA.
double attention_factor(const TrainingSpec& t, Framework f, const GpuSpec& g, const ModelParams& p) {
  const bool fast_arch = g.arch == GpuArch::Hopper || g.arch == GpuArch::Blackwell;
  if (!fast_arch || t.attention == Attention::None) return 1.0;
  const bool default_fast = f == Framework::Megatron || f == Framework::Nemo;
  const bool fast = t.attention ? *t.attention == Attention::Flash3 || *t.attention == Attention::Cudnn : default_fast;
  return (fast ? 1.0 : 1.0 / p.fa3_gain) * (g.fast_softmax ? p.ultra_attn_gain : 1.0);
}

// The FP8 recipe against per-tensor scaling (which the fitted fp8_linear_gain describes).
double fp8_recipe_factor(const TrainingSpec& t, GpuArch arch, const ModelParams& p) {
  if (!t.fp8_recipe) return 1.0;
  if (*t.fp8_recipe == Fp8Recipe::Mxfp8 && arch != GpuArch::Blackwell) return p.mxfp8_emulated_gain;
  return p.fp8_recipe_gain[static_cast<int>(*t.fp8_recipe)];
}

// NIC aggregate per node (GB/s), achieved: line rate x fabric efficiency x GPU-NIC path penalty.
double node_network_gbps(const ClusterSpec& c, const ModelParams& p) {
  double line = 0;
  for (const auto& n : c.nics)
    if (n.active) line += (n.gbps > 0 ? n.gbps : c.nic_gbps) / 8.0;
  if (line <= 0) line = c.nic_count * c.nic_gbps / 8.0;
  double path = 1.0;  // nccl #412: ~24 GB/s per HDR NIC with GPUDirect, ~16 GB/s through the CPU
  if (c.gpu_nic_path == "PHB") path = 0.67;
  if (c.gpu_nic_path == "SYS") path = 0.5;
  return std::max(0.1, line * p.fabric_eff[static_cast<int>(c.fabric)] * path * (c.rail_aligned ? 1.0 : 0.9));
}

StackProfile stack_profile(const Scenario& s, Framework f, const GpuSpec& g, const ModelParams& p) {
  const GpuArch arch = g.arch;
  StackProfile st;
  st.framework = f;
  st.megatron_core = f == Framework::Megatron || f == Framework::Nemo;
  st.pytorch_native = f == Framework::Fsdp || f == Framework::Torchtitan || f == Framework::Automodel;
  // FlashAttention exists only from Ampere on (and on CDNA2/3 through ROCm's port): on Volta, Turing or Pascal
  // attention is the unfused kernel whatever the scenario says (FlashAttention-2 README: Ampere, Ada, Hopper).
  st.flash = fused_attention_runs(s);
  st.attn_gain = attention_factor(s.training, f, g, p);
  const bool eager = !st.megatron_core;
  const bool compiled = s.training.compile.value_or(false) && st.pytorch_native;
  st.elt_scale = p.elt_scale * (eager ? p.eager_elt_factor : 1.0) * (compiled ? p.compile_elt_scale : 1.0);
  st.overlap_dp = s.training.overlap_dp_comm.value_or(true);
  st.grad_fp32 = grad_reduce_fp32(s, f);
  st.fp8_params = s.training.precision == Precision::Fp8 && st.megatron_core &&
                  s.training.fp8_param_gather.value_or(false);
  st.overlap_param_gather = overlap_param_gather(s.training, f);
  st.balanced_stages = s.training.pipeline_split == PipelineSplit::Balanced;
  st.loss_bytes = loss_bytes_per_logit(s, f);
  // What the job runs (framework_kernels.h), priced on Hopper and Blackwell only: the fitted share hidden
  // (tp_overlap) comes from those GPUs' runs.
  st.tp_overlap = tp_comm_overlap_runs(s, f) && (arch == GpuArch::Hopper || arch == GpuArch::Blackwell);
  return st;
}

ModelDims model_dims(const ModelSpec& m) {
  ModelDims d;
  d.h = m.hidden; d.a = m.heads; d.g = m.kv_heads > 0 ? m.kv_heads : m.heads;
  d.f = m.ffn_hidden > 0 ? m.ffn_hidden : 4.0 * m.hidden;
  d.V = m.vocab; d.s = m.seq_len; d.L = m.layers;
  d.P_layer = params_per_layer(m);
  d.P_emb = d.V * d.h;
  d.gated = m.gated_mlp; d.dropout = m.dropout; d.tied = m.tied_embeddings;
  return d;
}

}  // namespace

Resolved resolve(const Scenario& s, Framework f, const ModelParams& p) {
  Resolved R;
  R.s = s;
  R.gpu = effective_gpu(s.cluster);
  const GpuSpec& g = R.gpu;
  const int arch = static_cast<int>(g.arch);
  const bool eager_on_hopper = f != Framework::Megatron && f != Framework::Nemo &&
                               (g.arch == GpuArch::Hopper || g.arch == GpuArch::Blackwell);
  const double eff = p.gemm_eff[arch] * p.stack_compute_eff[stack_index(f)] *
                     (eager_on_hopper ? p.eager_hopper_eff : 1.0);
  const double peak16 = (s.training.precision == Precision::Fp16 ? g.fp16_tflops : g.bf16_tflops) * 1e12;
  R.peak = peak16 * eff;
  R.peak_lin = R.peak;
  if (s.training.precision == Precision::Fp8 && g.fp8_tflops > 0)
    R.peak_lin = R.peak * std::min(p.fp8_linear_gain * fp8_recipe_factor(s.training, g.arch, p),
                                   g.fp8_tflops * 1e12 / peak16);
  R.hbm = g.hbm_tbps * 1e12 * p.hbm_eff;
  R.capacity_gib = g.memory_gib;
  R.G = std::max(1, s.cluster.gpus_per_node);
  R.D = std::max(1, s.cluster.nvlink_domain);
  R.host_capacity_gib = terms::host_capacity_gib(R);
  R.nvl_gbps = g.nvlink_gbps * p.nvlink_eff;
  R.pcie_gbps = std::max(1.0, g.pcie_gbps * p.pcie_eff);
  R.node_net_gbps = node_network_gbps(s.cluster, p);
  if (s.cluster.measured) apply_measured(*s.cluster.measured, p, R);  // a hardware profile's rates (profile.h)
  R.stack = stack_profile(s, f, g, p);
  R.m = model_dims(s.model);
  R.model_flops_per_token = model_flops_per_token(s.model);
  R.moe = moe_dims(s, f);  // MoE / MLA / head_dim / MTP: the generalised layer (moe_dims.cpp); off for dense models
  return R;
}

}  // namespace paratune::advisor
