// Layout, Prediction and Plan: what the advisor answers. Pure values.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "paratune/advisor/scenario.h"

namespace paratune::advisor {

struct Layout {
  int tp = 1, pp = 1, dp = 1, cp = 1, virtual_stages = 1, micro_batch = 1;
  int zero_stage = 0;
  Recompute recompute = Recompute::None;
  bool sequence_parallel = false;
  // Sharding scope, in data-parallel ranks (dp*cp): 0 = shard over all of them; k = shard within groups of k and
  // replicate across groups (ZeRO-2/3: hybrid sharding, HSDP; ZeRO-1: Megatron's distributed-optimizer instances).
  int shard_group = 0;
  // Pipeline stage layout: transformer layers on the first and the last pipeline rank (all its virtual chunks), the
  // rest spread over the middle ranks; 0 = the framework's own split (equal counts, or its embedding/loss rule).
  int first_stage_layers = 0, last_stage_layers = 0;
  // Mixture of experts ("parallel folding": the experts' ep x etp x edp = tp x cp x dp of the attention).
  int ep = 1, etp = 1;
  Dispatcher dispatcher = Dispatcher::AllToAll;
  // The pipeline schedule a scenario fixed; unset = implied by virtual_stages (schedule_of()).
  std::optional<PipelineSchedule> schedule;
  // Memory features: the optimizer's moment and main-parameter dtypes (anything but fp32 = Megatron-Core's
  // precision-aware optimizer), the selective-recompute module set (0 = the default set; recompute_module_set()),
  // and how many transformer layers offload their activations to host memory.
  StateDtype optimizer_moments = StateDtype::Fp32, main_params = StateDtype::Fp32;
  unsigned recompute_modules = 0;
  int offload_layers = 0;
  bool precision_aware_optimizer() const {
    return optimizer_moments != StateDtype::Fp32 || main_params != StateDtype::Fp32;
  }
  // Megatron-Core's distributed-optimizer instances of a ZeRO-1 layout with a sharding scope (dp*cp / shard_group;
  // 1 without one): --num-distributed-optimizer-instances.
  int optimizer_instances() const {
    return zero_stage == 1 && shard_group > 0 && shard_group < dp * cp ? dp * cp / shard_group : 1;
  }
  // The experts' data-parallel ranks: tp x cp x dp folded over ep x etp (at least 1).
  int expert_dp() const { return std::max(1, tp * cp * dp / std::max(1, ep * etp)); }
  int grad_accum(int global_batch) const { return global_batch / (dp * micro_batch); }
};

// The modules selective recompute rebuilds in layout l: none without selective recompute, the layout's own set, or
// the default: the attention core for dense layers (Korthikanti et al. 2022), and for the generalised (MoE / MLA)
// layer Megatron-Core's MoE recipe set core_attn, layernorm, mla_up_proj, moe_act as far as the model and precision
// allow it (mla_up_proj with MLA, moe_act with experts, neither moe_act nor layernorm under FP8 delayed scaling).
// What the model prices is what the framework arguments name.
unsigned recompute_module_set(const Scenario& s, const Layout& l, bool moe_layer);
// Megatron-Core under FP8 refuses moe_act and layernorm recompute with delayed scaling, and before Transformer
// Engine 2.6 (transformer_config.py); other frameworks have no such rule.
bool fp8_refuses_output_recompute(const Scenario& s);

// The schedule layout l runs: the one it fixes, else 1F1B, or interleaved 1F1B with virtual stages.
inline PipelineSchedule schedule_of(const Layout& l) {
  if (l.schedule) return *l.schedule;
  return l.virtual_stages > 1 ? PipelineSchedule::Interleaved : PipelineSchedule::OneFOneB;
}

struct Breakdown {  // seconds per optimizer step
  double compute = 0, recompute = 0, tp_comm = 0, cp_comm = 0, pp_bubble = 0, pp_comm = 0,
         dp_comm_exposed = 0, optimizer = 0, other = 0;
  double ep_comm = 0;        // MoE dispatch + combine all-to-all, exposed
  double moe_imbalance = 0;  // MoE: the busiest expert rank's excess over a balanced one (GEMMs and all-to-all)
  double offload = 0;        // CPU activation offload: the offloaded layers' activations over the host link
  double pp_imbalance = 0;   // the slowest pipeline rank's excess over an even share of the stages' work (steady state)
};

struct MemoryBreakdown {  // GiB per GPU (the worst stage)
  double weights = 0, gradients = 0, optimizer = 0, activations = 0, logits = 0, buffers = 0, reserve = 0;
  double total() const { return weights + gradients + optimizer + activations + logits + buffers + reserve; }
};

struct Prediction {
  double step_time_s = 0;
  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  double model_tflops_per_gpu = 0;  // 6·N·tokens + attention, no recompute
  double mfu = 0;
  double hardware_tflops_per_gpu = 0;  // the FLOPs the GPU really executes (recompute included)
  const char* flop_convention = "6*N*tokens + 12*l*h*s*tokens attention (no causal discount), logits included, no recompute";
  int microbatches = 0;                // per pipeline per step (m)
  MemoryBreakdown memory;
  double memory_gib_per_gpu = 0;
  double memory_capacity_gib = 0;
  double host_memory_gib_per_gpu = 0;  // CPU activation offload: pinned host memory per GPU, and what a GPU may pin
  double host_capacity_gib = 0;
  bool fits = false;
  std::string overflow;             // which memory term overflowed, when !fits
  Breakdown breakdown;
};

struct EnvSetting {
  std::string name, value, reason;
};

struct Candidate {
  Framework framework = Framework::Megatron;
  Layout layout;
  Prediction prediction;
};

struct Plan {
  Framework framework = Framework::Megatron;  // the framework the layout is for (the scenario's unless searched)
  Layout layout;
  Prediction prediction;
  std::vector<EnvSetting> env;                 // NCCL_* / CUDA_* settings with reasons
  std::vector<Candidate> alternatives;         // the next best (top-N)
  long long candidates_evaluated = 0;
  double search_seconds = 0;
  std::vector<std::string> notes;              // explanations (why this won, what was pruned)
};

}  // namespace paratune::advisor
