// Checkpoints across restarts: the format a plan's checkpoints are written in, the degrees that format can reshard
// when loaded, and a resumed run's plan kept compatible with the checkpoint it loads (same format and sharding
// family; only what the format reshards re-planned). The plan says what was kept and why.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "paratune/advisor/plan.h"
#include "paratune/advisor/scenario.h"

namespace paratune::advisor {

struct CheckpointFormat {
  std::string format;                 // torch_dist, fsdp_dtensor, dcp, deepspeed_zero
  std::string sharding;               // the sharding family: "ZeRO 1 (distributed optimizer)", ...
  std::vector<std::string> reshards;  // degrees a load may change: "tp", "pp", "dp", "cp", "ep"; empty = none
};

// Megatron-Core / NeMo: torch_dist (reshards TP, PP, DP, CP, EP) or, for Megatron-FSDP (ZeRO 3), fsdp_dtensor
// (reshards DP); PyTorch FSDP and torchtitan: torch.distributed.checkpoint of DTensors (reshards DP); DeepSpeed:
// its ZeRO checkpoint (reshards nothing without DeepSpeed's universal-checkpoint conversion).
CheckpointFormat checkpoint_format(Framework f, const Layout& l);

// The run a resumed job continues: the framework and layout of the plan that wrote its checkpoints.
struct ResumeFrom {
  std::string origin;  // the plan file it came from, for messages
  Framework framework = Framework::Megatron;
  std::string framework_version;
  Layout layout;
};

// Constrain the scenario to plans that load the checkpoint: the framework and ZeRO stage kept, and every degree
// the format cannot reshard fixed to the previous plan's (dp too when none reshards). Returns the notes that say
// what was kept and why, and what is re-planned.
std::vector<std::string> keep_checkpoint(Scenario& s, const ResumeFrom& r);

// The plan's own checkpoint line for its notes: "checkpoint: megatron torch_dist, ZeRO 1 (distributed optimizer);
// a later run may change tp, pp, dp, cp, ep".
std::string checkpoint_note(const Plan& p);

}  // namespace paratune::advisor
