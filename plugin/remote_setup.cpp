// init_post_opt of the remote context (slurmstepd, root), once per step per node: who runs the job and what it has
// here, Slurm's view of the step (partition, nodes), the site policy and the mode, the per-job log, the probe
// (cached), and what the step will do in user_init (state().role: deciding, inheriting, the site's variables
// only, or nothing). Everything the deciding child needs later is read here, as root, before the user's code runs.
#include <fcntl.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "job/bounded_probe.h"
#include "job/log_text.h"
#include "job/user_identity.h"
#include "paratune/planner/allocation.h"
#include "paratune/probe/probe.h"
#include "remote.h"
#include "slurm_step_view.h"
#include "slurm_topology.h"
#include "spank_env.h"

namespace paratune::plugin::remote {

namespace {

constexpr int kTopologyTimeoutMs = 3000;

std::string step_name(unsigned step) {
  if (step == kBatchStep) return "batch";
  if (step == kExternStep) return "extern";
  return std::to_string(step);
}

// The job user's name for the log (the batch step's environment may not carry SLURM_JOB_USER yet).
std::string user_name(uid_t uid) {
  struct passwd pw {}, *found = nullptr;
  char buf[4096];
  if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found) return found->pw_name;
  return std::to_string(uid);
}

// The job goes on without its per-job log, but the admin must be able to find out why it is missing.
void warn_no_job_log(const std::string& path, int err) {
  log().warn("cannot open the per-job log {}: {}; this job's messages go to the Slurm log only", path,
             std::strerror(err));
}

void open_job_log(const std::string& log_dir, const std::string& job_id) {
  const std::string where = log_dir + "/jobs/" + job::job_dir_name(job_id);
  common::UniqueFd dir;
  try {
    dir = job_directory();
  } catch (const std::exception& e) {
    log().warn("cannot use {}: {}; this job's messages go to the Slurm log only", where, e.what());
    return;
  }
  common::UniqueFd fd(::openat(dir.get(), job::kJobLogName, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0640));
  if (!fd) {
    const int err = errno;  // before building the path: an allocation may change errno
    return warn_no_job_log(where + "/" + job::kJobLogName, err);
  }
  attach_job_log(fd.get());
  state().job_log_fd = std::move(fd);
}

// The job's uid, gid and supplementary groups from Slurm. Without uid and gid nothing is done on the user's behalf
// (a default of 0 would make every "drop to the user" a drop to root).
job::JobUser job_user(spank_t sp) {
  job::JobUser u;
  const bool have_uid = spank_get_item(sp, S_JOB_UID, &u.uid) == ESPANK_SUCCESS;
  const bool have_gid = spank_get_item(sp, S_JOB_GID, &u.gid) == ESPANK_SUCCESS;
  u.known = have_uid && have_gid;
  gid_t* gids = nullptr;
  int count = 0;
  if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &gids, &count) == ESPANK_SUCCESS && gids && count > 0)
    u.groups.assign(gids, gids + std::min(count, 65536));
  else if (u.known)
    u.groups = job::groups_of(user_name(u.uid), u.gid);
  return u;
}

// The job's memory on this node from slurmstepd's own record (not the environment the user controls): the host
// memory the plan may pin for offloaded activations; 0 where Slurm enforces none. slurmd resolves a per-CPU request
// to the node's share before slurmstepd sees it; a value still carrying the MEM_PER_CPU bit is not trusted.
uint64_t job_memory_mb(spank_t sp) {
  constexpr uint64_t kMemPerCpuFlag = 0x8000000000000000ull;
  const uint64_t mb = item<uint64_t>(sp, S_JOB_ALLOC_MEM, 0);
  return (mb & kMemPerCpuFlag) ? 0 : mb;
}

