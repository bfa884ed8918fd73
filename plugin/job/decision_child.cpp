#include "decision_child.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <system_error>

#include "paratune/common/child_call.h"
#include "job_files.h"
#include "log_text.h"
#include "paratune/advisor/plan.h"
#include "paratune/common/safe_file.h"
#include "tuning_record.h"

namespace paratune::job {

using common::UniqueFd;
using common::ensure_directory;
using common::write_file_atomic;
using common::read_bounded;
using common::call_in_child;

using nlohmann::json;

namespace {

// The plan files into the directory `fd` (the user's), with exactly `dir_mode` and `file_mode`.
// A report left in the directory by an earlier decision for this job (a requeued job reuses paratune-<job>) is
// moved aside to report.prev.jsonl: the new plan's report must not summarise the earlier attempt's steps, or keep
// its out-of-memory record (the first one in a report wins).
void write_plan_files(int fd, const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files,
                      mode_t dir_mode, mode_t file_mode) {
  if (::fchmod(fd, dir_mode) != 0) throw std::system_error(errno, std::generic_category(), "chmod " + dir);
  for (const auto& [name, content] : files) write_file_atomic(fd, name, content, file_mode, /*exact_mode=*/true);
  if (::renameat(fd, "report.jsonl", fd, "report.prev.jsonl") != 0 && errno != ENOENT)
    throw std::system_error(errno, std::generic_category(), "move the earlier report aside in " + dir);
}

// A fresh directory <base>/paratune-<job>-XXXXXX (mkdtemp: a name nobody had, made 0700 by the kernel).
std::string fresh_directory(const std::string& base, const std::string& job_id) {
  std::string tmpl = base + "/paratune-" + job_dir_name(job_id) + "-XXXXXX";
  if (!::mkdtemp(tmpl.data())) throw std::system_error(errno, std::generic_category(), "mkdtemp in " + base);
  return tmpl;
}

// The plan directory: <base>/paratune-<job> in the first base where it can be the job user's own, else a fresh one
// under the fallback base; written as the job's user, private unless the site lets the group read it. The files
// come from `plan_in(dir)` (the plan for that directory), asked again only if writing into a directory failed; an
// error of the plan's own is not a directory's and goes to the caller.
using PlanFiles = std::vector<std::pair<std::string, std::string>>;
std::string write_job_files(const std::function<const PlanFiles&(const std::string& dir)>& plan_in,
                            const DecideRequest& r) {
  const mode_t dir_mode = r.group_readable ? 0750 : 0700, file_mode = r.group_readable ? 0640 : 0600;
  std::string last_error = "no directory to write to";
  const auto write_into = [&](const std::string& dir, UniqueFd fd) {
    const PlanFiles* files = nullptr;
    try {
      files = &plan_in(dir);
    } catch (...) {
      ::rmdir(dir.c_str());  // the plan failed after the directory was made: leave no empty one behind
      throw;
    }
    try {
      write_plan_files(fd.get(), dir, *files, dir_mode, file_mode);
      return true;
    } catch (const std::exception& e) {
      last_error = e.what();
      return false;
    }
  };
  for (const auto& base : r.dir_bases) {
    const std::string dir = base + "/paratune-" + job_dir_name(r.job_id);
    UniqueFd fd;
    try {
      fd = ensure_directory(dir, dir_mode, ::geteuid());  // another user's directory of that name is refused
    } catch (const std::exception& e) {
      last_error = e.what();
      continue;
    }
    if (write_into(dir, std::move(fd))) return dir;
  }
  if (!r.fallback_base.empty()) {
    std::string dir;
    UniqueFd fd;
    try {
      dir = fresh_directory(r.fallback_base, r.job_id);
      fd = UniqueFd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!fd) throw std::system_error(errno, std::generic_category(), "open " + dir);
    } catch (const std::exception& e) {
      last_error = e.what();
    }
    if (fd && write_into(dir, std::move(fd))) return dir;
  }
  throw std::runtime_error("could not write the plan files: " + last_error);
}

// A plain variable name: what a decision sets, and nothing a shell or Slurm would read twice.
bool plain_name(const std::string& n) {
  if (n.empty() || n.size() > 128 || std::isdigit(static_cast<unsigned char>(n[0]))) return false;
  return std::all_of(n.begin(), n.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

std::string summary_of(const planner::Decision& d, const std::string& dir) {
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

json assignments_json(const std::vector<planner::EnvAssignment>& v) {
  json out = json::array();
  for (const auto& a : v) out.push_back({{"name", a.name}, {"value", a.value}, {"reason", a.reason}});
  return out;
}

}  // namespace

DecidedJob decide_and_write(const DecideRequest& request) {
  planner::DecisionInput in = request.input;
  if (!request.scenario_path.empty()) in.scenario_text = read_bounded(request.scenario_path, kMaxScenarioBytes);
  if (!request.resume_path.empty()) {
    try {
      in.resume_text = read_bounded(request.resume_path, kMaxScenarioBytes);
      in.resume_origin = request.resume_path;
    } catch (const std::exception&) {
      if (!request.resume_optional) throw;  // resume=PLAN names a file that must be there
    }
  }
  // Decided once; the environment, the policy's word on it and the files are made for the plan directory, once
  // (again only for another directory, when writing into one failed).
  const planner::Decision decided = planner::decide(in);
  planner::JobPlan plan;
  DecidedJob out;
  out.dir = write_job_files(
      [&](const std::string& dir) -> const PlanFiles& {
        plan = planner::plan_decision(decided, in.policy, request.mode_changes, dir);
        return plan.files;
      },
      request);
  const planner::Decision& d = plan.decision;
  out.wanted = std::move(plan.env);
  out.injection = std::move(plan.injection);
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
  return decided_job_from_json(json::parse(reply), request.input.policy);
}

json to_json(const DecidedJob& d) {
  return {{"dir", d.dir},           {"wanted", assignments_json(d.wanted)}, {"record", d.record},
          {"summary", d.summary},   {"changes", d.changes},                 {"notes", d.notes}};
}

DecidedJob decided_job_from_json(const json& j, const policies::EffectivePolicy& policy) {
  DecidedJob d;
  d.dir = j.at("dir").get<std::string>();
  const auto& wanted = j.at("wanted");
  if (!wanted.is_array() || wanted.size() > kMaxDecisionVariables)
    throw std::runtime_error("the decision named more than " + std::to_string(kMaxDecisionVariables) + " variables");
  for (const auto& a : wanted) {
    planner::EnvAssignment v{a.at("name").get<std::string>(), a.at("value").get<std::string>(),
                             a.at("reason").get<std::string>()};
    if (!plain_name(v.name)) throw std::runtime_error("the decision named a variable that is not a plain name: " + capped(v.name));
    d.wanted.push_back(std::move(v));
  }
  // The site's rules, applied here: whatever the child said about forced, default or forbidden variables.
  d.injection = planner::policy_injection(policy, d.wanted);
  d.record = j.at("record");
  if (!d.record.is_object()) throw std::runtime_error("the decision's record is not an object");
  d.summary = j.at("summary").get<std::string>();
  d.changes = j.at("changes").get<std::vector<std::string>>();
  d.notes = j.at("notes").get<std::vector<std::string>>();
  return d;
}

}  // namespace paratune::job
