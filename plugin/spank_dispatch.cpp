// The plugin's C ABI: the only exported symbols. Each slurm_spank_* entry point dispatches on the SPANK
// context to one module (ctx_*.cpp), behind a barrier that no C++ exception crosses. Every callback
// returns 0 unless failing is the point (a malformed --paratune at submit time): paratune fails open.
#include <exception>

#include "contexts.h"
#include "paratune/version.h"
#include "plugin_state.h"
#include "spank_api.h"

#define PARATUNE_EXPORT __attribute__((visibility("default")))

// SPANK_PLUGIN() would give these internal linkage in C++ (field notes §0.4b): define them explicitly.
extern "C" {
PARATUNE_EXPORT extern const char plugin_name[] = "paratune";
PARATUNE_EXPORT extern const char plugin_type[] = "spank";
PARATUNE_EXPORT extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
PARATUNE_EXPORT extern const unsigned int spank_plugin_version = 1;
}

namespace {

using paratune::plugin::log;

// Run a context handler; an exception is logged and turned into `on_exception` (0 = fail open).
template <typename F>
int guarded(const char* where, F&& f, int on_exception = 0) noexcept {
  try {
    return f();
  } catch (const std::exception& e) {
    try {
      log().error("{}: {}; the job runs untouched", where, e.what());
    } catch (...) {
    }
  } catch (...) {
    try {
      log().error("{}: unknown error; the job runs untouched", where);
    } catch (...) {
    }
  }
  return on_exception;
}

}  // namespace

extern "C" {

PARATUNE_EXPORT int slurm_spank_init(spank_t sp, int ac, char** av) {
  return guarded("init", [&] {
    switch (spank_context()) {
      case S_CTX_LOCAL:
      case S_CTX_ALLOCATOR: return paratune::plugin::client_init(sp, ac, av);
      case S_CTX_REMOTE: return paratune::plugin::remote_init(sp, ac, av);
      case S_CTX_SLURMD: return paratune::plugin::slurmd_init(sp, ac, av);
      default: return 0;
    }
  });
}

PARATUNE_EXPORT int slurm_spank_init_post_opt(spank_t sp, int ac, char** av) {
  // Client side, a bad --paratune must stop the submission: -1 on exception there.
  const int client_failure = -1;
  switch (spank_context()) {
    case S_CTX_LOCAL:
    case S_CTX_ALLOCATOR:
      return guarded("init_post_opt", [&] { return paratune::plugin::client_post_opt(sp, ac, av); }, client_failure);
    case S_CTX_REMOTE:
      return guarded("init_post_opt", [&] { return paratune::plugin::remote_post_opt(sp, ac, av); });
    default: return 0;
  }
}

PARATUNE_EXPORT int slurm_spank_user_init(spank_t sp, int ac, char** av) {
  return guarded("user_init", [&] { return paratune::plugin::remote_user_init(sp, ac, av); });
}

PARATUNE_EXPORT int slurm_spank_task_init(spank_t sp, int ac, char** av) {
  // -1 only when the site policy says on_error = "closed" and paratune failed (see ctx_remote.cpp).
  return guarded("task_init", [&] { return paratune::plugin::remote_task_init(sp, ac, av); });
}

PARATUNE_EXPORT int slurm_spank_task_exit(spank_t sp, int ac, char** av) {
  return guarded("task_exit", [&] { return paratune::plugin::remote_task_exit(sp, ac, av); });
}

PARATUNE_EXPORT int slurm_spank_exit(spank_t sp, int ac, char** av) {
  if (spank_context() != S_CTX_REMOTE) return 0;
  return guarded("exit", [&] { return paratune::plugin::remote_exit(sp, ac, av); });
}

// job_script context (slurmd's epilog process, root), on every node once the job has ended there.
PARATUNE_EXPORT int slurm_spank_job_epilog(spank_t sp, int ac, char** av) {
  return guarded("job_epilog", [&] { return paratune::plugin::job_epilog(sp, ac, av); });
}

// slurmd loads plugins that define init or slurmd_exit (plugstack.c); having it keeps behaviour uniform.
PARATUNE_EXPORT int slurm_spank_slurmd_exit(spank_t, int, char**) { return 0; }

}  // extern "C"
