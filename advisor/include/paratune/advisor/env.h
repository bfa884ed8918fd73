// NCCL / CUDA / PyTorch settings implied by a plan on the probed topology, each with a one-line reason.
// Only system-configuration variables (never NCCL_DEBUG, NCCL_ALGO, NCCL_PROTO or other debugging knobs).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "paratune/advisor/plan.h"
#include "paratune/advisor/scenario.h"

namespace paratune::advisor {

// `memory_gib` = the plan's predicted use per GPU (to decide NVLS and allocator settings); 0 = unknown.
std::vector<EnvSetting> synthesize_env(const Scenario& s, Framework f, const Layout& l, double memory_gib = 0);

// "" when the layout runs under the value of CUDA_DEVICE_MAX_CONNECTIONS the site's policy imposes (`site`: the
// forced value, "" when the policy forbids the variable, nullopt when it says nothing), else why it stops at
// start-up: Megatron asserts it is 1 with tp or cp > 1 before Blackwell and that it is not 1 under Megatron-FSDP
// (megatron/training/arguments.py, core_v0.14 to main); Megatron-DeepSpeed raises without 1 under sequence
// parallelism (megatron/arguments.py at 4efb479d).
std::string cuda_connections_problem(const Scenario& s, const Layout& l, Framework f,
                                     const std::optional<std::string>& site);

// What synthesize_env left to NCCL on this cluster and why (NICs known only by placeholder names, a fabric no fact
// states), for the plan's notes.
std::vector<std::string> network_notes(const Scenario& s);

}  // namespace paratune::advisor
