#include "decide_request.h"

#include "job_files.h"

namespace paratune::job {

std::string resolve_path(const std::string& path, const std::string& base) {
  if (path.empty() || path.front() == '/' || base.empty()) return path;
  return base + "/" + path;
}

std::vector<std::string> plan_dir_bases(const planner::PluginConfig& config, const std::string& submit_dir) {
  std::vector<std::string> bases;
  if (!config.job_dir.empty()) bases.push_back(config.job_dir);
  if (!submit_dir.empty()) bases.push_back(submit_dir);
  return bases;
}

DecideRequest decide_request(const StepFacts& f) {
  DecideRequest r;
  r.input.config = f.config;
  r.input.spec = f.spec;
  r.input.alloc = f.alloc;
  // torchrun's rendezvous host: the first node of the list Slurm set, as libslurm's hostlist expanded it.
  // Without the list, the batch step's own node is that first node (Slurm runs the batch script there).
  if (!f.node_names.empty()) r.input.alloc.first_node = f.node_names.front();
  else if (!f.batch_host.empty()) r.input.alloc.first_node = f.batch_host;
  r.input.topology = f.topology;
  r.input.policy = f.policy;
  r.input.mode = f.mode.mode;
  r.input.calibration = f.calibration;
  r.input.profile = f.profile;
  r.input.fabric = f.fabric;
  // Relative paths from the submit directory; the child reads the file as the job's user.
  const std::string& submit_dir = r.input.alloc.submit_dir;
  if (!f.spec.scenario_file.empty()) r.scenario_path = resolve_path(f.spec.scenario_file, submit_dir);
  r.dir_bases = plan_dir_bases(f.config, submit_dir);
  // A resumed run keeps its checkpoints' format: resume=PLAN, or a requeued job's own previous plan (the same job
  // id and submit directory: its plan directory already holds one; absent on a first run).
  if (f.spec.resume_plan) {
    r.resume_path = resolve_path(*f.spec.resume_plan, submit_dir);
  } else if (!r.dir_bases.empty()) {
    r.resume_path = r.dir_bases.front() + "/paratune-" + job_dir_name(f.job_id) + "/plan.json";
    r.resume_optional = true;
  }
  r.mode_changes = f.mode.changes;
  r.user = f.user;
  r.job_id = f.job_id;
  r.fallback_base = "/tmp";
  r.group_readable = f.config.plan_group_read;
  r.timeout_ms = f.config.decide_timeout_ms;
  return r;
}

}  // namespace paratune::job
