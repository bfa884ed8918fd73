// What a job step's decision is made from, and the request that carries it to the deciding child. One function
// for the plugin (slurmstepd, remote_decide.cpp) and for `paratune advise --paratune` (cli/job_dry_run.cpp), so that
// a dry run on the command line makes the plan the job would get, from the same facts, by the same code.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "paratune/planner/allocation.h"
#include "decision_child.h"
#include "paratune/planner/fabric_placement.h"
#include "paratune/planner/option_spec.h"
#include "paratune/planner/plugin_config.h"
#include "user_identity.h"

namespace paratune::job {

struct StepFacts {
  planner::PluginConfig config;                   // the plugstack arguments
  planner::OptionSpec spec;                       // the --paratune SPEC as parsed
  planner::Allocation alloc;                      // partition and node count as Slurm sees the step
  std::vector<std::string> node_names;            // the step's nodes in Slurm's order (empty: not known)
  std::string batch_host;                         // this node's name when the batch step decides (Slurm runs the
                                                  // batch script on the allocation's first node), else ""
  probe::Topology topology;                       // this node, as probed (or the configured topology file)
  policies::EffectivePolicy policy;               // the site policy for the job's partition
  policies::ModeDecision mode;                    // planner::decide_job_mode() for the job
  std::optional<advisor::Calibration> calibration;
  std::optional<advisor::HardwareProfile> profile;
  std::optional<planner::FabricPlacement> fabric;  // the nodes under Slurm's leaf switches, when Slurm knows them
  JobUser user;
  std::string job_id;
};

// A path as the job means it: relative paths are relative to `base` (the submit directory).
std::string resolve_path(const std::string& path, const std::string& base);

// Where the plan directory may go, in order: the configured job_dir, the submit directory (then the request's
// fallback, a fresh directory under /tmp: decision_child.h).
std::vector<std::string> plan_dir_bases(const planner::PluginConfig& config, const std::string& submit_dir);

// The request the deciding child (or decide_and_write in-process) answers.
DecideRequest decide_request(const StepFacts& facts);

}  // namespace paratune::job
