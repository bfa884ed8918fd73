// One module per SPANK context (as pyxis does): client (srun/sbatch/salloc), remote (slurmstepd), slurmd.
#pragma once

#include "spank_api.h"

namespace paratune::plugin {

// ctx_client.cpp — srun, sbatch, salloc: register and validate --paratune before anything is queued.
int client_init(spank_t sp, int ac, char** av);
int client_post_opt(spank_t sp, int ac, char** av);

// ctx_remote.cpp — slurmstepd: probe, decide, inject, log (the work in remote_*.cpp, remote.h).
int remote_init(spank_t sp, int ac, char** av);
int remote_post_opt(spank_t sp, int ac, char** av);
int remote_user_init(spank_t sp, int ac, char** av);
int remote_task_init(spank_t sp, int ac, char** av);
int remote_task_exit(spank_t sp, int ac, char** av);
int remote_exit(spank_t sp, int ac, char** av);

// ctx_slurmd.cpp — slurmd at start: probe the node once into the root-owned cache; clear old job directories.
int slurmd_init(spank_t sp, int ac, char** av);

// ctx_job_script.cpp — the job epilog, on every node at the job's end: collect the job's directory in log_dir.
int job_epilog(spank_t sp, int ac, char** av);

// options.cpp — the --paratune option, registered in every context that uses it.
int register_option(spank_t sp);
// plugstack.conf arguments → state().config; logs and returns false on error.
bool load_config(int ac, char** av);

}  // namespace paratune::plugin
