#include "tuning_record.h"

#include "log_text.h"
#include "paratune/advisor/framework_versions.h"
#include "paratune/planner/plan_json.h"

namespace paratune::job {

using nlohmann::json;

namespace {

// Environment values are the user's (kept, replaced, removed): capped so one job cannot bloat the site's log.
json assignments(const std::vector<planner::EnvAssignment>& v) {
  json out = json::object();
  for (const auto& a : v) out[capped(a.name)] = capped(a.value);
  return out;
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

json decision_record(const planner::Decision& d) {
  const auto& p = d.plan.prediction;
  json changes = json::array();
  for (const auto& c : d.policy_changes) changes.push_back({{"what", capped(c.what)}, {"reason", capped(c.reason)}});
  json notes = json::array();
  for (const auto& n : d.notes) notes.push_back(capped(n, 1024));
  // The plan's framework and the version its arguments were for: calibration groups jobs by them.
  return {{"gpu_model", d.scenario.cluster.gpu},
          {"fingerprint", d.fingerprint},
          {"mode", to_string(d.mode)},
          {"framework", advisor::to_string(d.plan.framework)},
          {"framework_version", advisor::version_for(d.scenario, d.plan.framework).id},
          {"scenario", planner::to_json(d.scenario)},
          {"plan", planner::to_json(d.plan.layout)},
          {"predicted", {{"step_time_s", p.step_time_s}, {"tokens_per_s", p.tokens_per_s},
                         {"tokens_per_s_per_gpu", p.tokens_per_s_per_gpu}, {"mfu", p.mfu},
                         {"memory_gib_per_gpu", p.memory_gib_per_gpu}, {"calibrated", d.calibrated}}},
          {"policy_changes", changes},
          {"notes", notes}};
}

json tuning_record(const JobIdentity& job, const planner::OptionSpec& spec, const json& decision_part,
                   const planner::EnvOutcome& env, long long end_time_unix) {
  json line = {{"version", 1},
               {"time", end_time_unix},
               {"job_id", job.job_id},
               {"step_id", job.step_id},
               {"user", job.user},
               {"uid", job.uid},
               {"partition", capped(job.partition)},
               {"host", job.hostname},
               {"nodes", job.nodes},
               {"node_list", job.nodelist},
               {"state", job.state},
               {"gpus_per_node", job.gpus_on_node},
               {"option", capped(spec.raw)}};
  for (const char* key : {"gpu_model", "fingerprint", "mode", "framework", "framework_version", "scenario", "plan",
                          "predicted"})
    if (decision_part.contains(key)) line[key] = decision_part[key];
  line["env_set"] = assignments(env.set);
  line["env_kept"] = assignments(env.kept);
  line["env_replaced"] = assignments(env.replaced);
  line["env_removed"] = assignments(env.removed);
  for (const char* key : {"policy_changes", "notes"})
    if (decision_part.contains(key)) line[key] = decision_part[key];
  return line;
}

json tuning_record(const JobIdentity& job, const planner::OptionSpec& spec, const planner::Decision& d,
                   const planner::EnvOutcome& env, long long end_time_unix) {
  return tuning_record(job, spec, decision_record(d), env, end_time_unix);
}

namespace {

// A long list cut to its first entries, with how many there were: the mismatches on a large job's nodes repeat one
// another, and the count is what `paratune log` and the admin read.
void keep_first(json& obj, const char* key, size_t keep) {
  if (!obj.contains(key) || !obj[key].is_array() || obj[key].size() <= keep) return;
  obj[std::string(key) + "_count"] = obj[key].size();
  json first = json::array();
  for (size_t i = 0; i < keep; ++i) first.push_back(obj[key][i]);
  obj[key] = std::move(first);
}

// The node checks of a job that ran on many nodes of another type: a few records each, the counts, and the notes
// those records added (one per mismatch) cut the same way.
void compact_node_checks(json& record) {
  constexpr size_t kKeep = 8;
  if (record.contains("node_checks") && record["node_checks"].is_object()) {
    keep_first(record["node_checks"], "mismatch", kKeep);
    keep_first(record["node_checks"], "plan_unreadable", kKeep);
  }
  keep_first(record, "notes", 4 * kKeep);
}

}  // namespace

std::string tuning_line_text(json record) {
  std::string text = dump(record);
  if (text.size() <= kMaxTuningLine) return text;
  record["truncated"] = true;
  compact_node_checks(record);
  text = dump(record);
  if (text.size() <= kMaxTuningLine) return text;
  // Then the bulky fields, least needed first: the scenario (which `calibrate` predicts the job again from) last.
  for (const char* key : {"notes", "env_set", "env_kept", "env_replaced", "env_removed", "policy_changes", "node_list",
                          "node_checks", "suspect", "scenario"}) {
    if (!record.contains(key)) continue;
    record[key] = {{"omitted_bytes", dump(record[key]).size()}};
    text = dump(record);
    if (text.size() <= kMaxTuningLine) return text;
  }
  // Still too large (a huge user string elsewhere): keep what identifies the job, where it ran, and its figures
  // (partition for `log --partition` and `portability`, the OOM record for `log --oom` and `calibrate`).
  json minimal = json::object();
  for (const char* key : {"version", "time", "job_id", "step_id", "user", "uid", "partition", "host", "nodes",
                          "gpus_per_node", "state", "mode", "gpu_model", "fingerprint", "framework",
                          "framework_version", "plan", "predicted", "achieved", "ratio", "report", "oom"})
    if (record.contains(key)) minimal[key] = record[key];
  minimal["truncated"] = true;
  text = dump(minimal);
  return text.size() <= kMaxTuningLine ? text : dump(json{{"version", 1}, {"job_id", capped(record.value("job_id", ""))}, {"truncated", true}});
}

}  // namespace paratune::job
