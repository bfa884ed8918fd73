// The decision of a job step, made where the user's input cannot hurt slurmstepd: in a forked child that has
// become the job's user for good (user_identity.h), with a deadline and a bounded reply (child_call.h). The child
// reads the @FILE scenario, parses it, decides, writes the plan files as the user and answers with what the
// parent needs: the decision's variables, the log summary and the decision's part of the tuning-log line. The
// site policy's variable rules (forced, default, forbidden, allow_override) are applied by the parent to the
// variables the child names, never taken from the child: a child that runs the user's input could be made to
// answer anything. A deep or huge scenario, a search that runs too long or a crash costs the child, never the
// daemon.
//
// The plan directory is the job's user's and private: <base>/paratune-<jobid> made 0700 with files 0600 (0750 and
// 0640 with plugstack plan_group_read=yes), whatever the umask; the first of `dir_bases` where the user can have
// it, else a fresh directory under `fallback_base` (mkdtemp: /tmp/paratune-<jobid>-XXXXXX), never a name another
// user could have taken first.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "paratune/planner/decision.h"
#include "user_identity.h"

namespace paratune::job {

struct DecideRequest {
  planner::DecisionInput input;            // input.scenario_text is ignored: the child reads scenario_path
  std::string scenario_path;               // the resolved @FILE path; "" when the option names none
  std::string resume_path;                 // resume=PLAN resolved, or a requeued job's previous plan.json; "" none
  bool resume_optional = false;            // the job's own earlier plan: absent means a first run, not an error
  std::vector<policies::PolicyChange> mode_changes;  // what the policy changed while deciding the mode
  JobUser user;
  std::string job_id;
  std::vector<std::string> dir_bases;      // where the plan directory may go, in order of preference
  std::string fallback_base = "/tmp";      // else a fresh directory here ("" = none)
  bool group_readable = false;             // plan_group_read=yes: 0750/0640 instead of 0700/0600
  int timeout_ms = 10000;
};

struct DecidedJob {
  std::string dir;                         // the plan directory the child wrote
  std::vector<planner::EnvAssignment> wanted;  // the decision's variables, before the policy
  planner::EnvInjection injection;         // what to do to the job's environment: policy_injection(policy, wanted)
  nlohmann::json record;                   // decision_record() of the decision
  std::string summary;                     // one line for the logs
  std::vector<std::string> changes;        // policy changes, described
  std::vector<std::string> notes;
};

inline constexpr size_t kMaxScenarioBytes = 1u << 20;
inline constexpr size_t kMaxDecisionReply = 4u << 20;
inline constexpr size_t kMaxDecisionVariables = 512;

// The child's work, in this process (tests, and `paratune advise --paratune`, which runs as its user already):
// the planner's plan (planner/: plan_job), its files written, its variables. Throws on any problem.
DecidedJob decide_and_write(const DecideRequest& request);

// decide_and_write in a forked child as the job's user, bounded by request.timeout_ms. Throws on any problem
// (the child's own message, a timeout, a crash), never blocking beyond the deadline and its grace.
DecidedJob decide_in_child(const DecideRequest& request);

// The reply's JSON form, both ways (exposed for tests and fuzzing). The reply carries `wanted`, not the injection:
// decided_job_from_json applies `policy` itself. Throws on a malformed reply, also on a variable whose name is not
// a plain NAME ([A-Za-z_][A-Za-z0-9_]*, at most 128 bytes) or more than kMaxDecisionVariables of them.
nlohmann::json to_json(const DecidedJob& d);
DecidedJob decided_job_from_json(const nlohmann::json& j, const policies::EffectivePolicy& policy);

}  // namespace paratune::job