// Who runs the job and what it has on this node (Slurm's items, and the GPU variables slurmstepd itself sets).
// A problem with the job's own environment (a CUDA_VISIBLE_DEVICES the user exported, where gres does not set it)
// is returned, not thrown: raised only once the site policy is loaded, so its on_error and its forced and forbidden
// variables still hold for the job.
std::string read_identity(spank_t sp, const planner::JobEnvironment& env, unsigned step) {
  auto& s = state();
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) s.job.hostname = host;
  s.job.job_id = std::to_string(item<uint32_t>(sp, S_JOB_ID, 0));
  s.job.step_id = step_name(step);
  s.user = job_user(sp);
  s.job.uid = s.user.uid;
  s.job.gid = s.user.gid;
  s.job.user = s.user.known ? user_name(s.user.uid) : "unknown";
  std::string problem;
  try {
    s.alloc = planner::allocation_from_env(env, step == kBatchStep);
  } catch (const std::exception& e) {
    problem = e.what();
  }
  s.alloc.memory_mb = job_memory_mb(sp);
  s.job.gpus_on_node = s.alloc.gpus_on_node;
  return problem;
}

// The partition recorded for the job on the nodes that share log_dir (job/job_files.h); nullopt when none.
std::optional<std::string> partition_recorded_here() {
  try {
    return job::recorded_partition(job_directory().get());
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void record_partition_here(const std::string& partition) {
  try {
    job::record_partition(job_directory().get(), partition);
  } catch (const std::exception& e) {
    log().debug("job {} step {}: the job's partition is not recorded: {}", state().job.job_id, state().job.step_id,
                e.what());
  }
}

// Partition, node count and node list of the step, from Slurm's own view (slurm_step_view.h): the batch step's
// environment, which slurmd set; for any other step slurmctld, asked in a bounded child — unless the step only
// inherits the job's plan and the job's partition is already recorded here (all such a step needs).
StepView view_of_step(spank_t sp, const planner::JobEnvironment& env, unsigned step) {
  auto& s = state();
  if (step == kBatchStep) {
    StepView v = batch_step_view(env);
    if (!v.partition.empty() && v.partition != partition_recorded_here().value_or("")) record_partition_here(v.partition);
    return v;
  }
  const auto recorded = partition_recorded_here();
  const int nnodes_item = static_cast<int>(item<uint32_t>(sp, S_JOB_NNODES, 0));
  if (recorded && env.get("PARATUNE_PLAN")) {
    StepView v = other_step_view(SlurmctldStep{*recorded, "", ""}, std::nullopt, nnodes_item);
    v.partition_source = "the job's partition recorded on this node";
    v.from_slurmctld = false;
    v.node_list = StepNodes{};  // not needed by a step that inherits the plan: slurmctld is not asked
    return v;
  }
  StepView v = other_step_view(ask_slurmctld(item<uint32_t>(sp, S_JOB_ID, 0), step), recorded, nnodes_item);
  if (v.from_slurmctld && v.partition != recorded.value_or("")) record_partition_here(v.partition);
  if (!v.from_slurmctld)
    log().warn("job {} step {}: {}; partition: {}, node count {} (S_JOB_NNODES), no node names", s.job.job_id,
               s.job.step_id, v.node_list.problem, v.partition_source, v.nodes);
  return v;
}

void take_step_view(const StepView& v) {
  auto& s = state();
  s.alloc.partition = v.partition;
  s.alloc.nodes = v.nodes;
  s.job.partition = v.partition;
  s.job.nodes = v.nodes;
  s.node_names = v.node_list.names;
  s.node_list_problem = v.node_list.problem;
  s.job.nodelist = v.node_list.compact.empty() ? s.job.hostname : v.node_list.compact;
}

// Where the deciding step's nodes sit under Slurm's leaf switches (several nodes only); without an answer the plan
// is made as if every node pair had the NICs' full bandwidth, and the log says why.
void read_fabric_placement() {
  auto& s = state();
  if (s.node_names.size() < 2) return;
  const auto leaves = leaf_switches(s.node_names, kTopologyTimeoutMs);
  if (!leaves.problem.empty()) {
    log().info("job {} step {}: switch placement not used: {}", s.job.job_id, s.job.step_id, job::capped(leaves.problem));
    return;
  }
  s.fabric = planner::placement_from_leaves(s.node_names, leaves.leaf_of);
  if (s.fabric)
    log().debug("job {} step {}: {} nodes under {} leaf switches", s.job.job_id, s.job.step_id,
                s.fabric->node_order.size(), s.fabric->placement.nodes_per_leaf.size());
}

}  // namespace

int post_opt(spank_t sp) {
  auto& s = state();
  if (!s.config_ok) return 0;
  const unsigned step = item<uint32_t>(sp, S_JOB_STEPID, 0);
  if (step == kExternStep) return 0;

  SpankEnvironment env(sp);
  std::string env_problem = read_identity(sp, env, step);
  const PolicySource policy_file = read_policy_file();
  if (!s.option_given && !may_act_without_option(policy_file)) return 0;  // nothing to do: ask Slurm nothing
  try {
    take_step_view(view_of_step(sp, env, step));
  } catch (const std::exception& e) {
    if (env_problem.empty()) env_problem = e.what();
  }
  const planner::Allocation& alloc = s.alloc;
  if (!load_policy(policy_file, alloc.partition)) return 0;
  // Until the mode is known, a failure still leaves the site's variables in force for a job that asked for paratune.
  s.env_rules_apply = s.option_given || s.policy.env.all_jobs;
  if (!env_problem.empty()) throw std::runtime_error(env_problem);  // now under the policy's on_error and variables
  if (s.option_given) s.spec = planner::parse_option_spec(s.option_text);
  const auto md = planner::decide_job_mode(s.spec ? &*s.spec : nullptr, s.config, s.policy, alloc.gpus_on_node);
  s.mode = md.mode;
  s.mode_changes = md.changes;
  s.env_rules_apply = md.env_rules_apply;
  if (md.mode == planner::Mode::Off) {
    s.role = md.env_rules_apply ? StepRole::PolicyOnly : StepRole::Off;
    if (s.option_given) log().info("job {} step {}: {}", s.job.job_id, s.job.step_id, md.why);
    return 0;
  }
  if (!s.spec) s.spec = planner::parse_option_spec("");  // on by default: the site's default scenario
  open_job_log(s.config.log_dir, s.job.job_id);
  log().info("job {} step {}: {}", s.job.job_id, s.job.step_id, md.why);
  if (const int components = planner::het_job_components(env); components > 1) {
    // Components may differ in nodes, GPUs and partition, and a step may span several: one plan for one
    // homogeneous allocation does not describe that. Defined behaviour: no plan, the site's variables still hold.
    log().info("job {} step {}: heterogeneous job ({} components): paratune plans for homogeneous allocations "
               "only; no plan, the job runs untouched (the site policy's variables still apply)", s.job.job_id,
               s.job.step_id, components);
    s.role = md.env_rules_apply ? StepRole::PolicyOnly : StepRole::Off;
    return 0;
  }
  if (!s.node_list_problem.empty())
    log().warn("job {} step {}: node list not recorded: {}", s.job.job_id, s.job.step_id, s.node_list_problem);
  if (alloc.gpus_on_node == 0 && alloc.gpu_indexes.empty()) {
    log().info("job {} step {}: the job requested no GPUs on this node; no plan", s.job.job_id, s.job.step_id);
    s.role = md.env_rules_apply ? StepRole::PolicyOnly : StepRole::Off;
    return 0;
  }
  if (!s.user.known) throw std::runtime_error("Slurm did not give the job's uid and gid; no plan");

  load_calibration();
  load_profile();
  probe::ProbeOptions opts;
  opts.topology_file = s.config.topology;
  opts.allocated_gpus = alloc.gpu_indexes;
  probe::CacheOptions cache;
  cache.path = s.config.cache;
  probe::CacheResult cached;
  s.topology = job::probe_with_deadline(opts, cache, s.config.probe_timeout_ms, &cached);
  log().debug("probe: {} ({})", cached.hit ? "cache hit" : "probed", cached.reason);

  // srun steps inside a batch script inherit the batch step's decision: one decision per job. The batch step
  // itself always decides (a PARATUNE_PLAN exported by the user is no decision), and an inheriting step still
  // gets the site's forced and forbidden variables: exporting PARATUNE_PLAN must not be a way around them.
  auto inherited = step == kBatchStep ? std::nullopt : env.get("PARATUNE_PLAN");
  if (inherited) {
    s.role = StepRole::Inheriting;
    check_inherited_plan(env, *inherited);
    return 0;
  }
  s.role = StepRole::Deciding;
  read_fabric_placement();
  return 0;
}

}  // namespace paratune::plugin::remote
