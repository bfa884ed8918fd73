// What one plugin instance knows. Each SPANK context is its own process (srun, sbatch, slurmstepd, slurmd),
// so one static state per process is the natural shape; nothing is shared between processes.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <spdlog/logger.h>

#include "paratune/planner/allocation.h"
#include "paratune/planner/decision.h"
#include "job/decision_child.h"
#include "paratune/planner/job_env.h"
#include "paratune/planner/option_spec.h"
#include "paratune/planner/plugin_config.h"
#include "paratune/common/safe_file.h"
#include "job/tuning_record.h"

namespace paratune::plugin {

// What a job step does, settled once in init_post_opt (remote context) and acted on in user_init:
//   Off         nothing: no --paratune and nothing the policy applies, or a failure before the mode was known
//   PolicyOnly  paratune is off for the step (mode off, a heterogeneous job, no GPUs), the site's variables apply
//   Inheriting  an srun step inside a batch job that already decided: the site's variables apply on top
//   Deciding    this step makes the job's decision (the batch step, or a step of an allocation without one)
enum class StepRole { Off, PolicyOnly, Inheriting, Deciding };

struct PluginState {
  bool config_ok = false;                    // plugstack arguments parsed
  planner::PluginConfig config;
  bool option_given = false;                 // --paratune was on the command line / in the job
  std::string option_text;                   // its value ("" for bare --paratune)
  std::optional<planner::OptionSpec> spec;       // parsed (remote) or validated (local/allocator)
  // Remote context: set in init_post_opt (root), used in user_init and exit.
  policies::EffectivePolicy policy;          // the site policy for the job's partition (empty: none)
  std::optional<advisor::Calibration> calibration;  // the site's calibration file, when present and trusted
  std::optional<advisor::HardwareProfile> profile;  // the node type's hardware profile (profile=), when trusted
  planner::Mode mode = planner::Mode::Off;           // as decided with the policy
  std::vector<policies::PolicyChange> mode_changes;
  std::string fail_closed;                   // on_error = "closed" and something failed: task_init fails the step
  StepRole role = StepRole::Off;             // what this step does, settled in init_post_opt
  std::string report_path;                   // $PARATUNE_REPORT as the job has it (the user may have set it)
  std::optional<probe::Topology> topology;
  job::JobIdentity job;
  planner::Allocation alloc;                     // GPUs from the step's environment; partition and node count from Slurm
  job::JobUser user;                         // uid, gid, groups from Slurm (known = false when Slurm gave none)
  std::vector<std::string> node_names;       // the step's nodes, from Slurm (slurm_nodes.h); empty when withheld
  std::string node_list_problem;             // why the node list was withheld
  std::optional<planner::FabricPlacement> fabric;  // the deciding step's nodes under Slurm's leaf switches
  bool env_rules_apply = false;              // the policy's forced/default/forbidden variables apply to this step
  bool env_injected = false;                 // the job's environment has had its variables (decision or policy)
  std::optional<job::DecidedJob> decision;   // what the deciding child answered
  planner::EnvOutcome env_outcome;
  common::UniqueFd job_log_fd;                  // <log_dir>/jobs/<jobid>.log, opened as root
  std::vector<std::string> metric_failures;  // this step's failures by kind (job::failure_kind), for metrics_file
  std::shared_ptr<spdlog::logger> log;
};

PluginState& state();

// The logger: Slurm's log (slurm_info/slurm_error) and, once opened, the per-job log file.
spdlog::logger& log();
void attach_job_log(int fd);

}  // namespace paratune::plugin
