// What Slurm gave the job on this node, read from the job's environment (SPANK has no item for GPUs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "paratune/planner/job_env.h"

namespace paratune::planner {

struct Allocation {
  int nodes = 1;                  // batch step: SLURM_NNODES (S_JOB_NNODES is 0 there); other steps: left 1 here
  int gpus_on_node = 0;           // SLURM_GPUS_ON_NODE, else the count of the GPU index list
  std::vector<int> gpu_indexes;   // SLURM_JOB_GPUS (batch step) or SLURM_STEP_GPUS (other steps), CUDA_VISIBLE_DEVICES
  std::string partition;          // batch step: SLURM_JOB_PARTITION; other steps: left "" here
  std::string submit_dir;         // SLURM_SUBMIT_DIR
  std::string job_id;             // SLURM_JOB_ID
  std::string first_node;         // the allocation's first node (torchrun's rendezvous host); set by the plugin from
                                  // the node list Slurm set, expanded with libslurm's hostlist functions
  uint64_t memory_mb = 0;         // the job's memory on this node (S_JOB_ALLOC_MEM, MB), set by the plugin from
                                  // slurmstepd's job record; 0 = Slurm enforces none (not known)
};

// Only variables Slurm sets (and so overwrites or removes when a user exported them) for this kind of step are read:
// slurmd sets SLURM_NNODES and SLURM_JOB_GPUS for the batch step and leaves an exported SLURM_STEP_GPUS there; srun
// sets SLURM_NNODES and slurmstepd SLURM_STEP_GPUS for every other step, where an exported SLURM_JOB_NUM_NODES
// (srun only warns that it conflicts) and SLURM_JOB_GPUS (kept when the step has no GPUs) reach the step as the
// user set them (slurm.fault_spoof). The partition and the node count are read in the batch step only: every other
// step's environment is sent by its client, which can be any program (slurm_step_launch() with an environment of
// its own), so the plugin takes them from slurmctld there (plugin/slurm_step_view.h) — and a forged malformed
// SLURM_NNODES cannot make the step throw before the site policy is applied. Throws std::invalid_argument naming
// the variable when a value that is read is malformed.
Allocation allocation_from_env(const JobEnvironment& env, bool batch_step);

// The number of components of a heterogeneous job (SLURM_HET_SIZE, which Slurm sets in every step of one);
// 0 when the job is not heterogeneous. A malformed value counts as heterogeneous (1000): never plan on a guess.
int het_job_components(const JobEnvironment& env);

// "0,1,3" → {0,1,3}; ranges "0-3" are accepted too (Slurm writes them in some versions).
std::vector<int> parse_index_list(const std::string& name, const std::string& text);

}  // namespace paratune::planner
