// Scenario: what is to be trained, how, and on what. Pure values (no I/O).
// The TOML form is a public contract (README, paratune.toml(5)); load_scenario_toml lives in scenario_toml.h.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "paratune/advisor/placement.h"

namespace paratune::advisor {

// Automodel: NVIDIA NeMo AutoModel, a PyTorch-native stack (FSDP2, torch.distributed.pipelining, DeepEP) priced
// as torchtitan's (stack_index).
enum class Framework { Megatron, DeepSpeed, Fsdp, Torchtitan, Nemo, Automodel };
enum class Precision { Bf16, Fp16, Fp8 };
enum class Recompute { None, Selective, Full };
// The attention kernel: FlashAttention-2, FlashAttention-3, cuDNN's fused attention (Transformer Engine), or the
// unfused matmul-softmax-matmul. Unset = the framework's default (docs/model.md, "software stack").
enum class Attention { Flash2, Flash3, Cudnn, None };
// FP8 scaling recipe: one scale per tensor (delayed amax history or current), per row, per 128x128 block, or
// MXFP8 (one 8-bit exponent per 32 elements: Blackwell tensor cores).
enum class Fp8Recipe { Delayed, Tensorwise, Rowwise, Blockwise, Mxfp8 };
// How the stack assigns transformer layers to pipeline stages: equal layer counts (Megatron, NeMo, DeepSpeed,
// torchtitan; the embedding on the first stage and the LM head on the last on top), or balanced by compute cost
// with the LM head counted as a block (nanotron's build_model: greedy over cumulative block costs).
enum class PipelineSplit { Layers, Balanced };
// How the language-model loss is computed: PyTorch/Megatron's unfused vocabulary-parallel cross entropy, Megatron's
// own fused kernel (--cross-entropy-fusion-impl native), or Transformer Engine's (te; TE >= 2.2), which before TE
// 2.18 writes the loss's gradient into the bf16 logits instead of keeping an fp32 softmax (docs/model.md §3).
enum class LossFusion { Off, Native, Te };
enum class Fabric { InfiniBand, RoCE, Efa, Slingshot, OmniPath, Ethernet };
// Mixture of experts. The router's load balancing: an auxiliary loss (Switch/GShard, Mixtral, Qwen3, gpt-oss), or
// aux-loss-free expert bias (DeepSeek-V3's sigmoid gate with a per-expert bias).
enum class MoeRouter { AuxLoss, AuxLossFree };
// How tokens reach their experts (Megatron-Core --moe-token-dispatcher-type): NCCL all-to-all over the EP group,
// all-gather + reduce-scatter of every token over it, or the flex dispatcher (DeepEP / HybridEP kernels: one copy per
// destination node over the network, forwarded over NVLink, few SMs).
enum class Dispatcher { AllToAll, AllGather, Flex };
// The pipeline schedule (docs/model.md §3, "pipeline schedules"): 1F1B (PipeDream-Flush, Narayanan et al. 2021),
// interleaved 1F1B (virtual stages), GPipe (all forwards, then all backwards: Huang et al. 2019), zero bubble
// (torch.distributed.pipelining's InterleavedZeroBubble, the ZB1P schedule of Qi et al. 2024 with interleaving)
// and ZBV (ZBVZeroBubble: the V-shaped zero-bubble schedule, two chunks per rank; Qi et al. §6).
enum class PipelineSchedule { OneFOneB, Interleaved, GPipe, ZeroBubble, Zbv };
// Optional kernels a framework uses when they are installed (not every site has them): DeepEP and HybridEP (the
// flex dispatcher's backends), NVIDIA Transformer Engine (Megatron-Core's FP8, fused cuDNN attention, TP
// communication overlap) and FlashAttention-3 (attention = "flash3").
enum class Kernel { DeepEP, HybridEP, TransformerEngine, FlashAttention3 };
// The dtype an optimizer state is kept in: Adam's moments (exp_avg, exp_avg_sq) and the main (master) parameters
// under Megatron-Core's precision-aware optimizer (--use-precision-aware-optimizer --exp-avg-dtype
// --exp-avg-sq-dtype --main-params-dtype; FP8 moments are stored as uint8). Fp32 everywhere = the plain optimizer.
// Main parameters in bf16 = no master copy at all (NeMo 1.0's Apex optimizer with optim.dtype bf16): the model prices
// it for published runs; scenarios and plans refuse it (Megatron-Core offers fp32 and fp16 only).
enum class StateDtype { Fp32, Bf16, Fp16, Fp8 };
// Modules whose activations selective recompute rebuilds in the backward pass instead of keeping (Megatron-Core
// --recompute-modules; TransformerConfig.recompute_modules): one bit each, a set is their OR. 0 = the default set
// (recompute_module_set()).
namespace recompute_module {
constexpr unsigned kCoreAttn = 1, kMoeAct = 2, kLayernorm = 4, kMlaUpProj = 8, kMlp = 16, kMoe = 32,
                   kSharedExperts = 64, kAll = 127;
}  // namespace recompute_module

const char* to_string(Framework f);
// The index of the software stack whose fitted parameters price f (ModelParams' per-stack arrays): AutoModel runs
// the PyTorch-native stack torchtitan runs (FSDP2 per-parameter sharding, eager HF or AutoModel modules), so it
// shares torchtitan's until rows of its own are fitted.
inline int stack_index(Framework f) {
  return static_cast<int>(f == Framework::Automodel ? Framework::Torchtitan : f);
}
const char* to_string(Precision p);
const char* to_string(Attention a);
const char* to_string(Fp8Recipe r);
Attention attention_from_string(const std::string& s);
Fp8Recipe fp8_recipe_from_string(const std::string& s);
const char* to_string(PipelineSplit p);
PipelineSplit pipeline_split_from_string(const std::string& s);
const char* to_string(LossFusion f);
LossFusion loss_fusion_from_string(const std::string& s);
const char* to_string(Recompute r);
const char* to_string(Fabric f);
const char* to_string(MoeRouter r);
const char* to_string(Dispatcher d);
MoeRouter moe_router_from_string(const std::string& s);
Dispatcher dispatcher_from_string(const std::string& s);
const char* to_string(PipelineSchedule p);  // "1f1b", "interleaved", "gpipe", "zero_bubble", "zbv"
PipelineSchedule pipeline_schedule_from_string(const std::string& s);
// Schedules that run more than one model chunk per rank (virtual_stages >= 2).
inline bool multi_chunk(PipelineSchedule p) {
  return p == PipelineSchedule::Interleaved || p == PipelineSchedule::ZeroBubble || p == PipelineSchedule::Zbv;
}
const char* to_string(Kernel k);  // "deepep", "hybridep", "te", "flash3"
Kernel kernel_from_string(const std::string& s);
const char* to_string(StateDtype d);  // "fp32", "bf16", "fp16", "fp8"
StateDtype state_dtype_from_string(const std::string& s);
double state_dtype_bytes(StateDtype d);
// "core_attn,moe_act" (Megatron's names, in its order); the parser takes names separated by ',', '+' or spaces.
std::string recompute_modules_to_string(unsigned modules);
unsigned recompute_modules_from_string(const std::string& s);
// Parsers throw std::invalid_argument whose message lists the valid choices.
Framework framework_from_string(const std::string& s);
// Every framework paratune plans for, in the order searches and listings take them.
const std::vector<Framework>& known_frameworks();
struct TrainingSpec;
// A framework named as text, with the version its name implies where none is given: "megatron-deepspeed" is
// DeepSpeed at framework_version megatron-deepspeed (else it would plan plain DeepSpeed under that name).
void set_framework(TrainingSpec& t, const std::string& name);
Precision precision_from_string(const std::string& s);
Recompute recompute_from_string(const std::string& s);
Fabric fabric_from_string(const std::string& s);

struct ModelSpec {
  std::string name;        // preset key or a free name
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;        // 0 = heads (no GQA)
  int ffn_hidden = 0;      // 0 = 4 * hidden
  int vocab = 0;
  int seq_len = 0;
  bool gated_mlp = false;  // SwiGLU-style (3 matrices)
  bool tied_embeddings = false;
  bool dropout = false;    // hidden/attention dropout (1-byte masks stored per layer; GPT-3/Megatron-era models)
  int head_dim = 0;        // attention head dimension (Megatron --kv-channels); 0 = hidden / heads
  // Mixture of experts (docs/model.md §9); moe_experts = 0 is a dense model and every field below is ignored.
  int moe_experts = 0;             // routed experts per MoE layer
  int moe_top_k = 0;               // routed experts per token
  int moe_ffn_hidden = 0;          // FFN hidden size of one routed expert (0 = ffn_hidden)
  int moe_shared_experts = 0;      // shared experts every token passes through
  int moe_shared_ffn_hidden = 0;   // FFN hidden size of one shared expert (0 = moe_ffn_hidden)
  int moe_dense_layers = 0;        // leading dense layers (ffn_hidden) before the MoE layers (DeepSeek-V3: 3)
  double moe_capacity_factor = 0;  // tokens per expert / fair share before dropping; 0 = dropless
  bool moe_pad_to_capacity = false;  // every expert runs its full capacity's rows (--moe-pad-expert-input-to-capacity)
  MoeRouter moe_router = MoeRouter::AuxLoss;
  // Group-limited routing (Megatron-Core --moe-router-num-groups / --moe-router-group-topk): the experts in equal
  // groups of consecutive ids, each token's experts drawn from its best moe_router_group_topk groups (DeepSeek-V3's
  // node-limited routing: 8 groups, 4 of them); 0 = unrestricted.
  int moe_router_groups = 0;
  int moe_router_group_topk = 0;
  // Multi-head latent attention (DeepSeek-V2/V3); kv_lora_rank = 0 is ordinary (grouped-query) attention.
  int q_lora_rank = 0;             // 0 = queries projected directly
  int kv_lora_rank = 0;
  int qk_head_dim = 0;             // per-head query/key dimension without the rotary part
  int qk_rope_head_dim = 0;        // rotary part, shared by the heads for keys
  int v_head_dim = 0;
  int mtp_layers = 0;              // multi-token-prediction modules after the last layer (DeepSeek-V3: 1)
  bool is_moe() const { return moe_experts > 0; }
  bool is_mla() const { return kv_lora_rank > 0; }
  // MoE, MLA, an explicit head dimension or MTP: the model's generalised layer (model/moe_*.cpp), not the dense one.
  bool generalised_layer() const { return is_moe() || is_mla() || head_dim > 0 || mtp_layers > 0; }
};

struct TrainingSpec {
  int global_batch = 0;    // sequences per optimizer step
  Precision precision = Precision::Bf16;
  Framework framework = Framework::Megatron;
  std::string framework_version;         // framework_versions() id; "" = the site's default, else the framework's
  // The site policy's default versions (policy framework_version = { megatron = "core_v0.14" }): the version of a
  // framework whose framework_version is not given, the scenario's own and those a search may pick instead.
  std::map<Framework, std::string> site_versions;
  // Physical switches the performance model needs; unset = the framework's current default.
  std::optional<bool> overlap_dp_comm;   // gradient reduce / param gather overlapped with compute (Megatron-Core
                                         // --overlap-grad-reduce, DeepSpeed overlap_comm, FSDP prefetch); false for
                                         // Megatron-LM 2021/22 (Korthikanti §6.3: "not overlapped")
  std::optional<bool> flash_attention;   // default true (no s^2 activation term, fused attention kernel)
  // What changes speed inside a stack (unset = the framework's default; docs/model.md, "software stack"):
  std::optional<Attention> attention;    // the attention kernel (attention = "none" is flash_attention = false)
  std::optional<Fp8Recipe> fp8_recipe;   // with precision fp8
  std::optional<bool> compile;           // torch.compile of the model (FSDP, torchtitan)
  std::optional<PipelineSplit> pipeline_split;  // layers per stage (unset = equal layer counts)
  std::optional<bool> tp_comm_overlap;   // TP communication overlapped with GEMMs (Megatron --tp-comm-overlap,
                                         // torchtitan async TP)
  std::optional<bool> grad_reduce_fp32;  // gradients accumulated and reduced in fp32 (Megatron
                                         // --accumulate-allreduce-grads-in-fp32 / grad_reduce_in_fp32, FSDP
                                         // reduce_dtype); default: off for Megatron-Core, NeMo and DeepSpeed (their
                                         // defaults), on for FSDP and torchtitan (torchtitan's default)
  std::optional<bool> overlap_param_gather;  // ZeRO-1/2: the updated parameters' all-gather overlapped with the next
                                             // forward (Megatron --overlap-param-gather); false = gathered after the
                                             // optimizer step, exposed (DeepSpeed ZeRO-1/2, nanotron); default
                                             // false for DeepSpeed (its only way), true for the others
  std::optional<bool> fp8_param_gather;  // FP8 primary weights, gathered in FP8 (Megatron --fp8-param-gather,
                                         // NeMo fp8_params); default off
  std::optional<LossFusion> cross_entropy_fusion;  // Megatron/NeMo --cross-entropy-loss-fusion and its impl; unset =
                                                   // the framework's own loss (never planned: loss_fusion.h)
  // Mixture of experts (unset = the framework's default):
  std::optional<bool> moe_a2a_overlap;    // dispatch/combine overlapped with another micro-batch's compute
                                          // (Megatron --overlap-moe-expert-parallel-comm); default on with EP > 1
  std::optional<bool> moe_force_balance;  // routing forced to a uniform spread (benchmarks: Megatron
                                          // --moe-router-force-load-balancing); default off (real routing)
};

// One compute NIC as the advisor sees it (from the probe or the scenario file).
struct NicFacts {
  std::string name;        // "mlx5_0"
  int port = 1;
  double gbps = 0;
  bool active = true;
  std::string gpu_path;    // path class to its nearest GPU: "PIX" | "PXB" | "PHB" | "SYS" | ""
  std::string netdev;
  std::optional<int> gid_index;
  bool name_reported = true;  // false: a placeholder the probe made up (probe::Nic::name_reported), never emitted
};

// Achieved rates measured on the site's nodes (`paratune measure`, advisor/profile.h); each one that is set (> 0)
// replaces, for its term, the catalog figure times the model's fitted efficiency. 0 = the catalog's.
struct MeasuredRates {
  double bf16_gemm_tflops = 0, fp16_gemm_tflops = 0;  // large 16-bit GEMMs, per GPU
  double hbm_gbps = 0;             // streaming copy, bytes read + written per second, per GPU
  double intra_busbw_gbps = 0;     // ring bus bandwidth among a node's GPUs (all-gather / reduce-scatter)
  double inter_busbw_gbps = 0;     // all-reduce bus bandwidth across nodes with every GPU of each node: per node
};

struct ClusterSpec {
  std::string gpu;                 // catalog key
  // Overrides of the catalog (cluster.gpu_spec); 0 = take the catalog value.
  double peak_tflops = 0, memory_gib = 0, hbm_tbps = 0, nvlink_gbps = 0;
  int nodes = 1;
  int gpus_per_node = 1;
  int nvlink_domain = 1;           // GPUs sharing NVLink/NVSwitch; 1 = PCIe only
  double host_memory_gib = 0;      // host (CPU) memory per node the job may use; 0 = not stated (the reference
                                   // system's, offload.cpp)
  int nic_count = 0;               // compute NICs per node
  double nic_gbps = 0;             // per NIC
  Fabric fabric = Fabric::InfiniBand;
  // Topology-derived facts used for NCCL settings (empty when the scenario is hand-written).
  std::vector<NicFacts> nics;
  std::string gpu_nic_path;        // worst nearest-NIC path class over the allocation's GPUs
  std::optional<std::string> cloud;
  std::string nccl_topo_file;      // vendor topology file to hand to NCCL, if any (stated: scenario, site policy)
  std::string topology_nccl_file;  // the NCCL topology file the probe read the node from (absolute), if any:
                                   // handed to NCCL only where the cloud's own images do the same (synthesize_env)
  bool fabric_known = true;        // false: no fact said which fabric the NICs are on (a vendor file without PCI
                                   // ids); `fabric` is then the model's assumption and no fabric-specific variable
                                   // is set
  // Added by the advisor:
  std::string topology_file;       // [cluster] topology = "..." as written; resolved by the caller (CLI), never read here
  bool rail_aligned = true;        // one NIC per GPU on its own rail (DGX-style); false = NICs shared / off-rail
  bool rail_alignment_known = false;  // rail_aligned was stated (scenario file), not assumed
  bool nvls = false;               // NVLink SHARP available and healthy (NVSwitch gen3+, Fabric Manager up)
  std::string socket_ifname;       // bootstrap/socket interface for NCCL_SOCKET_IFNAME, when known
  std::string nccl_version;        // when known ("2.21.5")
  std::string te_version;          // Transformer Engine's, when known ("2.14"; site policy / scenario fact)
  // Where the job's nodes sit under the leaf switches (from Slurm's topology; TOML [cluster.placement]); unset =
  // not known, every node pair gets the NICs' full bandwidth.
  std::optional<Placement> placement;
  // The optional kernels the site has installed (site policy facts.kernels, TOML [cluster] kernels); unset = not
  // stated: nothing is assumed missing, and a plan that needs one says so in its notes.
  std::optional<std::vector<Kernel>> kernels;
  bool lacks(Kernel k) const;  // the site says k is not installed
  std::optional<MeasuredRates> measured;  // a hardware profile's rates (advisor/profile.h); unset = the catalog's
};

// In `predict`, a fully given layout; in `advise`, constraints (unset = free).
struct ParallelSpec {
  std::optional<int> tp, pp, dp, cp, virtual_stages, micro_batch, zero_stage;
  std::optional<Recompute> recompute;
  std::optional<bool> sequence_parallel;
  std::optional<int> ep, etp;              // expert parallel and expert tensor parallel degrees (MoE)
  std::optional<Dispatcher> dispatcher;    // MoE token dispatcher
  // The pipeline schedule; unset = implied by virtual_stages (1F1B, interleaved 1F1B when > 1), as the search
  // chooses. The search never picks the others on its own (no calibration row measures them).
  std::optional<PipelineSchedule> pipeline_schedule;
  // Pipeline stage layout: transformer layers on the first and the last pipeline rank (both, or neither: the
  // framework's own split, or the one advise balances).
  std::optional<int> first_stage_layers, last_stage_layers;
  // Sharding scope: the model state is sharded over groups of this many data-parallel ranks and replicated across
  // groups; ZeRO-2/3: FSDP/torchtitan hybrid sharding (HSDP); ZeRO-1: Megatron/NeMo distributed-optimizer
  // instances (dp*cp / shard_group of them). Unset = the search chooses (0 = over all of them).
  std::optional<int> shard_group;
  // Memory features (unset = the search chooses; docs/model.md §3): Adam's moments and the main parameters in a
  // narrower dtype (Megatron/NeMo precision-aware optimizer), the modules selective recompute rebuilds, and the
  // transformer layers whose activations are offloaded to host memory (Megatron --cpu-offloading-num-layers).
  std::optional<StateDtype> optimizer_moments, main_params;
  std::optional<unsigned> recompute_modules;
  std::optional<int> offload_layers;
};

struct Scenario {
  ModelSpec model;
  TrainingSpec training;
  ClusterSpec cluster;
  ParallelSpec parallel;
  int total_gpus() const { return cluster.nodes * cluster.gpus_per_node; }
};

// Catalog lookups (compiled-in tables with their sources); throw std::invalid_argument listing valid keys.
ModelSpec model_preset(const std::string& key);
std::vector<std::string> model_preset_keys();
bool is_model_preset(const std::string& key);

// Check a scenario for consistency; throws std::invalid_argument naming the field and what is valid.
void validate(const Scenario& s);

}  // namespace paratune::advisor
