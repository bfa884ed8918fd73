// Client contexts (srun = local, sbatch/salloc = allocator): register --paratune and reject a malformed SPEC
// before the job is queued, with a message naming the bad token and listing what is valid.
#include "contexts.h"
#include "plugin_state.h"

namespace paratune::plugin {

int client_init(spank_t sp, int ac, char** av) {
  load_config(ac, av);  // a broken plugstack line is the admin's problem: log it, never block users
  return register_option(sp);
}

int client_post_opt(spank_t, int, char**) {
  auto& s = state();
  if (!s.option_given) return 0;
  // The option callback validated already; parse again in case Slurm skipped the callback path.
  if (!s.spec) s.spec = planner::parse_option_spec(s.option_text);
  return 0;
}

}  // namespace paratune::plugin
