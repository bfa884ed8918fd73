// Enum names, parsers and scenario validation.
#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string>

#include "paratune/advisor/catalog.h"
#include "paratune/advisor/scenario.h"

#include "paratune/advisor/framework_traits.h"
#include "paratune/advisor/framework_versions.h"

namespace paratune::advisor {

namespace {
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}
[[noreturn]] void bad(const std::string& field, const std::string& what) {
  throw std::invalid_argument(field + ": " + what);
}
// Group-limited routing: Megatron-Core's TransformerConfig checks (the groups divide the experts, no more groups
// chosen than there are), and what its group_limited_topk needs to route at all: groups ranked by their top
// top_k / group_topk experts (none when group_topk > top_k) and at least top_k experts in the chosen groups. Both
// keys or neither (Megatron-Core ignores a group count given alone).
void validate_router_groups(const ModelSpec& m) {
  const int g = m.moe_router_groups, top = m.moe_router_group_topk;
  if (g < 0) bad("model.moe_router_groups", "must be >= 0 (0 = unrestricted routing)");
  if (top < 0) bad("model.moe_router_group_topk", "must be >= 0 (0 = unrestricted routing)");
  if ((g > 0) != (top > 0))
    bad("model.moe_router_groups", "group-limited routing needs both moe_router_groups and moe_router_group_topk");
  if (g == 0) return;
  if (m.moe_experts % g != 0)
    bad("model.moe_router_groups", "must divide moe_experts (" + std::to_string(m.moe_experts) + ")");
  if (top > g) bad("model.moe_router_group_topk", "must be at most moe_router_groups (" + std::to_string(g) + ")");
  if (top > m.moe_top_k)
    bad("model.moe_router_group_topk", "must be at most moe_top_k (" + std::to_string(m.moe_top_k) +
                                           "): groups are ranked by their best moe_top_k / group_topk experts");
  if (long(top) * (m.moe_experts / g) < m.moe_top_k)
    bad("model.moe_router_group_topk", "the chosen groups hold fewer than moe_top_k experts (" +
                                           std::to_string(top) + " x " + std::to_string(m.moe_experts / g) + ")");
}

// The mixture-of-experts, MLA and MTP fields of [model] (docs/model.md §9).
void validate_moe_model(const ModelSpec& m) {
  if (m.moe_experts < 0) bad("model.moe_experts", "must be >= 0 (0 = dense)");
  if (m.mtp_layers < 0 || m.mtp_layers > 16) bad("model.mtp_layers", "must be between 0 and 16");
  if (m.kv_lora_rank < 0 || m.q_lora_rank < 0) bad("model.kv_lora_rank", "must be >= 0 (0 = no latent attention)");
  if (m.is_mla() && (m.qk_head_dim <= 0 || m.v_head_dim <= 0 || m.qk_rope_head_dim < 0))
    bad("model.qk_head_dim", "latent attention (kv_lora_rank > 0) needs qk_head_dim > 0, qk_rope_head_dim >= 0 and "
                             "v_head_dim > 0 (DeepSeek-V3: 128, 64, 128)");
  if (!m.is_moe()) {
    if (m.moe_top_k || m.moe_ffn_hidden || m.moe_shared_experts || m.moe_dense_layers || m.moe_capacity_factor > 0 ||
        m.moe_pad_to_capacity || m.moe_router_groups || m.moe_router_group_topk)
      bad("model.moe_experts", "the moe_* keys need moe_experts >= 2 (the number of routed experts)");
    return;
  }
  if (m.moe_experts < 2) bad("model.moe_experts", "a mixture of experts needs at least 2 routed experts");
  if (m.moe_top_k < 1 || m.moe_top_k > m.moe_experts)
    bad("model.moe_top_k", "must be between 1 and moe_experts (" + std::to_string(m.moe_experts) + ")");
  if (m.moe_ffn_hidden < 0 || m.moe_shared_ffn_hidden < 0) bad("model.moe_ffn_hidden", "must be >= 1 (0 = ffn_hidden)");
  if (m.moe_shared_experts < 0) bad("model.moe_shared_experts", "must be >= 0");
  if (m.moe_dense_layers < 0 || m.moe_dense_layers >= m.layers)
    bad("model.moe_dense_layers", "must be between 0 and layers - 1 (" + std::to_string(m.layers - 1) + ")");
  if (m.moe_capacity_factor < 0 || (m.moe_capacity_factor > 0 && m.moe_capacity_factor < 1))
    bad("model.moe_capacity_factor", "must be 0 (dropless) or >= 1");
  // Megatron-Core: "moe_expert_capacity_factor must be set to use moe_pad_expert_input_to_capacity".
  if (m.moe_pad_to_capacity && m.moe_capacity_factor <= 0)
    bad("model.moe_pad_to_capacity", "padding to capacity needs moe_capacity_factor >= 1 (the capacity it pads to)");
  validate_router_groups(m);
}

}  // namespace

