// The tuning-log line of one job: one JSON object per line, one line per job (public contract, README).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "paratune/planner/decision.h"

namespace paratune::job {

struct JobIdentity {
  std::string job_id, step_id, user, partition, hostname;
  unsigned uid = 0, gid = 0;
  int nodes = 1, gpus_on_node = 0;
  std::string nodelist;  // the step's node list as Slurm sets it for that kind of step (node[01-04]), checked
  std::string state;     // how the deciding step ended: "completed", "failed (exit N)", "killed (signal N)"
};

// The decision's part of the line: gpu_model, fingerprint, mode, scenario, plan, predicted, policy_changes, notes.
// Made where the decision is made (a child process in slurmstepd), carried back as JSON.
nlohmann::json decision_record(const planner::Decision& d);

// The whole line. User-derived values (the option, environment values) are capped (log_text.h).
nlohmann::json tuning_record(const JobIdentity& job, const planner::OptionSpec& spec,
                             const nlohmann::json& decision_part, const planner::EnvOutcome& env, long long end_time_unix);
nlohmann::json tuning_record(const JobIdentity& job, const planner::OptionSpec& spec, const planner::Decision& d,
                             const planner::EnvOutcome& env, long long end_time_unix);

// The text appended to the tuning log: one line of at most kMaxTuningLine bytes. When the record is larger, it says
// "truncated": true; the node checks' lists (and their notes) are cut to their first entries with counts, then the
// bulky fields (notes, env_*, policy_changes, node_list, node_checks, suspect, the scenario last) are replaced by
// what they held in size; the identity, partition, plan, prediction, achieved figures and OOM record always stay.
std::string tuning_line_text(nlohmann::json record);

}  // namespace paratune::job
