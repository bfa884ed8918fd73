// The partition, node count and node list of a job step, from Slurm's own view and never from the step's
// environment where a user can write it.
//
// The batch step's environment is made by slurmd from slurmctld's launch message (SLURM_JOB_PARTITION,
// SLURM_NNODES and SLURM_JOB_NODELIST replace whatever the submitter exported: slurm.fault_spoof), so it is read
// there. Every other step's environment is made by the client that launched it: srun merges the caller's
// environment and sends it, and slurmstepd copies it as it arrives (Slurm 22.05 and 24.11, src/api/step_launch.c).
// A stock srun overwrites SLURM_JOB_PARTITION, SLURM_NNODES and SLURM_STEP_NODELIST, but a user who calls
// slurm_step_launch() with an environment of their own (tests/integration/forge_step_env.c) sends anything. So
// for those steps the job's partition and the step's nodes come from slurmctld (slurm_load_job and
// slurm_get_job_steps, what `scontrol show job` and `scontrol show step` ask), in a forked child bounded in time
// (job/child_call.h) like the switch-tree query. When that answer cannot be had within the bound: no node names,
// the partition recorded for the job on this node by a step that had Slurm's answer (job/job_files.h), else none
// (the [defaults] policy), and the node count of the SPANK item S_JOB_NNODES, which slurmstepd fills from its
// launch request, not from the environment.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "paratune/planner/job_env.h"
#include "slurm_nodes.h"

namespace paratune::plugin {

// What slurmctld answered for one step ("" fields where it has none).
struct SlurmctldStep {
  std::string partition;   // the job's partition
  std::string step_nodes;  // the step's node list, as slurmctld wrote it; "" when it has no record of the step
  std::string problem;     // why there is no answer ("" when there is one)
};

inline constexpr int kStepQueryTimeoutMs = 3000;
inline constexpr size_t kMaxPartitionBytes = 256;

// slurm_load_job + slurm_get_job_steps in a bounded child. Never throws.
SlurmctldStep ask_slurmctld(uint32_t job_id, uint32_t step_id, int timeout_ms = kStepQueryTimeoutMs);

// What the plugin uses for the step.
struct StepView {
  std::string partition;         // "" = unknown: the policy's [defaults]
  std::string partition_source;  // for the log: where the partition came from
  int nodes = 1;                 // the step's node count
  StepNodes node_list;           // names, compact form, or why withheld
  bool from_slurmctld = false;   // slurmctld answered (its partition may be recorded for later steps)
};

// The batch step: the variables slurmd set (slurm_nodes.h, job/allocation.h). Throws std::invalid_argument on a
// malformed SLURM_NNODES, as allocation_from_env does.
StepView batch_step_view(const planner::JobEnvironment& env);

// Any other step, from slurmctld's answer; without one, from `recorded_partition` (the job's partition as an
// earlier step on this node had it from Slurm) and `nnodes_item` (S_JOB_NNODES; 0 when not available).
StepView other_step_view(const SlurmctldStep& answer, const std::optional<std::string>& recorded_partition,
                         int nnodes_item);

}  // namespace paratune::plugin