const char* to_string(Framework f) {
  switch (f) {
    case Framework::Megatron: return "megatron";
    case Framework::DeepSpeed: return "deepspeed";
    case Framework::Fsdp: return "fsdp";
    case Framework::Torchtitan: return "torchtitan";
    case Framework::Nemo: return "nemo";
    case Framework::Automodel: return "automodel";
  }
  return "?";
}
const char* to_string(Precision p) {
  switch (p) {
    case Precision::Bf16: return "bf16";
    case Precision::Fp16: return "fp16";
    case Precision::Fp8: return "fp8";
  }
  return "?";
}
const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::None: return "none";
    case Recompute::Selective: return "selective";
    case Recompute::Full: return "full";
  }
  return "?";
}
const char* to_string(Fabric f) {
  switch (f) {
    case Fabric::InfiniBand: return "infiniband";
    case Fabric::RoCE: return "roce";
    case Fabric::Efa: return "efa";
    case Fabric::Slingshot: return "slingshot";
    case Fabric::OmniPath: return "omnipath";
    case Fabric::Ethernet: return "ethernet";
  }
  return "?";
}

const char* to_string(Attention a) {
  switch (a) {
    case Attention::Flash2: return "flash2";
    case Attention::Flash3: return "flash3";
    case Attention::Cudnn: return "cudnn";
    case Attention::None: return "none";
  }
  return "?";
}
const char* to_string(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::Delayed: return "delayed";
    case Fp8Recipe::Tensorwise: return "tensorwise";
    case Fp8Recipe::Rowwise: return "rowwise";
    case Fp8Recipe::Blockwise: return "blockwise";
    case Fp8Recipe::Mxfp8: return "mxfp8";
  }
  return "?";
}
const char* to_string(PipelineSplit p) { return p == PipelineSplit::Balanced ? "balanced" : "layers"; }
PipelineSplit pipeline_split_from_string(const std::string& s) {
  const std::string v = lower(s);
  if (v == "layers" || v == "uniform") return PipelineSplit::Layers;
  if (v == "balanced" || v == "cost") return PipelineSplit::Balanced;
  throw std::invalid_argument("'" + s + "' is not a pipeline split; valid: layers, balanced");
}
const char* to_string(LossFusion f) {
  switch (f) {
    case LossFusion::Off: return "off";
    case LossFusion::Native: return "native";
    case LossFusion::Te: return "te";
  }
  return "off";
}
LossFusion loss_fusion_from_string(const std::string& s) {
  const std::string v = lower(s);
  if (v == "off" || v == "none" || v == "false") return LossFusion::Off;
  if (v == "native") return LossFusion::Native;
  if (v == "te" || v == "transformer_engine") return LossFusion::Te;
  throw std::invalid_argument("'" + s + "' is not a cross-entropy fusion; valid: off, native, te");
}
Attention attention_from_string(const std::string& s) {
  const std::string v = lower(s);
  if (v == "flash2" || v == "fa2" || v == "flash-attn-2") return Attention::Flash2;
  if (v == "flash3" || v == "fa3" || v == "flash-attn-3") return Attention::Flash3;
  if (v == "cudnn" || v == "te" || v == "fused") return Attention::Cudnn;
  if (v == "none" || v == "unfused" || v == "eager") return Attention::None;
  throw std::invalid_argument("'" + s + "' is not an attention kernel; valid: flash2, flash3, cudnn, none");
}
Fp8Recipe fp8_recipe_from_string(const std::string& s) {
  const std::string v = lower(s);
  if (v == "delayed") return Fp8Recipe::Delayed;
  if (v == "tensorwise" || v == "current" || v == "per-tensor") return Fp8Recipe::Tensorwise;
  if (v == "rowwise") return Fp8Recipe::Rowwise;
  if (v == "blockwise" || v == "block") return Fp8Recipe::Blockwise;
  if (v == "mxfp8" || v == "mx") return Fp8Recipe::Mxfp8;
  throw std::invalid_argument("'" + s + "' is not an fp8 recipe; valid: delayed, tensorwise, rowwise, blockwise, mxfp8");
}

