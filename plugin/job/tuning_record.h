// The tuning-log line of one job: one JSON object per line, one line per job (public contract, README).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "decision.h"

namespace paratune::job {

struct JobIdentity {
  std::string job_id, step_id, user, partition, hostname;
  unsigned uid = 0;
  int nodes = 1, gpus_on_node = 0;
};

nlohmann::json tuning_record(const JobIdentity& job, const OptionSpec& spec, const Decision& d,
                             const EnvOutcome& env, long long end_time_unix);

}  // namespace paratune::job
