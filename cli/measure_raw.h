// What `paratune measure` does besides running the benchmark: who this task is in the Slurm step, and the
// benchmark's raw figures (JSON, packaging/measure/measure.py) turned into a hardware profile (advisor/profile.h).
#pragma once

#include <string>
#include <vector>

#include "paratune/advisor/profile.h"

namespace paratune::cli::measure {

// The task's place in the step, from Slurm's environment (one task alone without it).
struct Task {
  int rank = 0, world = 1, local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  std::string nodelist;  // the step's nodes, as Slurm writes them
};
// `port` > 0 fixes the rendezvous port; otherwise 20000 + (job id * 16 + step id) mod 20000 (the step's tasks agree,
// two concurrent steps of one job do not collide).
Task task_from_env(int port);

// The raw JSON of rank 0 as a profile for nodes of `fingerprint` whose GPU is `gpu_key` (used when the benchmark ran
// on GPUs; a CPU run is the profile of "cpu"), fitted. Throws std::invalid_argument naming what is wrong.
// `warnings` gets what the admin should know (ranks whose node had another fingerprint, phases skipped).
advisor::HardwareProfile profile_from_raw(const std::string& json_text, const std::string& fingerprint,
                                          const std::string& gpu_key, std::vector<std::string>* warnings);

}  // namespace paratune::cli::measure