const char* to_string(MoeRouter r) { return r == MoeRouter::AuxLossFree ? "aux_loss_free" : "aux_loss"; }
const char* to_string(Dispatcher d) {
  switch (d) {
    case Dispatcher::AllToAll: return "alltoall";
    case Dispatcher::AllGather: return "allgather";
    case Dispatcher::Flex: return "flex";
  }
  return "?";
}
MoeRouter moe_router_from_string(const std::string& s) {
  const std::string v = lower(s);
  if (v == "aux_loss" || v == "aux-loss" || v == "softmax") return MoeRouter::AuxLoss;
  if (v == "aux_loss_free" || v == "aux-loss-free" || v == "expert_bias" || v == "sigmoid") return MoeRouter::AuxLossFree;
  throw std::invalid_argument("'" + s + "' is not a router; valid: aux_loss, aux_loss_free");
}
const char* to_string(Kernel k) {
  switch (k) {
    case Kernel::DeepEP: return "deepep";
    case Kernel::HybridEP: return "hybridep";
    case Kernel::TransformerEngine: return "te";
    case Kernel::FlashAttention3: return "flash3";
  }
  return "?";
}

Kernel kernel_from_string(const std::string& s) {
  for (Kernel k : {Kernel::DeepEP, Kernel::HybridEP, Kernel::TransformerEngine, Kernel::FlashAttention3})
    if (s == to_string(k)) return k;
  if (s == "transformer_engine" || s == "transformer-engine") return Kernel::TransformerEngine;
  if (s == "flash_attn_3" || s == "fa3") return Kernel::FlashAttention3;
  throw std::invalid_argument("'" + s + "' is not an optional kernel; valid: deepep, hybridep, te, flash3");
}

bool ClusterSpec::lacks(Kernel k) const {
  return kernels && std::find(kernels->begin(), kernels->end(), k) == kernels->end();
}

const char* to_string(PipelineSchedule p) {
  switch (p) {
    case PipelineSchedule::OneFOneB: return "1f1b";
    case PipelineSchedule::Interleaved: return "interleaved";
    case PipelineSchedule::GPipe: return "gpipe";
    case PipelineSchedule::ZeroBubble: return "zero_bubble";
    case PipelineSchedule::Zbv: return "zbv";
  }
  return "?";
}
// PyTorch's class names (torch.distributed.pipelining get_schedule_class) are accepted too.
PipelineSchedule pipeline_schedule_from_string(const std::string& s) {
  const std::string v = lower(s);
  if (v == "1f1b") return PipelineSchedule::OneFOneB;
  if (v == "interleaved" || v == "interleaved1f1b") return PipelineSchedule::Interleaved;
  if (v == "gpipe") return PipelineSchedule::GPipe;
  if (v == "zero_bubble" || v == "interleavedzerobubble") return PipelineSchedule::ZeroBubble;
  if (v == "zbv" || v == "zbvzerobubble") return PipelineSchedule::Zbv;
  throw std::invalid_argument("'" + s + "' is not a pipeline schedule; valid: 1f1b, interleaved, gpipe, zero_bubble, zbv");
}
Dispatcher dispatcher_from_string(const std::string& s) {
  const std::string v = lower(s);
  if (v == "alltoall" || v == "all-to-all" || v == "a2a") return Dispatcher::AllToAll;
  if (v == "allgather" || v == "all-gather") return Dispatcher::AllGather;
  if (v == "flex" || v == "deepep" || v == "hybridep") return Dispatcher::Flex;
  throw std::invalid_argument("'" + s + "' is not a token dispatcher; valid: alltoall, allgather, flex");
}

