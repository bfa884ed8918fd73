#include "decision_child.h"

#include <cstdio>
#include <stdexcept>

#include "child_call.h"
#include "log_text.h"
#include "paratune/advisor/plan.h"
#include "safe_file.h"
#include "tuning_record.h"

namespace paratune::job {

using nlohmann::json;

namespace {

// The plan directory: the first base where <base>/paratune-<job> can be made and written, as the job's user.
std::string write_job_files(const Decision& d, const std::string& job_id, const std::vector<std::string>& bases) {
  const auto files = decision_files(d);
  std::string last_error = "no directory to write to";
  for (const auto& base : bases) {
    const std::string dir = base + "/paratune-" + job_id;
    try {
      auto fd = ensure_directory(dir, 0755, ::geteuid());
      for (const auto& [name, content] : files) write_file_atomic(fd.get(), name, content, 0644);
      return dir;
    } catch (const std::exception& e) {
      last_error = e.what();
    }
  }
  throw std::runtime_error("could not write the plan files: " + last_error);
}

std::string summary_of(const Decision& d, const std::string& dir) {
  const auto& l = d.plan.layout;
  char figures[128];
  std::snprintf(figures, sizeof figures, "predicted %.3f s/step, %.0f tokens/s", d.plan.prediction.step_time_s,
                d.plan.prediction.tokens_per_s);
  return capped(d.scenario.model.name) + " on " + std::to_string(d.scenario.cluster.nodes) + "x" +
         std::to_string(d.scenario.cluster.gpus_per_node) + " " + d.scenario.cluster.gpu + ": " +
         advisor::to_string(d.plan.framework) + " tp=" + std::to_string(l.tp) + " pp=" + std::to_string(l.pp) +
         " dp=" + std::to_string(l.dp) + " cp=" + std::to_string(l.cp) + " vpp=" + std::to_string(l.virtual_stages) +
         " mbs=" + std::to_string(l.micro_batch) + " zero=" + std::to_string(l.zero_stage) +
         " recompute=" + advisor::to_string(l.recompute) + " " + figures + "; plan " + dir + "/plan.json";
}

json assignments_json(const std::vector<EnvAssignment>& v) {
  json out = json::array();
  for (const auto& a : v) out.push_back({{"name", a.name}, {"value", a.value}, {"reason", a.reason}});
  return out;
}

}  // namespace

DecidedJob decide_and_write(const DecideRequest& request) {
  DecisionInput in = request.input;
  if (!request.scenario_path.empty()) in.scenario_text = read_bounded(request.scenario_path, kMaxScenarioBytes);
  if (!request.resume_path.empty()) {
    try {
      in.resume_text = read_bounded(request.resume_path, kMaxScenarioBytes);
      in.resume_origin = request.resume_path;
    } catch (const std::exception&) {
      if (!request.resume_optional) throw;  // resume=PLAN names a file that must be there
    }
  }
  Decision d = decide(in);
  d.policy_changes.insert(d.policy_changes.begin(), request.mode_changes.begin(), request.mode_changes.end());
  // Plan the environment first (the policy's changes belong in the plan file), then write, then the final plan.
  auto injection = policy_injection(in.policy, decision_env(d, "", ""));
  d.policy_changes.insert(d.policy_changes.end(), injection.changes.begin(), injection.changes.end());
  DecidedJob out;
  out.dir = write_job_files(d, request.job_id, request.dir_bases);
  out.injection = policy_injection(in.policy, decision_env(d, out.dir + "/plan.json", out.dir + "/report.jsonl"));
  out.record = decision_record(d);
  out.summary = summary_of(d, out.dir);
  for (const auto& c : d.policy_changes) out.changes.push_back(policies::describe(c));
  out.notes = d.notes;
  return out;
}

DecidedJob decide_in_child(const DecideRequest& request) {
  const std::string reply = call_in_child(
      [&] {
        become_user_for_good(request.user);
        return to_json(decide_and_write(request)).dump(-1, ' ', false, json::error_handler_t::replace);
      },
      request.timeout_ms, "deciding", kMaxDecisionReply);
  return decided_job_from_json(json::parse(reply));
}

json to_json(const DecidedJob& d) {
  json changes = json::array();
  for (const auto& c : d.injection.changes) changes.push_back({{"what", c.what}, {"reason", c.reason}});
  return {{"dir", d.dir},
          {"assignments", assignments_json(d.injection.assignments)},
          {"force", d.injection.force},
          {"unset", d.injection.unset},
          {"injection_changes", changes},
          {"record", d.record},
          {"summary", d.summary},
          {"changes", d.changes},
          {"notes", d.notes}};
}

DecidedJob decided_job_from_json(const json& j) {
  DecidedJob d;
  d.dir = j.at("dir").get<std::string>();
  for (const auto& a : j.at("assignments"))
    d.injection.assignments.push_back(
        {a.at("name").get<std::string>(), a.at("value").get<std::string>(), a.at("reason").get<std::string>()});
  d.injection.force = j.at("force").get<std::vector<std::string>>();
  d.injection.unset = j.at("unset").get<std::vector<std::string>>();
  for (const auto& c : j.at("injection_changes"))
    d.injection.changes.push_back({c.at("what").get<std::string>(), c.at("reason").get<std::string>()});
  d.record = j.at("record");
  d.summary = j.at("summary").get<std::string>();
  d.changes = j.at("changes").get<std::vector<std::string>>();
  d.notes = j.at("notes").get<std::vector<std::string>>();
  return d;
}

}  // namespace paratune::job
