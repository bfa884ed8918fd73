// Remote context (slurmstepd), once per step per node:
//   init          (root)  read plugstack arguments, register --paratune (its value arrives after init)
//   init_post_opt (root)  load the site policy, decide the mode, open the per-job log, probe (cached)
//   user_init     (user)  decide, write the plan files as the job's user, inject the environment
//   task_init     (user)  only with on_error = "closed" after a failure: fail the step with the reason
//   exit          (root)  append the job's line to the site tuning log (node 0 of the deciding step); with
//                         admin_comment=yes, its summary into the job's AdminComment (admin_comment.h)
// Any failure: logged with the paratune: prefix, the job runs untouched, the callback returns 0 — unless the
// site policy says on_error = "closed", the only way paratune ever fails a job.
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <system_error>

#include "admin_comment.h"
#include "contexts.h"
#include "job/admin_comment_text.h"
#include "paratune/planner/allocation.h"
#include "job/bounded_probe.h"
#include "paratune/common/child_call.h"
#include "paratune/planner/decision.h"
#include "job/decide_request.h"
#include "job/decision_child.h"
#include "job/job_files.h"
#include "job/log_text.h"
#include "job/node_checks.h"
#include "job/metrics_file.h"
#include "job/report_reader.h"
#include "paratune/common/safe_file.h"
#include "job/tuning_line.h"
#include "job/tuning_log_writer.h"
#include "job/tuning_record.h"
#include "paratune/probe/probe.h"
#include "plugin_state.h"
#include "slurm_nodes.h"
#include "slurm_step_view.h"
#include "slurm_topology.h"
#include "spank_env.h"

