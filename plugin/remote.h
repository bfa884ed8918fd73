// What the remote context's files share (slurmstepd; private to plugin/): ctx_remote.cpp holds the SPANK entry
// points, each with its try/catch, and calls one function per callback in the file that does that callback's work:
//   remote_setup.cpp   init_post_opt: who and where, Slurm's view of the step, the mode, the per-job log, the probe
//   remote_policy.cpp  the admin's files read as root: the site policy, the calibration, the hardware profile
//   remote_inherit.cpp a step that inherits the job's plan: the node's checks, recorded for node 0's line
//   remote_decide.cpp  user_init: the decision in the user's child, the job's environment
//   remote_exit.cpp    task_exit and exit: how the step ended, the tuning-log line, AdminComment, metrics
#pragma once

#include <optional>
#include <string>

#include "job/job_files.h"
#include "paratune/common/safe_file.h"
#include "paratune/planner/job_env.h"
#include "paratune/policies/policy.h"
#include "plugin_state.h"
#include "spank_api.h"

namespace paratune::plugin::remote {

// One of Slurm's items for the step, or `fallback` when Slurm does not give it.
template <typename T>
T item(spank_t sp, spank_item_t which, T fallback) {
  T value{};
  return spank_get_item(sp, which, &value) == ESPANK_SUCCESS ? value : fallback;
}

// <log_dir>/jobs/<jobid>/ (job/job_files.h), opened as root inside root-owned directories (jobs/ checked like
// log_dir: root's, not group/world-writable, so no user can plant a link or a file there).
inline common::UniqueFd job_directory() { return job::open_job_dir_in(state().config.log_dir, state().job.job_id); }

// remote_setup.cpp: init_post_opt's work; settles state().role.
int post_opt(spank_t sp);

// remote_policy.cpp: the site policy file, read once per step: nullopt with no error = no policy (a missing
// default file).
struct PolicySource {
  std::optional<policies::PolicyFile> file;
  std::optional<policies::PolicyError> error;
};
PolicySource read_policy_file();
// Whether paratune can do anything at all for a step without --paratune.
bool may_act_without_option(const PolicySource& src);
// state().policy for the job's partition; false when the file is unusable (on_error decides what follows).
bool load_policy(const PolicySource& src, const std::string& partition);
void load_calibration();
void load_profile();

// remote_inherit.cpp: a step that inherits the job's plan `plan` checks this node against it.
void check_inherited_plan(const planner::JobEnvironment& env, const std::string& plan);

// remote_decide.cpp: user_init's work; and the site's variables alone, for a step without a decision.
int user_init(spank_t sp);
void inject_policy_env(planner::JobEnvironment& env);

// remote_exit.cpp: task_exit's work (the worst task status of this node), and exit's (the line, AdminComment,
// metrics).
void note_task_exit(spank_t sp);
void end_step(spank_t sp);

}  // namespace paratune::plugin::remote
