// user_init of the remote context (slurmstepd, as the job's user), once per step per node: the deciding step's
// decision, made in a bounded child that is the job's user (job/decision_child.h), injected into the job's
// environment; an inheriting or policy-only step gets the site's forced, default and forbidden variables alone.
#include "job/decide_request.h"
#include "job/decision_child.h"
#include "job/log_text.h"
#include "remote.h"
#include "spank_env.h"

namespace paratune::plugin::remote {

namespace {

// User values in the logs are capped and escaped (job/log_text.h): 16 variables of 100 kB must not become 1.6 MB
// of slurmd log, nor a newline in a value a forged line.
void log_outcome(const planner::EnvOutcome& o) {
  for (const auto& k : o.kept) log().info("kept the user's {}={}", job::capped(k.name), job::capped(k.value));
  for (const auto& r : o.replaced)
    log().info("replaced the user's {}={}: {}", job::capped(r.name), job::capped(r.value), r.reason);
  for (const auto& r : o.removed) log().info("removed {} from the job environment: {}", job::capped(r.name), r.reason);
  for (const auto& f : o.failed) log().warn("could not set or remove {}", job::capped(f.name));
}

// What this step knows, for the one request builder the CLI's dry run shares (job/decide_request.h).
job::DecideRequest decide_request() {
  auto& s = state();
  job::StepFacts f;
  f.config = s.config;
  f.spec = *s.spec;
  f.alloc = s.alloc;  // partition and node count from Slurm's view of the step, not its environment
  f.node_names = s.node_names;
  if (s.job.step_id == "batch") f.batch_host = s.job.hostname;
  f.topology = *s.topology;
  f.policy = s.policy;
  f.mode = {s.mode, s.env_rules_apply, "", s.mode_changes};
  f.calibration = s.calibration;
  f.profile = s.profile;
  f.fabric = s.fabric;
  f.user = s.user;
  f.job_id = s.job.job_id;
  return job::decide_request(f);
}

}  // namespace

// The site's forced/default/forbidden variables alone: paratune is off for the step, or failed on the way.
void inject_policy_env(planner::JobEnvironment& env) {
  auto& s = state();
  const auto inj = planner::policy_injection(s.policy, {});
  s.env_injected = true;
  log_outcome(planner::inject(env, inj.assignments, inj.force, inj.unset));
}

int user_init(spank_t sp) {
  auto& s = state();
  SpankEnvironment env(sp);
  switch (s.role) {
    case StepRole::Off:
      return 0;
    case StepRole::PolicyOnly:  // paratune is off for this step; the site's forced/default/forbidden variables hold
    case StepRole::Inheriting:  // the batch step decided: this step gets only the site's variables on top
      inject_policy_env(env);
      return 0;
    case StepRole::Deciding:
      break;
  }
  if (!s.topology || !s.spec) return 0;
  // The @FILE read, its parse and the search run in a child that is the job's user, bounded in time: a hostile
  // scenario (50,000 nested tables, a 2^30 global batch) costs that child, never slurmstepd.
  job::DecidedJob d = job::decide_in_child(decide_request());
  s.env_outcome = planner::inject(env, d.injection.assignments, d.injection.force, d.injection.unset);
  s.env_injected = true;
  s.report_path = env.get("PARATUNE_REPORT").value_or("");
  log().info("job {} step {}: {}; {} variables set, {} kept", s.job.job_id, s.job.step_id, d.summary,
             s.env_outcome.set.size(), s.env_outcome.kept.size());
  log_outcome(s.env_outcome);
  for (const auto& c : d.changes) log().info("policy: {}", c);
  for (const auto& n : d.notes) log().info("note: {}", n);
  s.decision = std::move(d);
  return 0;
}

}  // namespace paratune::plugin::remote
