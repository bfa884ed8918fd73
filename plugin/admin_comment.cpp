#include "admin_comment.h"

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include <cerrno>
#include <stdexcept>
#include <vector>

#include "paratune/common/child_call.h"

namespace paratune::plugin {

namespace {

// In the child: one REQUEST_UPDATE_JOB carrying only the job id and the comment (every other field at
// slurm_init_job_desc_msg's "not given" value, so nothing else of the job changes).
std::string ask_slurm(uint32_t job_id, const std::string& text) {
  std::vector<char> comment(text.begin(), text.end());
  comment.push_back('\0');
  job_desc_msg_t desc;
  slurm_init_job_desc_msg(&desc);
  desc.job_id = job_id;
  desc.admin_comment = comment.data();
  // errno, not slurm_get_errno(): 24.11 removed that function (22.05's returned errno; docs/slurm-versions.md).
  if (slurm_update_job(&desc) != SLURM_SUCCESS)
    throw std::runtime_error(std::string("the update failed: ") + slurm_strerror(errno));
  return "ok";
}

}  // namespace

std::string set_admin_comment(uint32_t job_id, const std::string& text, int timeout_ms) {
  if (job_id == 0) return "Slurm did not give the job id";
  try {
    // The reply is "ok" or the child's reason (slurmctld's refusal): room for the reason, not more.
    const auto reply = common::call_in_child([&] { return ask_slurm(job_id, text); }, timeout_ms,
                                          "setting the job's AdminComment", 1024);
    return reply == "ok" ? "" : "unexpected answer from the child process";
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

}  // namespace paratune::plugin
