// The job's AdminComment, set by node 0's slurmstepd (root) at the end of the job's deciding step (plugstack
// admin_comment=yes), while slurmctld still holds the job as running: slurmstepd calls the plugins'
// slurm_spank_exit before it reports the step complete (and, for the batch step, the batch script), and Slurm
// 22.05 refuses AdminComment on a finished job ("Job has already finished"), which is why the slurmctld epilog
// (packaging/) cannot set it without slurmdbd. A plain srun job (no batch script) is the exception: slurmstepd
// sends the tasks' exit messages to srun before slurm_spank_exit, srun may end the allocation first, and then
// slurmctld refuses the update (logged). Through libslurm's slurm_update_job (what `scontrol update job=ID
// AdminComment=...` sends; libslurmfull provides it in slurmstepd), an RPC to slurmctld made in a forked child
// bounded in time (job/child_call.h): slurmctld may be slow or away, and slurmstepd must not wait on it longer
// than the bound. No shell and no command line: the text travels as one field of the RPC.
#pragma once

#include <cstdint>
#include <string>

namespace paratune::plugin {

// Bound on the RPC: a healthy slurmctld answers within milliseconds; the end of the job waits at most this long
// (plus call_in_child's grace) when slurmctld does not answer.
inline constexpr int kAdminCommentTimeoutMs = 5000;

// Sets job `job_id`'s AdminComment to `text` (job/admin_comment_text.h made it safe). Returns "" when slurmctld
// accepted it, otherwise why not (slurmctld's refusal, the deadline, a dead child). Never throws.
std::string set_admin_comment(uint32_t job_id, const std::string& text, int timeout_ms = kAdminCommentTimeoutMs);

}  // namespace paratune::plugin
