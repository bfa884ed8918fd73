// NCCL / CUDA / PyTorch settings implied by a plan on the probed topology, each with a one-line reason.
// Only system-configuration variables (never NCCL_DEBUG, NCCL_ALGO, NCCL_PROTO or other debugging knobs).
#pragma once

#include <string>
#include <vector>

#include "paratune/advisor/plan.h"
#include "paratune/advisor/scenario.h"

namespace paratune::advisor {

// `memory_gib` = the plan's predicted use per GPU (to decide NVLS and allocator settings); 0 = unknown.
std::vector<EnvSetting> synthesize_env(const Scenario& s, Framework f, const Layout& l, double memory_gib = 0);

// What synthesize_env left to NCCL on this cluster and why (NICs known only by placeholder names, a fabric no fact
// states), for the plan's notes.
std::vector<std::string> network_notes(const Scenario& s);

}  // namespace paratune::advisor
