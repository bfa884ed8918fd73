// job_script context: slurmd runs the plugins' job epilog (as root, in a process of its own) on every node of the
// job once the job has ended there, after its last step. paratune uses it to collect what the job left in its
// directory log_dir/jobs/<jobid>/ on this node (job/job_files.h): the records that only served the running job
// go, the node checks nobody collected (a node-local log_dir) are summarised into the job's log first. Nothing here
// reads anything of the user's; it always returns 0 (a failing epilog of a required plugin would drain the node).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "contexts.h"
#include "job/job_files.h"
#include "paratune/common/safe_file.h"
#include "plugin_state.h"

namespace paratune::plugin {

int job_epilog(spank_t sp, int ac, char** av) {
  if (!load_config(ac, av)) return 0;
  uint32_t job_id = 0;
  if (spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS || job_id == 0) return 0;
  const std::string id = std::to_string(job_id), jobs_path = state().config.log_dir + "/jobs";
  try {
    // Open, never create: a job paratune left alone has nothing here, and a missing jobs/ is not made for it.
    common::UniqueFd jobs(::open(jobs_path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!jobs) return 0;
    common::ensure_directory(jobs_path, 0750, 0);  // root's and not group/world-writable, or refused
    const auto end = job::finish_job_dir(jobs.get(), id);
    if (!end.summary.empty()) {
      common::UniqueFd dir = job::open_job_dir(jobs.get(), id, false);
      common::UniqueFd log_fd(dir ? ::openat(dir.get(), job::kJobLogName, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC) : -1);
      if (log_fd) job::CappedLog(log_fd.get(), job::kMaxJobLogBytes).write("paratune: " + end.summary + "\n");
      log().info("job {}: {}", id, end.summary);
    }
  } catch (const std::exception& e) {
    log().warn("job {} epilog: {}/{}: {}", id, jobs_path, job::job_dir_name(id), e.what());
  }
  return 0;
}

}  // namespace paratune::plugin
