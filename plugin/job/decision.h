// One decision per job: option × topology × allocation → scenario → plan → the variables to inject.
// Pure apart from what the caller hands in (no Slurm, no file I/O): the plugin and the CLI both use it.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "allocation.h"
#include "job_env.h"
#include "option_spec.h"
#include "paratune/advisor/advisor.h"
#include "paratune/probe/topology.h"
#include "plugin_config.h"

namespace paratune::job {

struct DecisionInput {
  PluginConfig config;
  OptionSpec spec;
  Allocation alloc;
  probe::Topology topology;
  std::string scenario_text;            // content of @FILE, read by the caller as the job's user
  advisor::SearchLimits limits;         // from the site policy
};

struct Decision {
  Mode mode = Mode::Apply;
  advisor::Scenario scenario;
  advisor::Plan plan;
  std::string fingerprint;
  std::vector<std::string> notes;       // what was assumed or inferred on the way
};

// Throws (std::exception) on any problem; the plugin catches and fails open.
Decision decide(const DecisionInput& in);

// The mode the option and the plugin configuration ask for.
Mode effective_mode(const OptionSpec& spec, const PluginConfig& config);

// The variables of the environment contract (PARATUNE_*), plus NCCL_*/CUDA_* in apply mode.
std::vector<EnvAssignment> decision_env(const Decision& d, const std::string& plan_path, const std::string& report_path);

// The plan file's content ($PARATUNE_PLAN).
nlohmann::json decision_json(const Decision& d);

}  // namespace paratune::job
