// Scenario: what is to be trained, how, and on what. Pure values (no I/O).
// The TOML form is a public contract (README, paratune.toml(5)); load_scenario_toml lives in scenario_toml.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "paratune/advisor/placement.h"

namespace paratune::advisor {

enum class Framework { Megatron, DeepSpeed, Fsdp, Torchtitan, Nemo };
enum class Precision { Bf16, Fp16, Fp8 };
enum class Recompute { None, Selective, Full };
// The attention kernel: FlashAttention-2, FlashAttention-3, cuDNN's fused attention (Transformer Engine), or the
// unfused matmul-softmax-matmul. Unset = the framework's default (docs/model.md, "software stack").
enum class Attention { Flash2, Flash3, Cudnn, None };
// FP8 scaling recipe: one scale per tensor (delayed amax history or current), per row, per 128x128 block, or
// MXFP8 (one 8-bit exponent per 32 elements: Blackwell tensor cores).
enum class Fp8Recipe { Delayed, Tensorwise, Rowwise, Blockwise, Mxfp8 };
enum class Fabric { InfiniBand, RoCE, Efa, Slingshot, OmniPath, Ethernet };

const char* to_string(Framework f);
const char* to_string(Precision p);
const char* to_string(Attention a);
const char* to_string(Fp8Recipe r);
Attention attention_from_string(const std::string& s);
Fp8Recipe fp8_recipe_from_string(const std::string& s);
const char* to_string(Recompute r);
const char* to_string(Fabric f);
// Parsers throw std::invalid_argument whose message lists the valid choices.
Framework framework_from_string(const std::string& s);
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
};

struct TrainingSpec {
  int global_batch = 0;    // sequences per optimizer step
  Precision precision = Precision::Bf16;
  Framework framework = Framework::Megatron;
  std::string framework_version;         // framework_versions() id; "" = the framework's default (site policy may set it)
  // Physical switches the performance model needs; unset = the framework's current default.
  std::optional<bool> overlap_dp_comm;   // gradient reduce / param gather overlapped with compute (Megatron-Core
                                         // --overlap-grad-reduce, DeepSpeed overlap_comm, FSDP prefetch); false for
                                         // Megatron-LM 2021/22 (Korthikanti §6.3: "not overlapped")
  std::optional<bool> flash_attention;   // default true (no s^2 activation term, fused attention kernel)
  // What changes speed inside a stack (unset = the framework's default; docs/model.md, "software stack"):
  std::optional<Attention> attention;    // the attention kernel (attention = "none" is flash_attention = false)
  std::optional<Fp8Recipe> fp8_recipe;   // with precision fp8
  std::optional<bool> compile;           // torch.compile of the model (FSDP, torchtitan)
  std::optional<bool> tp_comm_overlap;   // TP communication overlapped with GEMMs (Megatron --tp-comm-overlap,
                                         // torchtitan async TP)
  std::optional<bool> grad_reduce_fp32;  // gradients accumulated and reduced in fp32 (Megatron
                                         // --accumulate-allreduce-grads-in-fp32 / grad_reduce_in_fp32, FSDP
                                         // reduce_dtype); default: off for Megatron-Core, NeMo and DeepSpeed (their
                                         // defaults), on for FSDP and torchtitan (torchtitan's default)
  std::optional<bool> fp8_param_gather;  // FP8 primary weights, gathered in FP8 (Megatron --fp8-param-gather,
                                         // NeMo fp8_params); default off
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
};

struct ClusterSpec {
  std::string gpu;                 // catalog key
  // Overrides of the catalog (cluster.gpu_spec); 0 = take the catalog value.
  double peak_tflops = 0, memory_gib = 0, hbm_tbps = 0, nvlink_gbps = 0;
  int nodes = 1;
  int gpus_per_node = 1;
  int nvlink_domain = 1;           // GPUs sharing NVLink/NVSwitch; 1 = PCIe only
  int nic_count = 0;               // compute NICs per node
  double nic_gbps = 0;             // per NIC
  Fabric fabric = Fabric::InfiniBand;
  // Topology-derived facts used for NCCL settings (empty when the scenario is hand-written).
  std::vector<NicFacts> nics;
  std::string gpu_nic_path;        // worst nearest-NIC path class over the allocation's GPUs
  std::optional<std::string> cloud;
  std::string nccl_topo_file;      // vendor topology file to hand to NCCL, if any
  // Added by the advisor:
  std::string topology_file;       // [cluster] topology = "..." as written; resolved by the caller (CLI), never read here
  bool rail_aligned = true;        // one NIC per GPU on its own rail (DGX-style); false = NICs shared / off-rail
  bool rail_alignment_known = false;  // rail_aligned was stated (scenario file), not assumed
  bool nvls = false;               // NVLink SHARP available and healthy (NVSwitch gen3+, Fabric Manager up)
  std::string socket_ifname;       // bootstrap/socket interface for NCCL_SOCKET_IFNAME, when known
  std::string nccl_version;        // when known ("2.21.5")
  // Where the job's nodes sit under the leaf switches (from Slurm's topology; TOML [cluster.placement]); unset =
  // not known, every node pair gets the NICs' full bandwidth.
  std::optional<Placement> placement;
};

// In `predict`, a fully given layout; in `advise`, constraints (unset = free).
struct ParallelSpec {
  std::optional<int> tp, pp, dp, cp, virtual_stages, micro_batch, zero_stage;
  std::optional<Recompute> recompute;
  std::optional<bool> sequence_parallel;
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