Framework framework_from_string(const std::string& s) {
  const std::string v = lower(s);
  if (v == "megatron" || v == "megatron-lm" || v == "megatron-core") return Framework::Megatron;
  if (v == "deepspeed" || v == "megatron-deepspeed") return Framework::DeepSpeed;
  if (v == "fsdp" || v == "pytorch-fsdp") return Framework::Fsdp;
  if (v == "torchtitan") return Framework::Torchtitan;
  if (v == "nemo") return Framework::Nemo;
  if (v == "automodel" || v == "nemo-automodel" || v == "nemo_automodel") return Framework::Automodel;
  throw std::invalid_argument("'" + s +
                              "' is not a framework; valid: megatron, deepspeed, fsdp, torchtitan, nemo, automodel");
}
const std::vector<Framework>& known_frameworks() {
  static const std::vector<Framework> all = {Framework::Megatron,   Framework::DeepSpeed, Framework::Fsdp,
                                             Framework::Torchtitan, Framework::Nemo,      Framework::Automodel};
  return all;
}

void set_framework(TrainingSpec& t, const std::string& name) {
  t.framework = framework_from_string(name);
  if (lower(name) == "megatron-deepspeed" && t.framework_version.empty()) t.framework_version = "megatron-deepspeed";
}
Precision precision_from_string(const std::string& s) {
  const std::string v = lower(s);
  if (v == "bf16" || v == "bfloat16" || v == "amp_bf16") return Precision::Bf16;
  if (v == "fp16" || v == "float16" || v == "amp_fp16") return Precision::Fp16;
  if (v == "fp8" || v == "amp_fp8") return Precision::Fp8;
  throw std::invalid_argument("'" + s + "' is not a precision; valid: bf16, fp16, fp8");
}
Recompute recompute_from_string(const std::string& s) {
  const std::string v = lower(s);
  if (v == "none" || v == "off" || v == "no") return Recompute::None;
  if (v == "selective") return Recompute::Selective;
  if (v == "full") return Recompute::Full;
  throw std::invalid_argument("'" + s + "' is not a recompute mode; valid: none, selective, full");
}
Fabric fabric_from_string(const std::string& s) {
  const std::string v = lower(s);
  if (v == "infiniband" || v == "ib") return Fabric::InfiniBand;
  if (v == "roce" || v == "rocev2") return Fabric::RoCE;
  if (v == "efa") return Fabric::Efa;
  if (v == "slingshot") return Fabric::Slingshot;
  if (v == "omnipath" || v == "omni-path" || v == "opa") return Fabric::OmniPath;
  if (v == "ethernet" || v == "tcp") return Fabric::Ethernet;
  throw std::invalid_argument("'" + s +
                              "' is not a fabric; valid: infiniband, roce, efa, slingshot, omnipath, ethernet");
}

