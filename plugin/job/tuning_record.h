// The tuning-log line of one job: one JSON object per line, one line per job (public contract, README).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "decision.h"

namespace paratune::job {

struct JobIdentity {
  std::string job_id, step_id, user, partition, hostname;
  unsigned uid = 0, gid = 0;
  int nodes = 1, gpus_on_node = 0;
  std::string nodelist;  // SLURM_JOB_NODELIST, as Slurm writes it (node[01-04])
  std::string state;     // how the deciding step ended: "completed", "failed (exit N)", "killed (signal N)"
};

nlohmann::json tuning_record(const JobIdentity& job, const OptionSpec& spec, const Decision& d,
                             const EnvOutcome& env, long long end_time_unix);

}  // namespace paratune::job
