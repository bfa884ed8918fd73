#include "tuning_record.h"

#include "plan_json.h"

namespace paratune::job {

using nlohmann::json;

namespace {

json assignments(const std::vector<EnvAssignment>& v) {
  json out = json::object();
  for (const auto& a : v) out[a.name] = a.value;
  return out;
}

}  // namespace

json tuning_record(const JobIdentity& job, const OptionSpec& spec, const Decision& d, const EnvOutcome& env,
                   long long end_time_unix) {
  const auto& p = d.plan.prediction;
  json changes = json::array();
  for (const auto& c : d.policy_changes) changes.push_back({{"what", c.what}, {"reason", c.reason}});
  return {{"version", 1},
          {"time", end_time_unix},
          {"job_id", job.job_id},
          {"step_id", job.step_id},
          {"user", job.user},
          {"uid", job.uid},
          {"partition", job.partition},
          {"host", job.hostname},
          {"nodes", job.nodes},
          {"node_list", job.nodelist},
          {"state", job.state},
          {"gpus_per_node", job.gpus_on_node},
          {"gpu_model", d.scenario.cluster.gpu},
          {"fingerprint", d.fingerprint},
          {"option", spec.raw},
          {"mode", to_string(d.mode)},
          {"scenario", to_json(d.scenario)},
          {"plan", to_json(d.plan.layout)},
          {"predicted", {{"step_time_s", p.step_time_s}, {"tokens_per_s", p.tokens_per_s},
                         {"tokens_per_s_per_gpu", p.tokens_per_s_per_gpu}, {"mfu", p.mfu},
                         {"memory_gib_per_gpu", p.memory_gib_per_gpu}}},
          {"env_set", assignments(env.set)},
          {"env_kept", assignments(env.kept)},
          {"env_replaced", assignments(env.replaced)},
          {"env_removed", assignments(env.removed)},
          {"policy_changes", changes},
          {"notes", d.notes}};
}

}  // namespace paratune::job
