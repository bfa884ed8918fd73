// A step that inherits the job's decision (an srun inside the batch script, on any node; remote context,
// init_post_opt): this node's topology fingerprint against the plan's and the plan file's visibility to the job's
// user here, logged on this node and recorded in the job's directory for node 0's tuning-log line (node_checks.h).
#include <unistd.h>

#include "job/log_text.h"
#include "job/node_checks.h"
#include "job/user_identity.h"
#include "paratune/common/child_call.h"
#include "remote.h"

namespace paratune::plugin::remote {

namespace {

constexpr int kPlanCheckTimeoutMs = 3000;

// Whether the job's user can read `path` on this node: in a child that becomes the user for good, bounded in time
// (the plan usually sits on a network file system, which may hang; slurmstepd must not).
bool plan_readable_here(const std::string& path) {
  auto& s = state();
  try {
    return common::call_in_child(
               [&] {
                 job::become_user_for_good(s.user);
                 return std::string(::access(path.c_str(), R_OK) == 0 ? "yes" : "no");
               },
               kPlanCheckTimeoutMs, "checking the plan file", 16) == "yes";
  } catch (const std::exception& e) {
    log().warn("job {} step {}: could not check the plan file: {}", s.job.job_id, s.job.step_id, e.what());
    return false;
  }
}

}  // namespace

// The node's fingerprint against the plan's, the plan file's visibility here: both logged on this node and recorded
// for node 0's line.
void check_inherited_plan(const planner::JobEnvironment& env, const std::string& plan) {
  auto& s = state();
  const auto fp = env.get("PARATUNE_FINGERPRINT").value_or("");
  if (fp != s.topology->fingerprint)
    log().warn("job {} step {} on {}: this node's topology fingerprint {} differs from the plan's {} ({}); "
               "the plan was made for another kind of node", s.job.job_id, s.job.step_id, s.job.hostname,
               s.topology->fingerprint, job::capped(fp), job::capped(plan));
  else
    log().debug("job {} step {}: inherited plan {}, fingerprint matches", s.job.job_id, s.job.step_id,
                job::capped(plan));
  const bool readable = s.user.known && plan_readable_here(plan);
  if (!readable)
    log().warn("job {} step {} on {}: the plan file {} is not readable on this node (job_dir not shared with the "
               "deciding node?); the job's environment carries the plan: PARATUNE_* (degrees, batch, ZeRO, "
               "recompute), NCCL_*/CUDA_* and the framework arguments in PARATUNE_ARGS_TEXT", s.job.job_id,
               s.job.step_id, s.job.hostname, job::capped(plan));
  try {
    if (!job::record_node_check(job_directory().get(),
                                {s.job.hostname, s.job.step_id, s.topology->fingerprint, fp, readable}))
      log().info("job {} step {}: this node's check is not recorded: the job has {} recorded already", s.job.job_id,
                 s.job.step_id, job::kMaxNodeChecks);
  } catch (const std::exception& e) {
    log().warn("job {} step {}: this node's check is not recorded for the tuning log: {}", s.job.job_id,
               s.job.step_id, e.what());
  }
}

}  // namespace paratune::plugin::remote
