// The deciding step's node list for the tuning log, from Slurm and never from the user: only the variable Slurm
// itself sets for that kind of step (measured on Slurm 22.05 with a SPANK plugin printing the step environment
// at user_init, after the submitter exported bogus values: the batch step gets SLURM_JOB_NODELIST from slurmd
// and keeps a submitted SLURM_STEP_NODELIST; an srun step gets SLURM_STEP_NODELIST from srun and keeps a
// submitted or re-exported SLURM_JOB_NODELIST). Expanded with Slurm's own hostlist functions (libslurmfull, in
// slurmstepd), bounded by the step's node count and a byte budget before anything is expanded.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "paratune/planner/job_env.h"

namespace paratune::plugin {

struct StepNodes {
  std::string compact;              // as Slurm wrote it ("" when withheld)
  std::vector<std::string> names;   // expanded
  std::string problem;              // why the list was withheld ("" when fine)
};

inline constexpr size_t kMaxNodeListBytes = 64u << 10;
inline constexpr size_t kMaxHostNameBytes = 255;  // a DNS name is at most 253

// The variable that holds the step's node list, set by Slurm for this kind of step.
const char* node_list_variable(bool batch_step);

// Check and expand `compact`: at most `max_hosts` hosts (the step's node count) and kMaxNodeListBytes bytes,
// compact or expanded. A list that breaks a bound is withheld (names empty) and `problem` says why.
StepNodes expand_node_list(const std::string& compact, int max_hosts);

StepNodes step_nodes(const planner::JobEnvironment& env, bool batch_step, int node_count);

}  // namespace paratune::plugin
