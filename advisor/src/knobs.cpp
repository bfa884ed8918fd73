// The knob table (knobs.h): every scenario knob once, with what reads and writes it.
#include "paratune/advisor/knobs.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "paratune/advisor/loss_fusion.h"

namespace paratune::advisor {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

int as_int(const KnobValue& v) { return static_cast<int>(std::get<long>(v)); }
double as_num(const KnobValue& v) {
  return std::holds_alternative<long>(v) ? static_cast<double>(std::get<long>(v)) : std::get<double>(v);
}
bool as_bool(const KnobValue& v) { return std::get<bool>(v); }
const std::string& as_text(const KnobValue& v) { return std::get<std::string>(v); }

KnobValue of_int(int v) { return KnobValue{static_cast<long>(v)}; }
KnobValue of_text(const std::string& v) { return KnobValue{v}; }
template <class E>
KnobValue of_enum(E e) {
  return KnobValue{std::string(to_string(e))};
}
KnobValue of(const std::optional<int>& v) { return v ? of_int(*v) : KnobValue{}; }
KnobValue of(const std::optional<bool>& v) { return v ? KnobValue{*v} : KnobValue{}; }
template <class E>
KnobValue of(const std::optional<E>& v) {
  return v ? of_enum(*v) : KnobValue{};
}

std::string join_ints(const std::vector<int>& v) {
  std::string out;
  for (int x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
  return out;
}

// The NIC a [[cluster.nic]] table describes: the reader appends one per table, then sets its keys.
NicFacts& nic(Scenario& s) {
  if (s.cluster.nics.empty()) s.cluster.nics.emplace_back();
  return s.cluster.nics.back();
}

void set_preset(Scenario& s, const KnobValue& v) {
  const std::string& key = as_text(v);
  if (!is_model_preset(key)) {
    std::string list;
    for (const auto& k : model_preset_keys()) list += (list.empty() ? "" : ", ") + k;
    throw std::invalid_argument("unknown preset '" + key + "'; valid: " + list);
  }
  s.model = model_preset(key);
}

void set_te_version(Scenario& s, const KnobValue& v) {
  int major = 0, minor = 0;
  if (!parse_te_version(as_text(v), &major, &minor))
    throw std::invalid_argument("'" + as_text(v) + "' is not a Transformer Engine version; give MAJOR.MINOR, e.g. 2.14");
  s.cluster.te_version = as_text(v);
}

// "deepep,te" ("" = none installed: an empty list, which says more than no list).
void set_kernels(Scenario& s, const KnobValue& v) {
  const std::string& text = as_text(v);
  std::vector<Kernel> list;
  size_t from = 0;
  while (from < text.size()) {
    size_t to = text.find(',', from);
    if (to == std::string::npos) to = text.size();
    list.push_back(kernel_from_string(text.substr(from, to - from)));
    from = to + 1;
  }
  s.cluster.kernels = list;
}

KnobValue get_kernels(const Scenario& s) {
  if (!s.cluster.kernels) return {};
  std::string out;
  for (Kernel k : *s.cluster.kernels) out += (out.empty() ? "" : ",") + std::string(to_string(k));
  return out;
}

const Knob kKnobs[] = {
    {"model", "preset", KnobType::Text, 0, 0, "PRESET", surface::kSpec | surface::kToml, "model", 0, "",
     "a model preset from the catalog (`paratune advise --help` lists them); other [model] keys refine it", set_preset,
     [](const Scenario& s) { return of_text(s.model.name); }},
    {"model", "name", KnobType::Text, 0, 0, "NAME", surface::kToml | surface::kJson, "", 0, "",
     "the model's name (default: the preset's key, else \"custom\")",
     [](Scenario& s, const KnobValue& v) { s.model.name = as_text(v); },
     [](const Scenario& s) { return of_text(s.model.name); }},
    {"model", "layers", KnobType::Int, 1, 100000, "N", surface::kToml | surface::kJson, "", 0, "", "transformer layers",
     [](Scenario& s, const KnobValue& v) { s.model.layers = as_int(v); },
     [](const Scenario& s) { return of_int(s.model.layers); }},
    {"model", "hidden", KnobType::Int, 1, 1048576, "N", surface::kToml | surface::kJson, "", 0, "", "hidden size",
     [](Scenario& s, const KnobValue& v) { s.model.hidden = as_int(v); },
     [](const Scenario& s) { return of_int(s.model.hidden); }},
    {"model", "heads", KnobType::Int, 1, 65536, "N", surface::kToml | surface::kJson, "", 0, "", "attention heads",
     [](Scenario& s, const KnobValue& v) { s.model.heads = as_int(v); },
     [](const Scenario& s) { return of_int(s.model.heads); }},
    {"model", "kv_heads", KnobType::Int, 1, 65536, "N", surface::kToml | surface::kJson, "", 0, "",
     "key/value heads (grouped-query attention; default: heads)",
     [](Scenario& s, const KnobValue& v) { s.model.kv_heads = as_int(v); },
     [](const Scenario& s) { return of_int(s.model.kv_heads); }},
    {"model", "ffn_hidden", KnobType::Int, 1, 4194304, "N", surface::kToml | surface::kJson, "", 0, "",
     "FFN hidden size (default 4 x hidden)", [](Scenario& s, const KnobValue& v) { s.model.ffn_hidden = as_int(v); },
     [](const Scenario& s) { return of_int(s.model.ffn_hidden); }},
    {"model", "vocab", KnobType::Int, 1, 16777216, "N", surface::kToml | surface::kJson, "", 0, "", "vocabulary size",
     [](Scenario& s, const KnobValue& v) { s.model.vocab = as_int(v); },
     [](const Scenario& s) { return of_int(s.model.vocab); }},
    {"model", "seq_len", KnobType::Int, 1, 16777216, "N", surface::kSpec | surface::kToml | surface::kJson, "seq",
     4194304, "", "sequence length", [](Scenario& s, const KnobValue& v) { s.model.seq_len = as_int(v); },
     [](const Scenario& s) { return of_int(s.model.seq_len); }},
    {"model", "gated_mlp", KnobType::Bool, 0, 0, "", surface::kToml | surface::kJson, "", 0, "",
     "SwiGLU-style MLP (three matrices)", [](Scenario& s, const KnobValue& v) { s.model.gated_mlp = as_bool(v); },
     [](const Scenario& s) { return KnobValue{s.model.gated_mlp}; }},
    {"model", "tied_embeddings", KnobType::Bool, 0, 0, "", surface::kToml | surface::kJson, "", 0, "",
     "input and output embeddings shared",
     [](Scenario& s, const KnobValue& v) { s.model.tied_embeddings = as_bool(v); },
     [](const Scenario& s) { return KnobValue{s.model.tied_embeddings}; }},
    {"model", "dropout", KnobType::Bool, 0, 0, "", surface::kToml | surface::kJson, "", 0, "",
     "hidden/attention dropout (masks kept per layer)",
     [](Scenario& s, const KnobValue& v) { s.model.dropout = as_bool(v); },
     [](const Scenario& s) { return KnobValue{s.model.dropout}; }},
    {"model", "head_dim", KnobType::Int, 1, 65536, "N", surface::kToml | surface::kJson, "", 0, "",
     "attention head dimension when not hidden/heads (Megatron --kv-channels)",
     [](Scenario& s, const KnobValue& v) { s.model.head_dim = as_int(v); },
     [](const Scenario& s) { return s.model.head_dim > 0 ? of_int(s.model.head_dim) : KnobValue{}; }},
    {"model", "moe_experts", KnobType::Int, 2, 65536, "N", surface::kToml | surface::kJson, "", 0, "",
     "mixture of experts: routed experts per MoE layer",
     [](Scenario& s, const KnobValue& v) { s.model.moe_experts = as_int(v); },
     [](const Scenario& s) { return s.model.is_moe() ? of_int(s.model.moe_experts) : KnobValue{}; }},
    {"model", "moe_top_k", KnobType::Int, 1, 65536, "N", surface::kToml | surface::kJson, "", 0, "",
     "routed experts per token", [](Scenario& s, const KnobValue& v) { s.model.moe_top_k = as_int(v); },
     [](const Scenario& s) { return s.model.is_moe() ? of_int(s.model.moe_top_k) : KnobValue{}; }},
    {"model", "moe_ffn_hidden", KnobType::Int, 1, 4194304, "N", surface::kToml | surface::kJson, "", 0, "",
     "one routed expert's FFN hidden size (default ffn_hidden)",
     [](Scenario& s, const KnobValue& v) { s.model.moe_ffn_hidden = as_int(v); },
     [](const Scenario& s) { return s.model.is_moe() ? of_int(s.model.moe_ffn_hidden) : KnobValue{}; }},
    {"model", "moe_shared_experts", KnobType::Int, 0, 1024, "N", surface::kToml | surface::kJson, "", 0, "",
     "shared experts every token passes through",
     [](Scenario& s, const KnobValue& v) { s.model.moe_shared_experts = as_int(v); },
     [](const Scenario& s) { return s.model.is_moe() ? of_int(s.model.moe_shared_experts) : KnobValue{}; }},
    {"model", "moe_shared_ffn_hidden", KnobType::Int, 1, 4194304, "N", surface::kToml | surface::kJson, "", 0, "",
     "one shared expert's FFN hidden size (default moe_ffn_hidden)",
     [](Scenario& s, const KnobValue& v) { s.model.moe_shared_ffn_hidden = as_int(v); },
     [](const Scenario& s) { return s.model.is_moe() ? of_int(s.model.moe_shared_ffn_hidden) : KnobValue{}; }},
    {"model", "moe_dense_layers", KnobType::Int, 0, 100000, "N", surface::kToml | surface::kJson, "", 0, "",
     "leading dense layers before the MoE layers",
     [](Scenario& s, const KnobValue& v) { s.model.moe_dense_layers = as_int(v); },
     [](const Scenario& s) { return s.model.is_moe() ? of_int(s.model.moe_dense_layers) : KnobValue{}; }},
    {"model", "moe_capacity_factor", KnobType::Number, 0, kInf, "X", surface::kToml | surface::kJson, "", 0, "",
     "tokens per expert over the fair share before dropping; 0 = dropless, else at least 1",
     [](Scenario& s, const KnobValue& v) { s.model.moe_capacity_factor = as_num(v); },
     [](const Scenario& s) { return s.model.is_moe() ? KnobValue{s.model.moe_capacity_factor} : KnobValue{}; }},
    {"model", "moe_pad_to_capacity", KnobType::Bool, 0, 0, "", surface::kToml | surface::kJson, "", 0, "",
     "pad every expert's input to its capacity (needs moe_capacity_factor; Megatron-Core, not with DeepEP)",
     [](Scenario& s, const KnobValue& v) { s.model.moe_pad_to_capacity = as_bool(v); },
     [](const Scenario& s) { return s.model.is_moe() ? KnobValue{s.model.moe_pad_to_capacity} : KnobValue{}; }},
    {"model", "moe_router", KnobType::Enum, 0, 0, "aux_loss|aux_loss_free", surface::kToml | surface::kJson, "", 0, "",
     "load balancing: an auxiliary loss, or a per-expert bias (DeepSeek-V3)",
     [](Scenario& s, const KnobValue& v) { s.model.moe_router = moe_router_from_string(as_text(v)); },
     [](const Scenario& s) { return s.model.is_moe() ? of_enum(s.model.moe_router) : KnobValue{}; }},
    {"model", "moe_router_groups", KnobType::Int, 0, 65536, "N", surface::kToml | surface::kJson, "", 0, "",
     "group-limited routing: experts in N equal groups, a token's experts from its best moe_router_group_topk "
     "(0 = unrestricted; DeepSeek-V3: 8)",
     [](Scenario& s, const KnobValue& v) { s.model.moe_router_groups = as_int(v); },
     [](const Scenario& s) { return s.model.is_moe() ? of_int(s.model.moe_router_groups) : KnobValue{}; }},
    {"model", "moe_router_group_topk", KnobType::Int, 0, 65536, "N", surface::kToml | surface::kJson, "", 0, "",
     "groups a token's experts are drawn from (with moe_router_groups; DeepSeek-V3: 4)",
     [](Scenario& s, const KnobValue& v) { s.model.moe_router_group_topk = as_int(v); },
     [](const Scenario& s) { return s.model.is_moe() ? of_int(s.model.moe_router_group_topk) : KnobValue{}; }},
    {"model", "q_lora_rank", KnobType::Int, 0, 1048576, "N", surface::kToml | surface::kJson, "", 0, "",
     "multi-head latent attention: query compression rank (0 = direct)",
     [](Scenario& s, const KnobValue& v) { s.model.q_lora_rank = as_int(v); },
     [](const Scenario& s) { return s.model.is_mla() ? of_int(s.model.q_lora_rank) : KnobValue{}; }},
    {"model", "kv_lora_rank", KnobType::Int, 0, 1048576, "N", surface::kToml | surface::kJson, "", 0, "",
     "key/value compression rank (> 0: latent attention)",
     [](Scenario& s, const KnobValue& v) { s.model.kv_lora_rank = as_int(v); },
     [](const Scenario& s) { return s.model.is_mla() ? of_int(s.model.kv_lora_rank) : KnobValue{}; }},
    {"model", "qk_head_dim", KnobType::Int, 1, 65536, "N", surface::kToml | surface::kJson, "", 0, "",
     "per-head query/key dimension without the rotary part",
     [](Scenario& s, const KnobValue& v) { s.model.qk_head_dim = as_int(v); },
     [](const Scenario& s) { return s.model.is_mla() ? of_int(s.model.qk_head_dim) : KnobValue{}; }},
    {"model", "qk_rope_head_dim", KnobType::Int, 0, 65536, "N", surface::kToml | surface::kJson, "", 0, "",
     "rotary part of the query/key head dimension",
     [](Scenario& s, const KnobValue& v) { s.model.qk_rope_head_dim = as_int(v); },
     [](const Scenario& s) { return s.model.is_mla() ? of_int(s.model.qk_rope_head_dim) : KnobValue{}; }},
    {"model", "v_head_dim", KnobType::Int, 1, 65536, "N", surface::kToml | surface::kJson, "", 0, "",
     "per-head value dimension", [](Scenario& s, const KnobValue& v) { s.model.v_head_dim = as_int(v); },
     [](const Scenario& s) { return s.model.is_mla() ? of_int(s.model.v_head_dim) : KnobValue{}; }},
    {"model", "mtp_layers", KnobType::Int, 0, 16, "N", surface::kToml | surface::kJson, "", 0, "",
     "multi-token-prediction modules after the last layer",
     [](Scenario& s, const KnobValue& v) { s.model.mtp_layers = as_int(v); },
     [](const Scenario& s) { return s.model.mtp_layers > 0 ? of_int(s.model.mtp_layers) : KnobValue{}; }},
    {"training", "global_batch", KnobType::Int, 1, 1073741824, "N", surface::kSpec | surface::kToml | surface::kJson,
     "gbs", 16777216, "", "sequences per optimizer step (the job's default: about 4 Mi tokens)",
     [](Scenario& s, const KnobValue& v) { s.training.global_batch = as_int(v); },
     [](const Scenario& s) { return of_int(s.training.global_batch); }},
    {"training", "precision", KnobType::Enum, 0, 0, "bf16|fp16|fp8", surface::kSpec | surface::kToml | surface::kJson,
     "", 0, "", "mixed precision (default bf16)",
     [](Scenario& s, const KnobValue& v) { s.training.precision = precision_from_string(as_text(v)); },
     [](const Scenario& s) { return of_enum(s.training.precision); }},
    {"training", "framework", KnobType::Enum, 0, 0, "megatron|deepspeed|fsdp|torchtitan|nemo|automodel",
     surface::kSpec | surface::kToml | surface::kJson, "", 0, "", "the training framework (default megatron)",
     [](Scenario& s, const KnobValue& v) { set_framework(s.training, as_text(v)); },
     [](const Scenario& s) { return of_enum(s.training.framework); }},
    {"training", "framework_version", KnobType::Text, 0, 0, "ID", surface::kSpec | surface::kToml | surface::kJson, "",
     0, "",
     "the framework's version the arguments are for (docs/frameworks.md; default: the site's, else the framework's)",
     [](Scenario& s, const KnobValue& v) { s.training.framework_version = as_text(v); },
     [](const Scenario& s) {
       return s.training.framework_version.empty() ? KnobValue{} : of_text(s.training.framework_version);
     }},
    {"training", "overlap_dp_comm", KnobType::Bool, 0, 0, "", surface::kToml | surface::kJson, "", 0, "",
     "gradient reduce / parameter gather overlapped with compute (default true)",
     [](Scenario& s, const KnobValue& v) { s.training.overlap_dp_comm = as_bool(v); },
     [](const Scenario& s) { return of(s.training.overlap_dp_comm); }},
    {"training", "flash_attention", KnobType::Bool, 0, 0, "", surface::kToml | surface::kJson, "", 0, "",
     "a fused attention kernel (default true; attention = none is false)",
     [](Scenario& s, const KnobValue& v) { s.training.flash_attention = as_bool(v); },
     [](const Scenario& s) { return of(s.training.flash_attention); }},
    {"training", "attention", KnobType::Enum, 0, 0, "flash2|flash3|cudnn|none",
     surface::kSpec | surface::kToml | surface::kJson, "", 0, "", "the attention kernel (default: the framework's own)",
     [](Scenario& s, const KnobValue& v) { s.training.attention = attention_from_string(as_text(v)); },
     [](const Scenario& s) { return of(s.training.attention); }},
    {"training", "fp8_recipe", KnobType::Enum, 0, 0, "delayed|tensorwise|rowwise|blockwise|mxfp8",
     surface::kSpec | surface::kToml | surface::kJson, "", 0, "", "the FP8 scaling recipe (with precision fp8)",
     [](Scenario& s, const KnobValue& v) { s.training.fp8_recipe = fp8_recipe_from_string(as_text(v)); },
     [](const Scenario& s) { return of(s.training.fp8_recipe); }},
    {"training", "compile", KnobType::Bool, 0, 0, "", surface::kSpec | surface::kToml | surface::kJson, "", 0, "",
     "compile the model with torch.compile (FSDP, torchtitan, automodel)",
     [](Scenario& s, const KnobValue& v) { s.training.compile = as_bool(v); },
     [](const Scenario& s) { return of(s.training.compile); }},
    {"training", "tp_comm_overlap", KnobType::Bool, 0, 0, "", surface::kSpec | surface::kToml | surface::kJson, "", 0,
     "tp_overlap", "TP communication overlapped with GEMMs (Megatron --tp-comm-overlap, torchtitan/automodel async TP)",
     [](Scenario& s, const KnobValue& v) { s.training.tp_comm_overlap = as_bool(v); },
     [](const Scenario& s) { return of(s.training.tp_comm_overlap); }},
    {"training", "grad_reduce_fp32", KnobType::Bool, 0, 0, "", surface::kToml | surface::kJson, "", 0, "",
     "gradients accumulated and reduced in fp32 (default: the framework's)",
     [](Scenario& s, const KnobValue& v) { s.training.grad_reduce_fp32 = as_bool(v); },
     [](const Scenario& s) { return of(s.training.grad_reduce_fp32); }},
    {"training", "fp8_param_gather", KnobType::Bool, 0, 0, "", surface::kToml | surface::kJson, "", 0, "",
     "FP8 primary weights, gathered in FP8 (with precision fp8; default off)",
     [](Scenario& s, const KnobValue& v) { s.training.fp8_param_gather = as_bool(v); },
     [](const Scenario& s) { return of(s.training.fp8_param_gather); }},
    {"training", "cross_entropy_fusion", KnobType::Enum, 0, 0, "off|native|te", surface::kToml | surface::kJson, "", 0,
     "", "the loss kernel (Megatron/NeMo --cross-entropy-loss-fusion; default: the framework's own)",
     [](Scenario& s, const KnobValue& v) { s.training.cross_entropy_fusion = loss_fusion_from_string(as_text(v)); },
     [](const Scenario& s) { return of(s.training.cross_entropy_fusion); }},
    {"training", "moe_a2a_overlap", KnobType::Bool, 0, 0, "", surface::kToml | surface::kJson, "", 0, "",
     "MoE dispatch/combine overlapped with another micro-batch's compute (default on with EP > 1)",
     [](Scenario& s, const KnobValue& v) { s.training.moe_a2a_overlap = as_bool(v); },
     [](const Scenario& s) { return of(s.training.moe_a2a_overlap); }},
    {"training", "moe_force_balance", KnobType::Bool, 0, 0, "", surface::kToml | surface::kJson, "", 0, "",
     "routing forced to a uniform spread (benchmarks; default off)",
     [](Scenario& s, const KnobValue& v) { s.training.moe_force_balance = as_bool(v); },
     [](const Scenario& s) { return of(s.training.moe_force_balance); }},
    {"training", "pipeline_split", KnobType::Enum, 0, 0, "layers|balanced", surface::kToml | surface::kJson, "", 0, "",
     "layers per pipeline stage: equal counts, or balanced by cost (nanotron)",
     [](Scenario& s, const KnobValue& v) { s.training.pipeline_split = pipeline_split_from_string(as_text(v)); },
     [](const Scenario& s) { return of(s.training.pipeline_split); }},
    {"training", "overlap_param_gather", KnobType::Bool, 0, 0, "", surface::kToml | surface::kJson, "", 0, "",
     "ZeRO-1/2: the parameters' all-gather overlapped with the next forward (default: false for DeepSpeed)",
     [](Scenario& s, const KnobValue& v) { s.training.overlap_param_gather = as_bool(v); },
     [](const Scenario& s) { return of(s.training.overlap_param_gather); }},
    {"cluster", "gpu", KnobType::Text, 0, 0, "GPU", surface::kToml | surface::kJson, "", 0, "",
     "a GPU catalog key (`paratune advise --help` lists them), or describe it in [cluster.gpu_spec]",
     [](Scenario& s, const KnobValue& v) { s.cluster.gpu = as_text(v); },
     [](const Scenario& s) { return of_text(s.cluster.gpu); }},
    {"cluster", "nodes", KnobType::Int, 1, 1048576, "N", surface::kToml | surface::kJson, "", 0, "",
     "nodes in the allocation", [](Scenario& s, const KnobValue& v) { s.cluster.nodes = as_int(v); },
     [](const Scenario& s) { return of_int(s.cluster.nodes); }},
    {"cluster", "gpus_per_node", KnobType::Int, 1, 1024, "N", surface::kToml | surface::kJson, "", 0, "",
     "GPUs per node", [](Scenario& s, const KnobValue& v) { s.cluster.gpus_per_node = as_int(v); },
     [](const Scenario& s) { return of_int(s.cluster.gpus_per_node); }},
    {"cluster", "nvlink_domain", KnobType::Int, 1, 65536, "N", surface::kToml | surface::kJson, "", 0, "",
     "GPUs sharing NVLink/NVSwitch (default: gpus_per_node for SXM/NVSwitch/MI300X, else 1)",
     [](Scenario& s, const KnobValue& v) { s.cluster.nvlink_domain = as_int(v); },
     [](const Scenario& s) { return of_int(s.cluster.nvlink_domain); }},
    {"cluster", "host_memory_gib", KnobType::Number, 0, kInf, "GIB", surface::kToml | surface::kJson, "", 0, "",
     "host memory per node the job may use, GiB (bounds CPU activation offload; default: the GPU's reference "
     "system, e.g. DGX H100 2 TB for 8 GPUs, GB200 NVL72 17 TB for 72)",
     [](Scenario& s, const KnobValue& v) { s.cluster.host_memory_gib = as_num(v); },
     [](const Scenario& s) { return KnobValue{s.cluster.host_memory_gib}; }},
    {"cluster", "nic_count", KnobType::Int, 0, 1024, "N", surface::kToml | surface::kJson, "", 0, "",
     "compute NICs per node", [](Scenario& s, const KnobValue& v) { s.cluster.nic_count = as_int(v); },
     [](const Scenario& s) { return of_int(s.cluster.nic_count); }},
    {"cluster", "nic_gbps", KnobType::Number, 0, kInf, "GBPS", surface::kToml | surface::kJson, "", 0, "",
     "each compute NIC's rate in Gb/s", [](Scenario& s, const KnobValue& v) { s.cluster.nic_gbps = as_num(v); },
     [](const Scenario& s) { return KnobValue{s.cluster.nic_gbps}; }},
    {"cluster", "fabric", KnobType::Enum, 0, 0, "infiniband|roce|efa|slingshot|omnipath|ethernet",
     surface::kToml | surface::kJson, "", 0, "", "the compute fabric",
     [](Scenario& s, const KnobValue& v) { s.cluster.fabric = fabric_from_string(as_text(v)); },
     [](const Scenario& s) { return of_enum(s.cluster.fabric); }},
    {"cluster", "topology", KnobType::Text, 0, 0, "FILE", surface::kToml, "", 0, "",
     "hwloc XML, NCCL topology or `paratune probe --json` file the GPU and NIC facts come from (relative to the "
     "scenario file)",
     [](Scenario& s, const KnobValue& v) { s.cluster.topology_file = as_text(v); },
     [](const Scenario& s) { return of_text(s.cluster.topology_file); }},
    {"cluster", "nccl_topo_file", KnobType::Text, 0, 0, "FILE", surface::kToml, "", 0, "",
     "a vendor NCCL topology file to hand to NCCL",
     [](Scenario& s, const KnobValue& v) { s.cluster.nccl_topo_file = as_text(v); },
     [](const Scenario& s) { return of_text(s.cluster.nccl_topo_file); }},
    {"cluster", "rail_aligned", KnobType::Bool, 0, 0, "", surface::kToml | surface::kJson, "", 0, "",
     "one NIC per GPU on its own rail (DGX-style); default true, assumed",
     [](Scenario& s, const KnobValue& v) { s.cluster.rail_aligned = as_bool(v); },
     [](const Scenario& s) { return KnobValue{s.cluster.rail_aligned}; }},
    {"cluster", "nvls", KnobType::Bool, 0, 0, "", surface::kToml | surface::kJson, "", 0, "",
     "NVLink SHARP available and healthy", [](Scenario& s, const KnobValue& v) { s.cluster.nvls = as_bool(v); },
     [](const Scenario& s) { return KnobValue{s.cluster.nvls}; }},
    {"cluster", "socket_ifname", KnobType::Text, 0, 0, "IFNAME", surface::kToml, "", 0, "",
     "the bootstrap/socket interface (NCCL_SOCKET_IFNAME)",
     [](Scenario& s, const KnobValue& v) { s.cluster.socket_ifname = as_text(v); },
     [](const Scenario& s) { return of_text(s.cluster.socket_ifname); }},
    {"cluster", "gpu_nic_path", KnobType::Word, 0, 0, "PIX|PXB|P2C|PHB|NODE|SYS", surface::kToml | surface::kJson, "",
     0, "", "the worst GPU-to-nearest-NIC path class (as NCCL_NET_GDR_LEVEL)",
     [](Scenario& s, const KnobValue& v) { s.cluster.gpu_nic_path = as_text(v); },
     [](const Scenario& s) { return of_text(s.cluster.gpu_nic_path); }},
    {"cluster", "cloud", KnobType::Text, 0, 0, "NAME", surface::kToml, "", 0, "",
     "the cloud platform the nodes are on (plan.json: the probe's)",
     [](Scenario& s, const KnobValue& v) { s.cluster.cloud = as_text(v); },
     [](const Scenario& s) { return s.cluster.cloud ? of_text(*s.cluster.cloud) : KnobValue{}; }},
    {"cluster", "gpu_spec", KnobType::Table, 0, 0, "", surface::kToml | surface::kJson, "", 0, "",
     "overrides of the GPU catalog: [cluster.gpu_spec]", nullptr, nullptr},
    {"cluster", "nic", KnobType::Table, 0, 0, "", surface::kToml, "", 0, "",
     "one [[cluster.nic]] table per NIC, as the probe reports them (plan.json: cluster.nics)", nullptr, nullptr},
    {"cluster", "placement", KnobType::Table, 0, 0, "", surface::kToml, "", 0, "",
     "the nodes under Slurm's leaf switches: [cluster.placement]", nullptr, nullptr},
    {"cluster", "te_version", KnobType::Text, 0, 0, "X.Y", surface::kToml | surface::kJson, "", 0, "",
     "Transformer Engine's version on the nodes (what its fused loss keeps; absent: not stated)", set_te_version,
     [](const Scenario& s) { return s.cluster.te_version.empty() ? KnobValue{} : of_text(s.cluster.te_version); }},
    {"cluster", "kernels", KnobType::List, 0, 0, "deepep|hybridep|te|flash3", surface::kToml, "", 0, "",
     "the optional kernels installed ([] = none; absent: not stated)", set_kernels, get_kernels},
    {"cluster.gpu_spec", "peak_tflops", KnobType::Number, 0, kInf, "X", surface::kToml | surface::kJson, "", 0, "",
     "peak dense 16-bit TFLOPS (0 = the catalog's)",
     [](Scenario& s, const KnobValue& v) { s.cluster.peak_tflops = as_num(v); },
     [](const Scenario& s) { return s.cluster.peak_tflops > 0 ? KnobValue{s.cluster.peak_tflops} : KnobValue{}; }},
    {"cluster.gpu_spec", "memory_gib", KnobType::Number, 0, kInf, "X", surface::kToml | surface::kJson, "", 0, "",
     "memory in GiB (0 = the catalog's)", [](Scenario& s, const KnobValue& v) { s.cluster.memory_gib = as_num(v); },
     [](const Scenario& s) { return s.cluster.memory_gib > 0 ? KnobValue{s.cluster.memory_gib} : KnobValue{}; }},
    {"cluster.gpu_spec", "hbm_tbps", KnobType::Number, 0, kInf, "X", surface::kToml | surface::kJson, "", 0, "",
     "HBM bandwidth in TB/s (0 = the catalog's)",
     [](Scenario& s, const KnobValue& v) { s.cluster.hbm_tbps = as_num(v); },
     [](const Scenario& s) { return s.cluster.hbm_tbps > 0 ? KnobValue{s.cluster.hbm_tbps} : KnobValue{}; }},
    {"cluster.gpu_spec", "nvlink_gbps", KnobType::Number, 0, kInf, "X", surface::kToml | surface::kJson, "", 0, "",
     "NVLink bandwidth per GPU in GB/s (0 = the catalog's)",
     [](Scenario& s, const KnobValue& v) { s.cluster.nvlink_gbps = as_num(v); },
     [](const Scenario& s) { return s.cluster.nvlink_gbps > 0 ? KnobValue{s.cluster.nvlink_gbps} : KnobValue{}; }},
    {"cluster.nic", "name", KnobType::Text, 0, 0, "NAME", surface::kToml | surface::kJson, "", 0, "",
     "the device name, e.g. mlx5_0 (required)", [](Scenario& s, const KnobValue& v) { nic(s).name = as_text(v); },
     [](const Scenario& s) { return s.cluster.nics.empty() ? KnobValue{} : of_text(s.cluster.nics.front().name); }},
    {"cluster.nic", "port", KnobType::Int, 1, 255, "N", surface::kToml | surface::kJson, "", 0, "",
     "the port (default 1)", [](Scenario& s, const KnobValue& v) { nic(s).port = as_int(v); },
     [](const Scenario& s) { return s.cluster.nics.empty() ? KnobValue{} : of_int(s.cluster.nics.front().port); }},
    {"cluster.nic", "gbps", KnobType::Number, 0, kInf, "GBPS", surface::kToml | surface::kJson, "", 0, "",
     "its rate in Gb/s", [](Scenario& s, const KnobValue& v) { nic(s).gbps = as_num(v); },
     [](const Scenario& s) { return s.cluster.nics.empty() ? KnobValue{} : KnobValue{s.cluster.nics.front().gbps}; }},
    {"cluster.nic", "active", KnobType::Bool, 0, 0, "", surface::kToml | surface::kJson, "", 0, "",
     "its link is up (default true)", [](Scenario& s, const KnobValue& v) { nic(s).active = as_bool(v); },
     [](const Scenario& s) { return s.cluster.nics.empty() ? KnobValue{} : KnobValue{s.cluster.nics.front().active}; }},
    {"cluster.nic", "gpu_path", KnobType::Text, 0, 0, "CLASS", surface::kToml | surface::kJson, "", 0, "",
     "path class to its nearest GPU (PIX, PXB, PHB, SYS)",
     [](Scenario& s, const KnobValue& v) { nic(s).gpu_path = as_text(v); },
     [](const Scenario& s) { return s.cluster.nics.empty() ? KnobValue{} : of_text(s.cluster.nics.front().gpu_path); }},
    {"cluster.nic", "netdev", KnobType::Text, 0, 0, "IFNAME", surface::kToml, "", 0, "", "its network interface",
     [](Scenario& s, const KnobValue& v) { nic(s).netdev = as_text(v); },
     [](const Scenario& s) { return s.cluster.nics.empty() ? KnobValue{} : of_text(s.cluster.nics.front().netdev); }},
    {"cluster.nic", "gid_index", KnobType::Int, 0, 255, "N", surface::kToml, "", 0, "", "RoCE GID index",
     [](Scenario& s, const KnobValue& v) { nic(s).gid_index = as_int(v); },
     [](const Scenario& s) {
       return s.cluster.nics.empty() || !s.cluster.nics.front().gid_index ? KnobValue{}
                                                                          : of_int(*s.cluster.nics.front().gid_index);
     }},
    {"cluster.placement", "nodes_per_leaf", KnobType::List, 1, 1048576, "N", surface::kToml, "", 0, "",
     "the nodes under each leaf switch in rank order, e.g. [2, 2] (they add up to nodes)", nullptr,
     [](const Scenario& s) {
       return s.cluster.placement ? of_text(join_ints(s.cluster.placement->nodes_per_leaf)) : KnobValue{};
     }},
    {"cluster.placement", "oversubscription", KnobType::Number, 1, 64, "X", surface::kToml, "", 0, "",
     "the oversubscription above the leaves (1 = non-blocking, the default)", nullptr,
     [](const Scenario&
            s) { return s.cluster.placement ? KnobValue{s.cluster.placement->oversubscription} : KnobValue{}; }},
    {"parallel", "tp", KnobType::Int, 1, 65536, "N", surface::kSpec | surface::kToml | surface::kJson, "", 1024, "",
     "fix the tensor-parallel degree (otherwise searched)",
     [](Scenario& s, const KnobValue& v) { s.parallel.tp = as_int(v); },
     [](const Scenario& s) { return of(s.parallel.tp); }},
    {"parallel", "pp", KnobType::Int, 1, 65536, "N", surface::kSpec | surface::kToml | surface::kJson, "", 1024, "",
     "fix the pipeline-parallel degree", [](Scenario& s, const KnobValue& v) { s.parallel.pp = as_int(v); },
     [](const Scenario& s) { return of(s.parallel.pp); }},
    {"parallel", "dp", KnobType::Int, 1, 16777216, "N", surface::kToml | surface::kJson, "", 0, "",
     "fix the data-parallel degree", [](Scenario& s, const KnobValue& v) { s.parallel.dp = as_int(v); },
     [](const Scenario& s) { return of(s.parallel.dp); }},
    {"parallel", "cp", KnobType::Int, 1, 65536, "N", surface::kSpec | surface::kToml | surface::kJson, "", 1024, "",
     "fix the context-parallel degree", [](Scenario& s, const KnobValue& v) { s.parallel.cp = as_int(v); },
     [](const Scenario& s) { return of(s.parallel.cp); }},
    {"parallel", "virtual_stages", KnobType::Int, 1, 1024, "N", surface::kToml | surface::kJson, "", 0, "",
     "fix the virtual pipeline stages per rank (interleaved schedule)",
     [](Scenario& s, const KnobValue& v) { s.parallel.virtual_stages = as_int(v); },
     [](const Scenario& s) { return of(s.parallel.virtual_stages); }},
    {"parallel", "pipeline_schedule", KnobType::Enum, 0, 0, "1f1b|interleaved|gpipe|zero_bubble|zbv",
     surface::kSpec | surface::kToml | surface::kJson, "", 0, "",
     "fix the pipeline schedule (gpipe, zero_bubble, zbv: torchtitan and automodel only; unset: 1f1b, interleaved with "
     "virtual_stages > 1)",
     [](Scenario& s, const KnobValue& v) { s.parallel.pipeline_schedule = pipeline_schedule_from_string(as_text(v)); },
     [](const Scenario& s) { return of(s.parallel.pipeline_schedule); }},
    {"parallel", "micro_batch", KnobType::Int, 1, 1048576, "N", surface::kSpec | surface::kToml | surface::kJson, "mbs",
     65536, "", "fix the micro-batch in sequences",
     [](Scenario& s, const KnobValue& v) { s.parallel.micro_batch = as_int(v); },
     [](const Scenario& s) { return of(s.parallel.micro_batch); }},
    {"parallel", "zero_stage", KnobType::Int, 0, 3, "N", surface::kSpec | surface::kToml | surface::kJson, "zero", 0,
     "", "fix the ZeRO stage", [](Scenario& s, const KnobValue& v) { s.parallel.zero_stage = as_int(v); },
     [](const Scenario& s) { return of(s.parallel.zero_stage); }},
    {"parallel", "recompute", KnobType::Enum, 0, 0, "none|selective|full",
     surface::kSpec | surface::kToml | surface::kJson, "", 0, "", "fix activation recomputation",
     [](Scenario& s, const KnobValue& v) { s.parallel.recompute = recompute_from_string(as_text(v)); },
     [](const Scenario& s) { return of(s.parallel.recompute); }},
    {"parallel", "sequence_parallel", KnobType::Bool, 0, 0, "", surface::kToml | surface::kJson, "", 0, "",
     "fix sequence parallelism (with tp > 1)",
     [](Scenario& s, const KnobValue& v) { s.parallel.sequence_parallel = as_bool(v); },
     [](const Scenario& s) { return of(s.parallel.sequence_parallel); }},
    {"parallel", "ep", KnobType::Int, 1, 65536, "N", surface::kSpec | surface::kToml | surface::kJson, "", 0, "",
     "mixture of experts: fix the expert-parallel degree",
     [](Scenario& s, const KnobValue& v) { s.parallel.ep = as_int(v); },
     [](const Scenario& s) { return of(s.parallel.ep); }},
    {"parallel", "etp", KnobType::Int, 1, 1024, "N", surface::kSpec | surface::kToml | surface::kJson, "", 0, "",
     "mixture of experts: fix the expert tensor-parallel degree",
     [](Scenario& s, const KnobValue& v) { s.parallel.etp = as_int(v); },
     [](const Scenario& s) { return of(s.parallel.etp); }},
    {"parallel", "dispatcher", KnobType::Enum, 0, 0, "alltoall|allgather|flex",
     surface::kSpec | surface::kToml | surface::kJson, "", 0, "",
     "mixture of experts: fix the token dispatcher (flex: DeepEP or HybridEP)",
     [](Scenario& s, const KnobValue& v) { s.parallel.dispatcher = dispatcher_from_string(as_text(v)); },
     [](const Scenario& s) { return of(s.parallel.dispatcher); }},
    {"parallel", "shard_group", KnobType::Int, 0, 1048576, "N", surface::kToml | surface::kJson, "", 0, "",
     "sharding scope in data-parallel ranks (ZeRO-2/3: FSDP/torchtitan/automodel HSDP; ZeRO-1: megatron/nemo "
     "distributed-optimizer instances); 0 = all of them",
     [](Scenario& s, const KnobValue& v) { s.parallel.shard_group = as_int(v); },
     [](const Scenario& s) { return of(s.parallel.shard_group); }},
    {"parallel", "first_stage_layers", KnobType::Int, 1, 1048576, "N", surface::kToml | surface::kJson, "", 0, "",
     "transformer layers on the first pipeline rank (with last_stage_layers)",
     [](Scenario& s, const KnobValue& v) { s.parallel.first_stage_layers = as_int(v); },
     [](const Scenario& s) { return of(s.parallel.first_stage_layers); }},
    {"parallel", "last_stage_layers", KnobType::Int, 1, 1048576, "N", surface::kToml | surface::kJson, "", 0, "",
     "transformer layers on the last pipeline rank (with first_stage_layers)",
     [](Scenario& s, const KnobValue& v) { s.parallel.last_stage_layers = as_int(v); },
     [](const Scenario& s) { return of(s.parallel.last_stage_layers); }},
    {"parallel", "optimizer_moments", KnobType::Enum, 0, 0, "fp32|bf16|fp16|fp8",
     surface::kSpec | surface::kToml | surface::kJson, "", 0, "",
     "Adam's moments' dtype (Megatron/NeMo precision-aware optimizer)",
     [](Scenario& s, const KnobValue& v) { s.parallel.optimizer_moments = state_dtype_from_string(as_text(v)); },
     [](const Scenario& s) { return of(s.parallel.optimizer_moments); }},
    {"parallel", "main_params", KnobType::Enum, 0, 0, "fp32|fp16", surface::kSpec | surface::kToml | surface::kJson, "",
     0, "", "the main parameters' dtype (precision-aware optimizer)",
     [](Scenario& s, const KnobValue& v) { s.parallel.main_params = state_dtype_from_string(as_text(v)); },
     [](const Scenario& s) { return of(s.parallel.main_params); }},
    {"parallel", "recompute_modules", KnobType::List, 0, 0,
     "core_attn|moe_act|layernorm|mla_up_proj|mlp|moe|shared_experts", surface::kSpec | surface::kToml | surface::kJson,
     "", 0, "", "with selective recompute: the modules rebuilt in the backward pass (Megatron's names)",
     [](Scenario& s, const KnobValue& v) { s.parallel.recompute_modules = recompute_modules_from_string(as_text(v)); },
     [](const Scenario& s) {
       return s.parallel.recompute_modules ? of_text(recompute_modules_to_string(*s.parallel.recompute_modules))
                                           : KnobValue{};
     }},
    {"parallel", "offload_layers", KnobType::Int, 0, 1048576, "N", surface::kSpec | surface::kToml | surface::kJson, "",
     1024, "", "transformer layers whose activations go to host memory (Megatron main, NeMo; pp 1, no recompute)",
     [](Scenario& s, const KnobValue& v) { s.parallel.offload_layers = as_int(v); },
     [](const Scenario& s) { return of(s.parallel.offload_layers); }},
    {"job", "mode", KnobType::Word, 0, 0, "apply|suggest|off", surface::kSpec, "", 0, "",
     "what is injected: PARATUNE_* and NCCL/CUDA (apply), PARATUNE_* only (suggest), nothing (off)", nullptr, nullptr},
    {"job", "resume", KnobType::Text, 0, 0, "PLAN", surface::kSpec, "", 0, "",
     "the plan.json of the run whose checkpoints this one loads (relative: the submit directory)", nullptr, nullptr},
};

constexpr const char* kSections[] = {"model",       "training",          "cluster",  "cluster.gpu_spec",
                                     "cluster.nic", "cluster.placement", "parallel", "job"};

}  // namespace

std::span<const Knob> knobs() { return kKnobs; }

std::span<const char* const> knob_sections() { return kSections; }

std::vector<const Knob*> knobs_of(std::string_view section) {
  std::vector<const Knob*> out;
  for (const Knob& k : kKnobs)
    if (section == k.section) out.push_back(&k);
  return out;
}

const Knob* find_knob(std::string_view full_name) {
  for (const Knob& k : kKnobs)
    if (k.full_name() == full_name) return &k;
  return nullptr;
}

const Knob* find_spec_knob(std::string_view key) {
  for (const Knob& k : kKnobs)
    if (k.on(surface::kSpec) && !key.empty() &&
        (key == k.name || (*k.spec_key && key == k.spec_key) || (*k.alias && key == k.alias)))
      return &k;
  return nullptr;
}

std::vector<std::string> knob_values(const Knob& k) {
  std::vector<std::string> out;
  std::string_view v = k.values;
  while (!v.empty()) {
    const size_t bar = v.find('|');
    out.emplace_back(v.substr(0, bar));
    if (bar == std::string_view::npos) break;
    v.remove_prefix(bar + 1);
  }
  return out;
}

std::string knob_range(const Knob& k, bool spec) {
  auto num = [](double x) {
    if (x == static_cast<long>(x)) return std::to_string(static_cast<long>(x));
    return std::to_string(x);
  };
  switch (k.type) {
    case KnobType::Int:
    case KnobType::Number: {
      const double hi = spec && k.spec_hi > 0 ? k.spec_hi : k.hi;
      return hi == kInf ? ">= " + num(k.lo) : num(k.lo) + " to " + num(hi);
    }
    case KnobType::Bool: return spec ? "yes, no" : "true, false";
    case KnobType::Enum:
    case KnobType::Word:
    case KnobType::List: {
      std::string out;
      for (const auto& w : knob_values(k)) out += (out.empty() ? "" : ", ") + w;
      return out;
    }
    case KnobType::Text: return k.values;
    case KnobType::Table: return "[" + k.full_name() + "]";
  }
  return "";
}

}  // namespace paratune::advisor
