// What each framework can run, in one table (beside framework_versions.h, which holds what a *version* cannot):
// the search enumerates only these choices, layout_problem refuses the rest with the reason, and the adapters
// write them. The contract tests check each trait against the options the framework's pinned source defines
// (tests/contracts/traits_test.cpp).
#pragma once

#include <vector>

#include "paratune/advisor/scenario.h"

namespace paratune::advisor {

struct FrameworkTraits {
  Framework framework = Framework::Megatron;
  bool megatron_core = false;     // Megatron-Core underneath: expert folding rules, MoE needs SP with TP
  bool tensor_pipeline = false;   // tensor and pipeline parallelism at all (plain FSDP/DeepSpeed: no)
  bool context_parallel = false;  // context parallelism
  bool interleaving = false;      // virtual pipeline stages (an interleaved 1F1B schedule)
  bool expert_parallel = false;   // expert parallelism for MoE models (the others replicate the experts)
  bool stage_layout = false;      // an explicit per-stage layer layout (--pipeline-model-parallel-layout)
  bool hybrid_shard = false;      // a sharding group smaller than the data-parallel ranks for ZeRO >= 2 (HSDP)
  bool zero1_scope = false;       // ... for ZeRO-1: distributed-optimizer instances (sharded within, replicated across)
  bool selective_recompute = false;
  std::vector<int> zero_stages;          // ZeRO / sharding stages it runs (without pipelining)
  std::vector<int> zero_stages_with_pp;  // ... and with pipeline parallelism
  std::vector<Dispatcher> dispatchers;   // MoE token dispatchers (expert_parallel only)
  std::vector<PipelineSchedule> schedules;  // pipeline schedules it runs (tensor_pipeline only)
  int default_zero = 0;                  // the stage a plan uses when the scenario says nothing
  Recompute default_recompute = Recompute::None;
};

const FrameworkTraits& traits(Framework f);

bool runs_zero(Framework f, int zero_stage, int pp);
bool runs_recompute(Framework f, Recompute r);
bool runs_dispatcher(Framework f, Dispatcher d);
bool runs_schedule(Framework f, PipelineSchedule p);
// A sharding scope (Layout::shard_group) smaller than the data-parallel ranks at this ZeRO stage: hybrid sharding
// for ZeRO >= 2, distributed-optimizer instances for ZeRO-1.
bool runs_shard_scope(Framework f, int zero_stage);
// Whether gradients are reduced in fp32 (else in the 16-bit parameter dtype): the scenario's grad_reduce_fp32, by
// default the framework's (PyTorch-native stacks' mixed-precision policies reduce in fp32; Megatron, NeMo and
// DeepSpeed in the model's dtype). One decision for the price and the arguments (FSDP's reduce_dtype, DeepSpeed's
// communication_data_type).
bool grad_reduce_fp32(const Scenario& s, Framework f);

}  // namespace paratune::advisor
