// Remote context (slurmstepd), once per step per node: the SPANK entry points, each catching everything (no
// exception crosses the C ABI); the work is in one file per callback (remote.h):
//   init          (root)  read plugstack arguments, register --paratune (its value arrives after init)
//   init_post_opt (root)  load the site policy, decide the mode, open the per-job log, probe (cached)
//                         (remote_setup.cpp, remote_policy.cpp, remote_inherit.cpp)
//   user_init     (user)  decide, write the plan files as the job's user, inject the environment (remote_decide.cpp)
//   task_init     (user)  only with on_error = "closed" after a failure: fail the step with the reason
//   task_exit     (root)  how this node's tasks ended, for the tuning log (remote_exit.cpp)
//   exit          (root)  append the job's line to the site tuning log (node 0 of the deciding step); with
//                         admin_comment=yes, its summary into the job's AdminComment (remote_exit.cpp)
// Any failure: logged with the paratune: prefix, the job runs untouched, the callback returns 0 — unless the
// site policy says on_error = "closed", the only way paratune ever fails a job.
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <string>

#include "contexts.h"
#include "job/metrics_file.h"
#include "remote.h"
#include "spank_env.h"

namespace paratune::plugin {

namespace {

// A failure inside a callback: fail open (log, job untouched) unless the site policy says on_error = closed.
int handle_failure(const char* where, const std::exception& e) {
  auto& s = state();
  s.metric_failures.push_back(job::failure_kind(where, e.what()));
  if (s.policy.on_error == policies::OnError::Closed) {
    s.fail_closed = std::string(where) + ": " + e.what();
    log().error("{}: {}; the site policy says on_error = \"closed\": the step will fail", where, e.what());
  } else {
    log().error("{}: {}; the job runs untouched", where, e.what());
  }
  return 0;
}

}  // namespace

int remote_init(spank_t sp, int ac, char** av) {
  load_config(ac, av);
  return register_option(sp);
}

int remote_post_opt(spank_t sp, int, char**) {
  try {
    return remote::post_opt(sp);
  } catch (const std::exception& e) {
    return handle_failure("init_post_opt", e);
  }
}

int remote_user_init(spank_t sp, int, char**) {
  try {
    remote::user_init(sp);
  } catch (const std::exception& e) {
    handle_failure("user_init", e);
  }
  // Policy on every path: whatever failed (nothing fits, a bad or missing scenario file, the probe, a timeout),
  // the site's forced, default and forbidden variables hold for a step they apply to.
  auto& s = state();
  if (!s.env_injected && s.env_rules_apply) {
    try {
      SpankEnvironment env(sp);
      remote::inject_policy_env(env);
    } catch (const std::exception& e) {
      log().error("user_init: could not apply the site policy's variables: {}", e.what());
    }
  }
  return 0;
}

int remote_task_init(spank_t, int, char**) {
  const auto& reason = state().fail_closed;
  if (reason.empty()) return 0;
  // This runs in the forked task just before exec: its stderr is the job's, so the user sees why. Slurm ignores
  // a failing callback of an `optional` plugin (plugstack.c swallows it), so the task ends itself: exit status 1,
  // the step and job fail, slurmstepd and the node are unaffected.
  std::fprintf(stderr, "paratune: %s; the site policy fails jobs on paratune errors (on_error = \"closed\")\n",
               reason.c_str());
  std::fflush(stderr);
  ::_exit(1);
}

int remote_task_exit(spank_t sp, int, char**) {
  try {
    remote::note_task_exit(sp);
  } catch (const std::exception& e) {  // nothing crosses the C ABI (the status text is built with allocations)
    log().error("task_exit: {}", e.what());
  }
  return 0;
}

int remote_exit(spank_t sp, int, char**) {
  try {
    remote::end_step(sp);
  } catch (const std::exception& e) {  // nothing crosses the C ABI
    log().error("exit: {}", e.what());
  }
  return 0;
}

}  // namespace paratune::plugin
