// `paratune advise --paratune SPEC`: the plan a job submitted with `--paratune=SPEC` would get, made by the code
// the plugin runs in the job (job/decide_request.h → job/decision_child.h decide_and_write) from the facts given
// on the command line instead of Slurm's: the node's topology, the allocation, the plugstack arguments, the site
// policy and partition, the calibration and hardware profile.
#pragma once

#include <string>
#include <vector>

namespace paratune::cli {

struct JobDryRunArgs {
  std::string spec;                  // the --paratune value ("" = bare --paratune)
  std::string topology;              // --topology FILE|builtin:NAME (else plugstack topology=, else --probe)
  bool probe_here = false;           // --probe: probe this machine as the plugin would
  std::string plugstack;             // --plugstack 'ARG ...': the plugin's plugstack.conf arguments
  std::string policy_file, partition, calibration, profile;
  int nodes = 1;
  int gpus_per_node = 0;             // 0: every GPU of the topology
  std::string job_id = "0";
  std::vector<std::string> nodelist; // the job's nodes in Slurm's order (the first is torchrun's rendezvous)
  std::vector<std::string> leaf_switches;  // NODE=SWITCH each: Slurm's topology/tree leaves (the placement)
  std::string submit_dir;            // "" = the current directory
  std::string write_dir;             // "" = the plan files are made in a temporary directory and removed
  bool as_json = false;
};

int run_job_dry_run(const JobDryRunArgs& args);

}  // namespace paratune::cli
