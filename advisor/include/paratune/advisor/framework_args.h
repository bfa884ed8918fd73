// Ready-to-use framework arguments for a plan: Megatron-LM arguments, NeMo overrides, DeepSpeed config JSON,
// torchtitan TOML, plain-FSDP settings and torchrun flags. Pure strings; the caller writes them where it wants.
#pragma once

#include <string>

#include "paratune/advisor/plan.h"
#include "paratune/advisor/scenario.h"

namespace paratune::advisor {

struct FrameworkArgs {
  std::string primary;          // the one for plan.framework: "megatron" | "nemo" | "deepspeed" | "fsdp" | "torchtitan"
  std::string megatron;         // Megatron-LM / Megatron-DeepSpeed command-line arguments
  std::string nemo;             // NeMo 2 recipe overrides (key=value ...)
  std::string deepspeed_json;   // DeepSpeed config (JSON object)
  std::string torchtitan_toml;  // torchtitan [parallelism] / [training] / [activation_checkpoint] TOML
  std::string fsdp;             // PyTorch FSDP settings (key=value ...)
  std::string torchrun;         // torchrun flags (rendezvous from the Slurm environment)
};

FrameworkArgs framework_args(const Scenario& s, const Plan& plan);

}  // namespace paratune::advisor
