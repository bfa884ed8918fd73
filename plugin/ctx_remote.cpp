// Remote context (slurmstepd), once per step per node:
//   init          (root)  read plugstack arguments, register --paratune (its value arrives after init)
//   init_post_opt (root)  open the per-job log, probe the node (cache or topology= file)
//   user_init     (user)  decide, write the plan files as the job's user, inject the environment
//   exit          (root)  append the job's line to the site tuning log (node 0 of the deciding step)
// Any failure: logged with the paratune: prefix, the job runs untouched, the callback returns 0.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>

#include "contexts.h"
#include "job/allocation.h"
#include "job/decision.h"
#include "job/plan_json.h"
#include "job/safe_file.h"
#include "job/tuning_record.h"
#include "paratune/probe/probe.h"
#include "plugin_state.h"
#include "spank_env.h"

namespace paratune::plugin {

namespace {

constexpr size_t kMaxScenarioBytes = 1 << 20;

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

// <log_dir>/jobs/<jobid>.log, opened as root inside root-owned directories.
void open_job_log(const std::string& log_dir, const std::string& job_id) {
  auto dir = job::ensure_directory(log_dir, 0755, 0);
  if (::mkdirat(dir.get(), "jobs", 0750) != 0 && errno != EEXIST) return;
  job::UniqueFd jobs(::openat(dir.get(), "jobs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!jobs) return;
  const std::string name = job_id + ".log";
  job::UniqueFd fd(::openat(jobs.get(), name.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0640));
  if (!fd) return;
  attach_job_log(fd.get());
  state().job_log_fd = std::move(fd);
}

std::string resolve(const std::string& path, const std::string& base) {
  if (path.empty() || path.front() == '/' || base.empty()) return path;
  return base + "/" + path;
}

// Where the plan files go: the configured job_dir, else the submit directory, else /tmp; as the job's user.
std::string write_job_files(const job::Decision& d, const std::string& job_id, const std::string& submit_dir) {
  const auto& cfg = state().config;
  std::vector<std::string> bases;
  if (!cfg.job_dir.empty()) bases.push_back(cfg.job_dir);
  if (!submit_dir.empty()) bases.push_back(submit_dir);
  bases.push_back("/tmp");
  const std::string content = job::decision_json(d).dump(2) + "\n";
  std::string last_error;
  for (const auto& base : bases) {
    const std::string dir = base + "/paratune-" + job_id;
    try {
      auto fd = job::ensure_directory(dir, 0755, ::geteuid());
      job::write_file_atomic(fd.get(), "plan.json", content, 0644);
      return dir;
    } catch (const std::exception& e) {
      last_error = e.what();
    }
  }
  throw std::runtime_error("could not write the plan file: " + last_error);
}

}  // namespace

int remote_init(spank_t sp, int ac, char** av) {
  load_config(ac, av);
  return register_option(sp);
}

int remote_post_opt(spank_t sp, int, char**) {
  auto& s = state();
  if (!s.config_ok) return 0;
  const unsigned step = item<uint32_t>(sp, S_JOB_STEPID, 0);
  if (step == kExternStep) return 0;
  if (!s.option_given && !s.config.enabled_by_default) return 0;

  SpankEnvironment env(sp);
  s.job.job_id = std::to_string(item<uint32_t>(sp, S_JOB_ID, 0));
  s.job.step_id = step_name(step);
  s.job.uid = item<uid_t>(sp, S_JOB_UID, 0);
  s.job.user = env.get("SLURM_JOB_USER").value_or(std::to_string(s.job.uid));
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) s.job.hostname = host;

  open_job_log(s.config.log_dir, s.job.job_id);
  s.spec = job::parse_option_spec(s.option_text);
  if (job::effective_mode(*s.spec, s.config) == job::Mode::Off) {
    log().info("job {} step {}: mode=off, nothing injected", s.job.job_id, s.job.step_id);
    return 0;
  }

  const job::Allocation alloc = job::allocation_from_env(env);
  s.job.partition = alloc.partition;
  s.job.nodes = alloc.nodes;
  s.job.gpus_on_node = alloc.gpus_on_node;
  if (alloc.gpus_on_node == 0 && alloc.gpu_indexes.empty()) {
    log().info("job {} step {}: the job requested no GPUs on this node; nothing injected", s.job.job_id, s.job.step_id);
    return 0;
  }

  probe::ProbeOptions opts;
  opts.topology_file = s.config.topology;
  opts.allocated_gpus = alloc.gpu_indexes;
  s.topology = probe::probe(opts);

  // srun steps inside a batch script inherit the batch step's decision: one decision per job.
  if (auto inherited = env.get("PARATUNE_PLAN")) {
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

int remote_user_init(spank_t sp, int, char**) {
  auto& s = state();
  if (!s.deciding_step || !s.topology || !s.spec) return 0;
  SpankEnvironment env(sp);
  job::DecisionInput in;
  in.config = s.config;
  in.spec = *s.spec;
  in.alloc = job::allocation_from_env(env);
  in.topology = *s.topology;
  if (!s.spec->scenario_file.empty()) {
    // Read as the job's user (euid is theirs here), relative paths from the submit directory.
    in.scenario_text = job::read_bounded(resolve(s.spec->scenario_file, in.alloc.submit_dir), kMaxScenarioBytes);
  }
  job::Decision d = job::decide(in);

  const std::string dir = write_job_files(d, s.job.job_id, in.alloc.submit_dir);
  const auto wanted = job::decision_env(d, dir + "/plan.json", dir + "/report.jsonl");
  s.env_outcome = job::inject(env, wanted);
  const auto& l = d.plan.layout;
  log().info("job {} step {}: {} on {}x{} {}: tp={} pp={} dp={} cp={} mbs={} zero={} recompute={} "
             "predicted {:.3f} s/step, {:.0f} tokens/s; {} variables set, {} kept; plan {}/plan.json",
             s.job.job_id, s.job.step_id, d.scenario.model.name, d.scenario.cluster.nodes,
             d.scenario.cluster.gpus_per_node, d.scenario.cluster.gpu, l.tp, l.pp, l.dp, l.cp, l.micro_batch,
             l.zero_stage, advisor::to_string(l.recompute), d.plan.prediction.step_time_s,
             d.plan.prediction.tokens_per_s, s.env_outcome.set.size(), s.env_outcome.kept.size(), dir);
  for (const auto& k : s.env_outcome.kept) log().info("kept the user's {}={}", k.name, k.value);
  for (const auto& f : s.env_outcome.failed) log().warn("could not set {}", f.name);
  for (const auto& n : d.notes) log().info("note: {}", n);
  s.decision = std::move(d);
  return 0;
}

int remote_exit(spank_t sp, int, char**) {
  auto& s = state();
  if (!s.decision) return 0;
  if (item<uint32_t>(sp, S_JOB_NODEID, 0) != 0) return 0;  // one line per job: node 0 writes it
  const auto line = job::tuning_record(s.job, *s.spec, *s.decision, s.env_outcome, std::time(nullptr));
  auto dir = job::ensure_directory(s.config.log_dir, 0755, 0);
  job::append_line(dir.get(), "tuning.jsonl", line.dump(), 0644);
  log().debug("job {} step {}: tuning-log line written", s.job.job_id, s.job.step_id);
  return 0;
}

}  // namespace paratune::plugin