namespace paratune::plugin {

namespace {

constexpr int kReportTimeoutMs = 5000;
constexpr int kPlanCheckTimeoutMs = 3000;
constexpr int kTopologyTimeoutMs = 3000;

template <typename T>
T item(spank_t sp, spank_item_t which, T fallback) {
  T value{};
  return spank_get_item(sp, which, &value) == ESPANK_SUCCESS ? value : fallback;
}

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

// The job goes on without its per-job log, but the admin must be able to find out why it is missing.
void warn_no_job_log(const std::string& path, int err) {
  log().warn("cannot open the per-job log {}: {}; this job's messages go to the Slurm log only", path,
             std::strerror(err));
}

// <log_dir>/jobs/<jobid>/ (job/job_files.h), opened as root inside root-owned directories (jobs/ checked like
// log_dir: root's, not group/world-writable, so no user can plant a link or a file there).
common::UniqueFd job_directory() { return job::open_job_dir_in(state().config.log_dir, state().job.job_id); }

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

// The site policy file, read once per step: nullopt with no error = no policy (a missing default file).
struct PolicySource {
  std::optional<policies::PolicyFile> file;
  std::optional<policies::PolicyError> error;
};

PolicySource read_policy_file() {
  auto& s = state();
  try {
    return {policies::load_policy_secure(s.config.policy), std::nullopt};
  } catch (const policies::PolicyError& e) {
    if (e.kind() == policies::PolicyError::Kind::Missing && !s.config.policy_explicit) return {};
    return {std::nullopt, e};
  }
}

// Whether paratune can do anything at all for a step without --paratune: decide by default, or apply the site's
// variables. Otherwise the step is left alone before anything is asked of slurmctld.
bool may_act_without_option(const PolicySource& src) {
  if (state().config.enabled_by_default || src.error) return true;
  if (!src.file) return false;
  auto acts = [](const policies::PolicyLayer& l) {
    return l.on_by_default.value_or(false) || !l.force.empty() || !l.defaults.empty() || !l.forbid.empty();
  };
  if (acts(src.file->defaults)) return true;
  for (const auto& [name, layer] : src.file->partitions)
    if (acts(layer)) return true;
  return false;
}

// The site policy for the job's partition. Anything wrong with the file is loud: every problem is logged, and
// on_error decides (read from the broken file where possible).
bool load_policy(const PolicySource& src, const std::string& partition) {
  auto& s = state();
  s.policy = policies::EffectivePolicy{};
  if (!src.error) {
    if (src.file) s.policy = policies::resolve(*src.file, partition);
    return true;
  }
  const auto& e = *src.error;
  s.metric_failures.push_back("policy");
  for (const auto& p : e.problems()) log().error("policy: {}", p);
  if (e.fails_closed(partition)) {
    s.policy.on_error = policies::OnError::Closed;
    s.fail_closed = "the site policy " + s.config.policy + " is broken (see the Slurm log)";
    log().error("the broken policy says on_error = \"closed\": the step will fail");
  } else {
    log().error("the site policy {} is unusable; paratune does nothing for this job", s.config.policy);
  }
  return false;
}

// The site's calibration (`paratune calibrate` output), read as root: absent is normal, anything else that is
// wrong is logged and the shipped model is used.
void load_calibration() {
  auto& s = state();
  if (::access(s.config.calibration.c_str(), F_OK) != 0) return;
  try {
    s.calibration = advisor::parse_calibration(common::read_trusted_file(s.config.calibration, job::kMaxScenarioBytes),
                                               s.config.calibration);
  } catch (const std::exception& e) {
    log().error("calibration: {}; using the shipped model", e.what());
  }
}

// The node type's hardware profile (`paratune measure` output: the partition's [facts] profile, else plugstack
// profile=), read as root like the calibration: absent is normal; whether it is for this node is decided with the
// node's fingerprint (decision.cpp).
void load_profile() {
  auto& s = state();
  const std::string path = s.policy.facts.profile.value_or(s.config.profile);
  if (path.empty() || ::access(path.c_str(), F_OK) != 0) return;
  try {
    s.profile = advisor::parse_profile(common::read_trusted_file(path, job::kMaxScenarioBytes), path);
  } catch (const std::exception& e) {
    log().error("hardware profile: {}; using the catalog's rates", e.what());
  }
}

// User values in the logs are capped and escaped (job/log_text.h): 16 variables of 100 kB must not become 1.6 MB
// of slurmd log, nor a newline in a value a forged line.
void log_outcome(const planner::EnvOutcome& o) {
  for (const auto& k : o.kept) log().info("kept the user's {}={}", job::capped(k.name), job::capped(k.value));
  for (const auto& r : o.replaced)
    log().info("replaced the user's {}={}: {}", job::capped(r.name), job::capped(r.value), r.reason);
  for (const auto& r : o.removed) log().info("removed {} from the job environment: {}", job::capped(r.name), r.reason);
  for (const auto& f : o.failed) log().warn("could not set or remove {}", job::capped(f.name));
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

// Who runs the job and what it has on this node (Slurm's items, and the GPU variables slurmstepd itself sets).
void read_identity(spank_t sp, const planner::JobEnvironment& env, unsigned step) {
  auto& s = state();
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) s.job.hostname = host;
  s.job.job_id = std::to_string(item<uint32_t>(sp, S_JOB_ID, 0));
  s.job.step_id = step_name(step);
  s.user = job_user(sp);
  s.job.uid = s.user.uid;
  s.job.gid = s.user.gid;
  s.job.user = s.user.known ? user_name(s.user.uid) : "unknown";
  s.alloc = planner::allocation_from_env(env, step == kBatchStep);
  s.job.gpus_on_node = s.alloc.gpus_on_node;
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

// A step that inherits the job's decision (srun inside the batch script, on any node): the node's fingerprint
// against the plan's, the plan file's visibility here, both logged on this node and recorded for node 0's line.
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

int post_opt(spank_t sp) {
  auto& s = state();
  if (!s.config_ok) return 0;
  const unsigned step = item<uint32_t>(sp, S_JOB_STEPID, 0);
  if (step == kExternStep) return 0;

  SpankEnvironment env(sp);
  read_identity(sp, env, step);
  const PolicySource policy_file = read_policy_file();
  if (!s.option_given && !may_act_without_option(policy_file)) return 0;  // nothing to do: ask Slurm nothing
  take_step_view(view_of_step(sp, env, step));
  const planner::Allocation& alloc = s.alloc;
  if (!load_policy(policy_file, alloc.partition)) return 0;
  // Until the mode is known, a failure still leaves the site's variables in force for a job that asked for paratune.
  s.env_rules_apply = s.option_given || s.policy.env.all_jobs;
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

// The site's forced/default/forbidden variables alone: paratune is off for the step, or failed on the way.
void inject_policy_env(planner::JobEnvironment& env) {
  auto& s = state();
  const auto inj = planner::policy_injection(s.policy, {});
  s.env_injected = true;
  log_outcome(planner::inject(env, inj.assignments, inj.force, inj.unset));
}

// What this step knows, for the one request builder the CLI's dry run shares (job/decide_request.h).
job::DecideRequest decide_request() {
  auto& s = state();
  job::StepFacts f;
  f.config = s.config;
  f.spec = *s.spec;
  f.alloc = s.alloc;  // partition and node count from Slurm's view of the step, not its environment
  f.node_names = s.node_names;
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

// The line into the site tuning log, where and how the policy says: its path, mode and group, indexed for
// `paratune summary --job` (job/tuning_log_writer.h). Throws when the line could not be appended.
void write_tuning_line(const std::string& text) {
  auto& s = state();
  const auto written = job::append_tuning_line(s.policy.log, s.config.log_dir, s.job.job_id, text);
  for (const auto& warning : written.warnings) log().warn("{}", warning);
  if (!written.error.empty()) throw std::runtime_error(written.error);
}

// One tuning-log line per job: the first deciding step of the job claims it (jobs/<id>/line, created O_EXCL in
// the job's root-owned directory); later deciding steps (several sruns in one salloc) write none.
// A marker that cannot be made (read-only log_dir, while the policy puts the tuning log elsewhere) must not cost
// the line: the step writes it, and the Slurm log says why the job may then have more than one.
bool claim_tuning_line(const std::string& job_id) {
  const auto claim = job::claim_tuning_line(state().config.log_dir, job_id);
  if (!claim.problem.empty())
    log().warn("tuning log: cannot mark job {} as logged ({}); writing its line anyway", job_id, claim.problem);
  return claim.write;
}

// What the job achieved, from its report: read and parsed as the job's user in a bounded child, the fields made
// here from its typed answer (job/report_reader.h). A bad report never stops the line from being written; its
// "report" field then says why in the reader's fixed words, never the user's.
void add_report(nlohmann::json& line) {
  auto& s = state();
  if (s.report_path.empty()) {
    line["report"] = "missing";
    return;
  }
  auto fields = job::report_fields_as_user(s.report_path, s.user, line["predicted"], s.policy.suspect_ratio,
                                           kReportTimeoutMs);
  job::add_report_fields(line, std::move(fields),
                         s.node_names.empty() ? std::vector<std::string>{s.job.hostname} : s.node_names);
}

// What the other nodes' steps found (node_checks.h): their fingerprint checks and whether they saw the plan file.
void add_node_checks(nlohmann::json& line) {
  try {
    job::add_node_checks(line, job::collect_node_checks(job_directory().get()));
  } catch (const std::exception& e) {
    log().warn("tuning log: the other nodes' checks are not included: {}", e.what());
  }
}

}  // namespace

int remote_init(spank_t sp, int ac, char** av) {
  load_config(ac, av);
  return register_option(sp);
}

int remote_post_opt(spank_t sp, int, char**) {
  try {
    return post_opt(sp);
  } catch (const std::exception& e) {
    return handle_failure("init_post_opt", e);
  }
}

int remote_user_init(spank_t sp, int, char**) {
  try {
    user_init(sp);
  } catch (const std::exception& e) {
    handle_failure("user_init", e);
  }
  // Policy on every path: whatever failed (nothing fits, a bad or missing scenario file, the probe, a timeout),
  // the site's forced, default and forbidden variables hold for a step they apply to.
  auto& s = state();
  if (!s.env_injected && s.env_rules_apply) {
    try {
      SpankEnvironment env(sp);
      inject_policy_env(env);
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
  // How the step ended, for the tuning log: the worst task status of this node wins.
  auto& s = state();
  int status = 0;
  if (!s.decision || spank_get_item(sp, S_TASK_EXIT_STATUS, &status) != ESPANK_SUCCESS) return 0;
  std::string st = "completed";
  if (WIFSIGNALED(status)) st = "killed (signal " + std::to_string(WTERMSIG(status)) + ")";
  else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) st = "failed (exit " + std::to_string(WEXITSTATUS(status)) + ")";
  if (s.job.state.empty() || s.job.state == "completed") s.job.state = st;
  return 0;
}

namespace {

// admin_comment=yes: the job's summary into its AdminComment (admin_comment.h), from the line just made; a failure
// is logged and counted, the job and its line are not affected.
void write_admin_comment(spank_t sp, const std::string& line_text, job::MetricsEvents& ev) {
  auto& s = state();
  std::string problem;
  std::string text;
  try {
    text = job::admin_comment_summary(line_text, s.policy.suspect_ratio);
    problem = set_admin_comment(item<uint32_t>(sp, S_JOB_ID, 0), text);
  } catch (const std::exception& e) {
    problem = e.what();
  }
  if (problem.empty()) {
    log().info("job {} step {}: AdminComment set: {}", s.job.job_id, s.job.step_id, text);
    return;
  }
  ev.failures.push_back("admin_comment");
  log().warn("job {} step {}: AdminComment not set: {}", s.job.job_id, s.job.step_id, job::capped(problem, 512));
}

// The job's tuning-log line (node 0 of the deciding step, once per job); its events go to `ev`.
void write_job_line(spank_t sp, job::MetricsEvents& ev) {
  auto& s = state();
  if (!s.decision) return;
  if (s.job.state.empty()) s.job.state = "unknown";
  if (item<uint32_t>(sp, S_JOB_NODEID, 0) != 0) return;  // one line per job: node 0 writes it
  std::string text;  // the line, once made: the AdminComment comes from it even when the log cannot take it
  try {
    if (!claim_tuning_line(s.job.job_id)) {
      log().debug("job {} step {}: the job's tuning-log line was written by an earlier step", s.job.job_id,
                  s.job.step_id);
      return;
    }
    auto line = job::tuning_record(s.job, *s.spec, s.decision->record, s.env_outcome, std::time(nullptr));
    if (!s.node_list_problem.empty()) line["node_list_withheld"] = s.node_list_problem;
    add_node_checks(line);
    add_report(line);
    job::line_events(line, ev);
    text = job::tuning_line_text(std::move(line));
    write_tuning_line(text);
    log().debug("job {} step {}: tuning-log line written", s.job.job_id, s.job.step_id);
  } catch (const std::exception& e) {
    ev.failures.push_back("tuning_log");
    log().error("exit: tuning log: {}", e.what());
  }
  if (s.config.admin_comment && !text.empty()) write_admin_comment(sp, text, ev);
}

// metrics_file=: this step's events on this node into the node_exporter textfile (metrics_file.h).
void update_metrics(const job::MetricsEvents& ev) {
  const auto& path = state().config.metrics_file;
  if (path.empty() || ev.empty()) return;
  try {
    job::update_metrics_file(path, ev, std::time(nullptr));
  } catch (const std::exception& e) {
    log().warn("metrics file: {}", e.what());
  }
}

}  // namespace

int remote_exit(spank_t sp, int, char**) {
  auto& s = state();
  try {
    job::MetricsEvents ev;
    ev.partition = s.job.partition;
    ev.failures = s.metric_failures;
    write_job_line(sp, ev);
    update_metrics(ev);
  } catch (const std::exception& e) {  // nothing crosses the C ABI
    log().error("exit: {}", e.what());
  }
  return 0;
}

}  // namespace paratune::plugin
