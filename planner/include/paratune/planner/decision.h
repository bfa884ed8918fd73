// The planner: one decision per job, option × topology × allocation → scenario → plan → the variables to inject
// and the plan files. Pure apart from what the caller hands in (no Slurm, no file I/O): the plugin's deciding
// child (plugin/job/decision_child.cpp), `paratune advise --paratune` (the same child's work, in-process) and
// `paratune advise/explain --scenario` all make their plan here, so they make it the same way.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "paratune/planner/allocation.h"
#include "paratune/planner/fabric_placement.h"
#include "paratune/planner/job_env.h"
#include "paratune/planner/option_spec.h"
#include "paratune/advisor/advisor.h"
#include "paratune/advisor/calibration_file.h"
#include "paratune/advisor/profile.h"
#include "paratune/advisor/framework_args.h"
#include "paratune/probe/topology.h"
#include "paratune/planner/plugin_config.h"

namespace paratune::planner {

struct DecisionInput {
  PluginConfig config;
  OptionSpec spec;
  Allocation alloc;
  probe::Topology topology;
  std::string scenario_text;            // content of @FILE, read by the caller as the job's user
  std::string resume_text, resume_origin;  // a previous plan.json (resume=PLAN or the requeued job's own), if any
  policies::EffectivePolicy policy;     // the site policy for the job's partition (default: none)
  Mode mode = Mode::Apply;              // as decided by policies::decide_mode
  std::optional<advisor::Calibration> calibration;  // the site's fitted efficiencies, when present
  std::optional<advisor::HardwareProfile> profile;  // the node type's measured rates (plugstack profile=), when present
  std::optional<FabricPlacement> fabric;  // the job's nodes under Slurm's leaf switches, when Slurm knows them
  // The command line's --scenario form: a whole scenario (a file's, parsed by the caller) instead of the SPEC and
  // the plugstack's default model. Its [cluster] stands unless `topology_known`: then the topology's facts replace
  // it where they speak (cluster_over_scenario).
  std::optional<advisor::Scenario> scenario;
  bool topology_known = true;           // false: `topology` is empty (a --scenario without a topology)
  std::optional<int> top_n;             // alternatives to keep (default: the advisor's)
  std::optional<bool> all_frameworks;   // search every framework (default: the site policy's word)
};

struct Decision {
  Mode mode = Mode::Apply;
  advisor::Scenario scenario;
  advisor::Plan plan;
  std::string fingerprint;
  std::vector<std::string> notes;       // what was assumed or inferred on the way
  std::vector<policies::PolicyChange> policy_changes;  // every change the site policy made, with its reason
  std::optional<FabricPlacement> fabric;  // as given; the node order is the plan's rank order
  // The prediction used a site calibration entry for the job's (GPU, fabric, framework): at job end the achieved
  // throughput is judged against it as it is (tuning::SuspectRule), not against a widened threshold.
  bool calibrated = false;
  // The calibration entries that applied (plan_json.h calibration_json), recorded in plan.json with `calibrated`.
  nlohmann::json calibration_entries = nlohmann::json::array();
  advisor::Launch launch;               // torchrun's rendezvous: the allocation's first node, a port from the job id
  advisor::SearchLimits limits;         // the search as run: the policy's caps, the calibration's parameters
  advisor::FrameworkArgs args;          // the plan's framework arguments (made once: files, env and plan.json)
};

// The mode for a job: the option, the plugstack defaults and the site policy (which has the last word).
policies::ModeDecision decide_job_mode(const OptionSpec* spec, const PluginConfig& config,
                                       const policies::EffectivePolicy& policy, int gpus_per_node);

// Throws (std::exception) on any problem; the plugin catches and fails open.
Decision decide(const DecisionInput& in);

// The variables of the environment contract (PARATUNE_*), plus NCCL_*/CUDA_* in apply mode.
std::vector<EnvAssignment> decision_env(const Decision& d, const std::string& plan_path, const std::string& report_path);

// What to do to the job's environment once the site policy has had its say: `wanted` are the decision's
// variables (empty when paratune itself is off but the policy's env rules still apply).
struct EnvInjection {
  std::vector<EnvAssignment> assignments;
  std::vector<std::string> force;    // names whose user value is replaced
  std::vector<std::string> unset;    // names removed from the job env
  std::vector<policies::PolicyChange> changes;
};
EnvInjection policy_injection(const policies::EffectivePolicy& policy, const std::vector<EnvAssignment>& wanted);

// A job's whole plan: the decision with the site policy's changes to its variables recorded (they belong in
// plan.json), its environment and the policy's word on it, and the plan files. Each is made once here and passed
// along. `mode_changes`: what the policy changed while the mode was decided; `plan_dir`: where the plan files go
// (it names $PARATUNE_PLAN, $PARATUNE_ARGS and $PARATUNE_REPORT; "" leaves them out). The files do not depend on
// `plan_dir`, nor do the policy's changes: PARATUNE_* are never subject to the policy's env rules.
struct JobPlan {
  Decision decision;
  std::vector<EnvAssignment> env;  // decision_env(): the variables the decision wants, before the policy
  EnvInjection injection;          // policy_injection(policy, env): what to do to the job's environment
  std::vector<std::pair<std::string, std::string>> files;  // decision_files(): name → content
};
JobPlan plan_job(const DecisionInput& in, const std::vector<policies::PolicyChange>& mode_changes = {},
                 const std::string& plan_dir = "");
// The same for a decision already made (decide()), so that a caller can choose the plan directory after deciding.
JobPlan plan_decision(Decision d, const policies::EffectivePolicy& policy,
                      const std::vector<policies::PolicyChange>& mode_changes, const std::string& plan_dir);

// The plan file's content ($PARATUNE_PLAN).
nlohmann::json decision_json(const Decision& d);

// The files written beside the plan: plan.json, the arguments of the plan's framework in the form its version
// reads (megatron.args, nemo.args, deepspeed.json [+ megatron-deepspeed.args], torchtitan.toml or
// torchtitan.flags, fsdp.json, automodel.args) and torchrun.args. Name → content.
std::vector<std::pair<std::string, std::string>> decision_files(const Decision& d);

// The file among decision_files() that holds the arguments of the plan's own framework.
std::string primary_args_file(const Decision& d);

// That file's content without its final newline ($PARATUNE_ARGS_TEXT), at most kMaxArgsTextBytes in the env.
std::string primary_args_text(const Decision& d);
inline constexpr size_t kMaxArgsTextBytes = 32u << 10;

}  // namespace paratune::planner
