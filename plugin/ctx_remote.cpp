// Remote context (slurmstepd), once per step per node:
//   init          (root)  read plugstack arguments, register --paratune (its value arrives after init)
//   init_post_opt (root)  load the site policy, decide the mode, open the per-job log, probe (cached)
//   user_init     (user)  decide, write the plan files as the job's user, inject the environment
//   task_init     (user)  only with on_error = "closed" after a failure: fail the step with the reason
//   exit          (root)  append the job's line to the site tuning log (node 0 of the deciding step)
// Any failure: logged with the paratune: prefix, the job runs untouched, the callback returns 0 — unless the
// site policy says on_error = "closed", the only way paratune ever fails a job.
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <ctime>

#include "contexts.h"
#include "job/allocation.h"
#include "job/bounded_probe.h"
#include "job/decision.h"
#include "job/plan_json.h"
#include "job/report_reader.h"
#include "paratune/tuning/report.h"
#include "paratune/tuning/tuning_log.h"
#include "job/safe_file.h"
#include "job/tuning_record.h"
#include "paratune/probe/probe.h"
#include "plugin_state.h"
#include "spank_env.h"

namespace paratune::plugin {

namespace {

constexpr size_t kMaxScenarioBytes = 1 << 20;
constexpr int kReportTimeoutMs = 5000;

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

// <log_dir>/jobs/<jobid>.log, opened as root inside root-owned directories.
void open_job_log(const std::string& log_dir, const std::string& job_id) {
  auto dir = job::ensure_directory(log_dir, 0755, 0);
  const std::string jobs_path = log_dir + "/jobs", name = job_id + ".log";
  if (::mkdirat(dir.get(), "jobs", 0750) != 0 && errno != EEXIST) return warn_no_job_log(jobs_path, errno);
  job::UniqueFd jobs(::openat(dir.get(), "jobs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!jobs) return warn_no_job_log(jobs_path, errno);
  job::UniqueFd fd(::openat(jobs.get(), name.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0640));
  if (!fd) {
    const int err = errno;  // before building the path: an allocation may change errno
    return warn_no_job_log(jobs_path + "/" + name, err);
  }
  attach_job_log(fd.get());
  state().job_log_fd = std::move(fd);
}

std::string resolve_path(const std::string& path, const std::string& base) {
  if (path.empty() || path.front() == '/' || base.empty()) return path;
  return base + "/" + path;
}

// The site policy for the job's partition. A missing default file means "no policy"; anything else that is
// wrong is loud: every problem is logged, and on_error decides (read from the broken file where possible).
bool load_policy(const std::string& partition) {
  auto& s = state();
  s.policy = policies::EffectivePolicy{};
  try {
    const auto file = policies::load_policy_secure(s.config.policy);
    s.policy = policies::resolve(file, partition);
    return true;
  } catch (const policies::PolicyError& e) {
    if (e.kind() == policies::PolicyError::Kind::Missing && !s.config.policy_explicit) return true;
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
}

// The site's calibration (`paratune calibrate` output), read as root: absent is normal, anything else that is
// wrong is logged and the shipped model is used.
void load_calibration() {
  auto& s = state();
  if (::access(s.config.calibration.c_str(), F_OK) != 0) return;
  try {
    s.calibration = advisor::parse_calibration(job::read_trusted_file(s.config.calibration, kMaxScenarioBytes),
                                               s.config.calibration);
  } catch (const std::exception& e) {
    log().error("calibration: {}; using the shipped model", e.what());
  }
}

// Where the plan files go: the configured job_dir, else the submit directory, else /tmp; as the job's user.
std::string write_job_files(const job::Decision& d, const std::string& job_id, const std::string& submit_dir) {
  const auto& cfg = state().config;
  std::vector<std::string> bases;
  if (!cfg.job_dir.empty()) bases.push_back(cfg.job_dir);
  if (!submit_dir.empty()) bases.push_back(submit_dir);
  bases.push_back("/tmp");
  const auto files = job::decision_files(d);
  std::string last_error;
  for (const auto& base : bases) {
    const std::string dir = base + "/paratune-" + job_id;
    try {
      auto fd = job::ensure_directory(dir, 0755, ::geteuid());
      for (const auto& [name, content] : files) job::write_file_atomic(fd.get(), name, content, 0644);
      return dir;
    } catch (const std::exception& e) {
      last_error = e.what();
    }
  }
  throw std::runtime_error("could not write the plan files: " + last_error);
}

void log_outcome(const job::EnvOutcome& o) {
  for (const auto& k : o.kept) log().info("kept the user's {}={}", k.name, k.value);
  for (const auto& r : o.replaced) log().info("replaced the user's {}={}: {}", r.name, r.value, r.reason);
  for (const auto& r : o.removed) log().info("removed {} from the job environment: {}", r.name, r.reason);
  for (const auto& f : o.failed) log().warn("could not set or remove {}", f.name);
}

void log_changes(const std::vector<policies::PolicyChange>& changes) {
  for (const auto& c : changes) log().info("policy: {}", policies::describe(c));
}

int post_opt(spank_t sp) {
  auto& s = state();
  if (!s.config_ok) return 0;
  const unsigned step = item<uint32_t>(sp, S_JOB_STEPID, 0);
  if (step == kExternStep) return 0;

  SpankEnvironment env(sp);
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) s.job.hostname = host;
  s.job.job_id = std::to_string(item<uint32_t>(sp, S_JOB_ID, 0));
  s.job.step_id = step_name(step);
  s.job.uid = item<uid_t>(sp, S_JOB_UID, 0);
  s.job.gid = item<gid_t>(sp, S_JOB_GID, 0);
  s.job.nodelist = env.get("SLURM_JOB_NODELIST").value_or(s.job.hostname);
  s.job.user = user_name(s.job.uid);  // from Slurm's uid, not SLURM_JOB_USER (the job's env is the user's)
  const job::Allocation alloc = job::allocation_from_env(env, step == kBatchStep);
  s.job.partition = alloc.partition;
  s.job.nodes = alloc.nodes;
  s.job.gpus_on_node = alloc.gpus_on_node;

  if (!load_policy(alloc.partition)) return 0;
  if (s.option_given) s.spec = job::parse_option_spec(s.option_text);
  const auto md = job::decide_job_mode(s.spec ? &*s.spec : nullptr, s.config, s.policy, alloc.gpus_on_node);
  s.mode = md.mode;
  s.mode_changes = md.changes;
  if (md.mode == job::Mode::Off) {
    s.policy_env_only = md.env_rules_apply;
    if (s.option_given) log().info("job {} step {}: {}", s.job.job_id, s.job.step_id, md.why);
    return 0;
  }
  if (!s.spec) s.spec = job::parse_option_spec("");  // on by default: the site's default scenario
  open_job_log(s.config.log_dir, s.job.job_id);
  log().info("job {} step {}: {}", s.job.job_id, s.job.step_id, md.why);
  if (alloc.gpus_on_node == 0 && alloc.gpu_indexes.empty()) {
    log().info("job {} step {}: the job requested no GPUs on this node; no plan", s.job.job_id, s.job.step_id);
    s.policy_env_only = md.env_rules_apply;
    return 0;
  }

  load_calibration();
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
    s.policy_env_only = true;
    const auto fp = env.get("PARATUNE_FINGERPRINT").value_or("");
    if (fp != s.topology->fingerprint)
      log().warn("job {} step {}: this node's topology fingerprint {} differs from the plan's {} ({}); "
                 "the plan was made for another kind of node", s.job.job_id, s.job.step_id,
                 s.topology->fingerprint, fp, *inherited);
    else
      log().debug("job {} step {}: inherited plan {}, fingerprint matches", s.job.job_id, s.job.step_id, *inherited);
    return 0;
  }
  s.deciding_step = true;
  return 0;
}

int user_init(spank_t sp) {
  auto& s = state();
  SpankEnvironment env(sp);
  if (s.policy_env_only) {
    // paratune is off for this job, but the site's forced/default/forbidden variables still apply.
    const auto inj = job::policy_injection(s.policy, {});
    log_outcome(job::inject(env, inj.assignments, inj.force, inj.unset));
    return 0;
  }
  if (!s.deciding_step || !s.topology || !s.spec) return 0;
  job::DecisionInput in;
  in.config = s.config;
  in.spec = *s.spec;
  in.alloc = job::allocation_from_env(env, s.job.step_id == step_name(kBatchStep));
  in.topology = *s.topology;
  in.policy = s.policy;
  in.mode = s.mode;
  in.calibration = s.calibration;
  if (!s.spec->scenario_file.empty()) {
    // Read as the job's user (euid is theirs here), relative paths from the submit directory.
    in.scenario_text = job::read_bounded(resolve_path(s.spec->scenario_file, in.alloc.submit_dir), kMaxScenarioBytes);
  }
  job::Decision d = job::decide(in);
  d.policy_changes.insert(d.policy_changes.begin(), s.mode_changes.begin(), s.mode_changes.end());

  // Plan the environment first (the policy's changes belong in the plan file), then write, then inject.
  auto inj = job::policy_injection(s.policy, job::decision_env(d, "", ""));
  d.policy_changes.insert(d.policy_changes.end(), inj.changes.begin(), inj.changes.end());
  const std::string dir = write_job_files(d, s.job.job_id, in.alloc.submit_dir);
  inj = job::policy_injection(s.policy, job::decision_env(d, dir + "/plan.json", dir + "/report.jsonl"));
  s.env_outcome = job::inject(env, inj.assignments, inj.force, inj.unset);
  s.report_path = env.get("PARATUNE_REPORT").value_or("");

  const auto& l = d.plan.layout;
  log().info("job {} step {}: {} on {}x{} {}: {} tp={} pp={} dp={} cp={} vpp={} mbs={} zero={} recompute={} "
             "predicted {:.3f} s/step, {:.0f} tokens/s; {} variables set, {} kept; plan {}/plan.json",
             s.job.job_id, s.job.step_id, d.scenario.model.name, d.scenario.cluster.nodes,
             d.scenario.cluster.gpus_per_node, d.scenario.cluster.gpu, advisor::to_string(d.plan.framework), l.tp,
             l.pp, l.dp, l.cp, l.virtual_stages, l.micro_batch, l.zero_stage, advisor::to_string(l.recompute),
             d.plan.prediction.step_time_s, d.plan.prediction.tokens_per_s, s.env_outcome.set.size(),
             s.env_outcome.kept.size(), dir);
  log_outcome(s.env_outcome);
  log_changes(d.policy_changes);
  for (const auto& n : d.notes) log().info("note: {}", n);
  s.decision = std::move(d);
  return 0;
}

// The tuning log: the policy may move it and set its mode and group; root-owned directories only.
void write_tuning_line(const std::string& line) {
  auto& s = state();
  std::string path = s.policy.log.tuning_log.value_or(s.config.log_dir + "/tuning.jsonl");
  const auto slash = path.find_last_of('/');
  const std::string dir_path = slash == 0 ? "/" : path.substr(0, slash), name = path.substr(slash + 1);
  auto dir = job::ensure_directory(dir_path, 0755, 0);
  const mode_t mode = s.policy.log.file_mode & 0664;  // never writable by others
  long gid = -1;
  if (s.policy.log.group) {
    struct group gr {}, *found = nullptr;
    char buf[4096];
    if (getgrnam_r(s.policy.log.group->c_str(), &gr, buf, sizeof buf, &found) == 0 && found) gid = found->gr_gid;
    else gid = static_cast<long>(std::strtoul(s.policy.log.group->c_str(), nullptr, 10));
  }
  job::append_line(dir.get(), name, line, mode, gid);
}

// What the job achieved, from its report: read as the job's user in a bounded child. A bad report never stops
// the line from being written; it is recorded as "report": "invalid: ...".
void add_report(nlohmann::json& line) {
  auto& s = state();
  std::optional<tuning::ReportSummary> summary;
  if (!s.report_path.empty()) {
    const auto file = job::read_report_as_user(s.report_path, s.job.uid, s.job.gid, kReportTimeoutMs);
    if (!file.missing) {
      tuning::ReportSummary bad;
      bad.invalid_reason = file.error;
      summary = file.content ? tuning::summarize_report(*file.content, file.truncated) : bad;
    }
  }
  tuning::add_achieved(line, summary, s.policy.suspect_ratio, tuning::expand_hostlist(s.job.nodelist));
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
    return user_init(sp);
  } catch (const std::exception& e) {
    return handle_failure("user_init", e);
  }
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

int remote_exit(spank_t sp, int, char**) {
  auto& s = state();
  if (!s.decision) return 0;
  if (s.job.state.empty()) s.job.state = "unknown";
  if (item<uint32_t>(sp, S_JOB_NODEID, 0) != 0) return 0;  // one line per job: node 0 writes it
  auto line = job::tuning_record(s.job, *s.spec, *s.decision, s.env_outcome, std::time(nullptr));
  add_report(line);
  write_tuning_line(line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  log().debug("job {} step {}: tuning-log line written", s.job.job_id, s.job.step_id);
  return 0;
}

}  // namespace paratune::plugin