void validate(const Scenario& s) {
  const ModelSpec& m = s.model;
  if (m.layers <= 0) bad("model.layers", "must be a positive integer (e.g. 32)");
  if (m.hidden <= 0) bad("model.hidden", "must be a positive integer (e.g. 4096)");
  if (m.heads <= 0) bad("model.heads", "must be a positive integer (e.g. 32)");
  if (m.head_dim < 0) bad("model.head_dim", "must be >= 1 (0 = hidden / heads)");
  if (m.head_dim == 0 && !m.is_mla() && m.hidden % m.heads != 0)
    bad("model.heads", "must divide model.hidden (" + std::to_string(m.hidden) + "); got " + std::to_string(m.heads) +
                           " (or give model.head_dim)");
  if (m.kv_heads < 0) bad("model.kv_heads", "must be >= 1 (0 = heads)");
  if (m.kv_heads > 0 && m.heads % m.kv_heads != 0)
    bad("model.kv_heads",
        "must divide model.heads (" + std::to_string(m.heads) + "); got " + std::to_string(m.kv_heads));
  if (m.ffn_hidden < 0) bad("model.ffn_hidden", "must be >= 1 (0 = 4 * hidden)");
  if (m.vocab <= 0) bad("model.vocab", "must be a positive integer (e.g. 128256)");
  if (m.seq_len <= 0) bad("model.seq_len", "must be a positive integer (e.g. 8192)");
  validate_moe_model(m);
  if (s.training.global_batch <= 0) bad("training.global_batch", "must be a positive number of sequences");
  // The framework version: known, and able to run what the scenario asks for (framework_versions.h).
  try {
    for (const auto& [f, id] : s.training.site_versions) resolve_version(f, id);
    version_for(s, s.training.framework);
  } catch (const std::invalid_argument& e) {
    bad("training.framework_version", e.what());
  }
  if (const std::string why = stack_problem(s); !why.empty()) bad("training.framework_version", why);

  const ClusterSpec& c = s.cluster;
  const bool from_topology = !c.topology_file.empty();  // GPU and NICs still to be filled in by the caller
  if (c.gpu.empty() && from_topology) return;
  if (c.gpu.empty()) bad("cluster.gpu", "missing; give a catalog key (" + gpu_keys().front() + ", ...)");
  if (!gpu_described(c))
    bad("cluster.gpu", "unknown GPU '" + c.gpu + "'; valid: " + [] {
      std::string v;
      for (const auto& k : gpu_keys()) v += (v.empty() ? "" : ", ") + k;
      return v;
    }() + " (or give [cluster.gpu_spec] peak_tflops and memory_gib)");
  if (c.peak_tflops < 0) bad("cluster.gpu_spec.peak_tflops", "must be > 0");
  if (c.memory_gib < 0) bad("cluster.gpu_spec.memory_gib", "must be > 0");
  if (c.hbm_tbps < 0) bad("cluster.gpu_spec.hbm_tbps", "must be > 0");
  if (c.nvlink_gbps < 0) bad("cluster.gpu_spec.nvlink_gbps", "must be >= 0");
  if (c.nodes <= 0) bad("cluster.nodes", "must be a positive integer");
  if (c.gpus_per_node <= 0) bad("cluster.gpus_per_node", "must be a positive integer");
  if (c.nvlink_domain <= 0) bad("cluster.nvlink_domain", "must be >= 1 (1 = PCIe only)");
  if (c.nvlink_domain <= c.gpus_per_node) {
    if (c.gpus_per_node % c.nvlink_domain != 0)
      bad("cluster.nvlink_domain", "must divide cluster.gpus_per_node (" + std::to_string(c.gpus_per_node) +
                                       ") or be a multiple of it (multi-node NVLink, e.g. NVL72)");
  } else if (c.nvlink_domain % c.gpus_per_node != 0) {
    bad("cluster.nvlink_domain", "must divide cluster.gpus_per_node (" + std::to_string(c.gpus_per_node) +
                                     ") or be a multiple of it (multi-node NVLink, e.g. NVL72)");
  }
  if (c.placement && placement_nodes(*c.placement) != c.nodes)
    bad("cluster.placement.nodes_per_leaf", "must add up to cluster.nodes (" + std::to_string(c.nodes) + "), not " +
                                                std::to_string(placement_nodes(*c.placement)));
  if (c.nic_count < 0) bad("cluster.nic_count", "must be >= 0");
  if (c.nic_gbps < 0) bad("cluster.nic_gbps", "must be >= 0");
  if (c.nodes > 1 && (c.nic_count == 0 || c.nic_gbps <= 0) && c.nics.empty() && !from_topology)
    bad("cluster.nic_count", "a multi-node allocation needs nic_count >= 1 and nic_gbps > 0 (compute NICs per node)");

  const GpuSpec g = effective_gpu(c);
  if (s.training.precision == Precision::Fp8 && g.fp8_tflops <= 0)
    bad("training.precision", "fp8 needs FP8 tensor cores (Hopper, Ada, Blackwell, MI300X); " + c.gpu +
                                  " has none; valid here: bf16" + std::string(g.bf16 ? "" : " (not this GPU)") +
                                  ", fp16");
  if (s.training.precision == Precision::Bf16 && !g.bf16)
    bad("training.precision", "bf16 needs BF16 tensor cores (Ampere or newer); " + c.gpu + " has none; valid here: fp16");

  const ParallelSpec& p = s.parallel;
  auto pos = [&](const std::optional<int>& v, const char* name) {
    if (v && *v <= 0) bad(std::string("parallel.") + name, "must be a positive integer");
  };
  pos(p.tp, "tp"); pos(p.pp, "pp"); pos(p.dp, "dp"); pos(p.cp, "cp"); pos(p.virtual_stages, "virtual_stages");
  pos(p.micro_batch, "micro_batch"); pos(p.ep, "ep"); pos(p.etp, "etp");
  if (!m.is_moe() && (p.ep.value_or(1) > 1 || p.etp.value_or(1) > 1 || p.dispatcher))
    bad("parallel.ep", "expert parallelism (ep, etp, dispatcher) needs a mixture-of-experts model (model.moe_experts)");
  if (p.ep && m.is_moe() && m.moe_experts % *p.ep != 0)
    bad("parallel.ep", "must divide model.moe_experts (" + std::to_string(m.moe_experts) + ")");
  if (p.first_stage_layers.has_value() != p.last_stage_layers.has_value())
    bad("parallel.first_stage_layers", "give first_stage_layers and last_stage_layers together (or neither)");
  if (p.first_stage_layers) {
    const int pp = p.pp.value_or(1), L = m.layers, left = L - *p.first_stage_layers - *p.last_stage_layers;
    if (pp < 2) bad("parallel.first_stage_layers", "a stage layout needs parallel.pp >= 2");
    if (*p.first_stage_layers < 1 || *p.last_stage_layers < 1 || (pp == 2 ? left != 0 : left < pp - 2))
      bad("parallel.first_stage_layers",
          "first_stage_layers + last_stage_layers must leave the " + std::to_string(std::max(0, pp - 2)) +
              " middle stages at least one of the model's " + std::to_string(L) + " layers each (all of them with pp 2)");
  }
  if (p.main_params && *p.main_params != StateDtype::Fp32 && *p.main_params != StateDtype::Fp16)
    bad("parallel.main_params", "must be fp32 or fp16 (Megatron's --main-params-dtype choices)");
  if (p.recompute_modules && p.recompute && *p.recompute != Recompute::Selective)
    bad("parallel.recompute_modules", "names the modules of selective recompute: needs recompute = \"selective\"");
  if (p.offload_layers && (*p.offload_layers < 0 || *p.offload_layers > m.layers))
    bad("parallel.offload_layers", "must be between 0 and the model's " + std::to_string(m.layers) + " layers");
  if (p.shard_group && *p.shard_group > 0 && p.zero_stage && *p.zero_stage < 2 &&
      !(*p.zero_stage == 1 && runs_shard_scope(s.training.framework, 1)))
    bad("parallel.shard_group", std::string("a sharding scope needs zero_stage 2 or 3 (hybrid sharding), or 1 with "
                                            "megatron or nemo (distributed-optimizer instances); not zero_stage ") +
                                    std::to_string(*p.zero_stage) + " with " + to_string(s.training.framework));
  if (p.zero_stage && (*p.zero_stage < 0 || *p.zero_stage > 3))
    bad("parallel.zero_stage", "must be 0, 1, 2 or 3 (FSDP full shard = 3, shard-grad-op = 2)");
  const int total = s.total_gpus();
  const int known = p.tp.value_or(1) * p.pp.value_or(1) * p.cp.value_or(1);
  if (known > total || total % known != 0)
    bad("parallel", "tp*pp*cp = " + std::to_string(known) + " must divide the GPU count " + std::to_string(total));
  if (p.dp && known * *p.dp != total)
    bad("parallel.dp", "tp*pp*dp*cp must equal the GPU count " + std::to_string(total) + " (nodes * gpus_per_node); "
                       "dp = " + std::to_string(total / known) + " would");
}

}  // namespace paratune::advisor
