// A SPANK host for tests: loads the real paratune.so and drives its callbacks in Slurm's order for one context,
// with the job environment, items and plugstack arguments given on the command line. It exists so that the
// plugin's SPANK glue (spank_dispatch.cpp, ctx_*.cpp, spank_env.cpp, logging.cpp) runs under ASan/UBSan/LSan in
// a process that does not fork from several threads: Slurm's slurmstepd does (its task launch), and LLVM 14's
// ASan runtime holds no lock across fork, so a preloaded runtime there can deadlock a job step in Slurm's own
// code (docs/security.md §7). The real-Slurm tests run the same plugin in the real daemons.
//
//   spank_host PLUGIN.so CONTEXT [--option SPEC] [--step batch|N] [--job-id N] [--node-id N]
//              [--exit-status N] [--env NAME=VALUE]... [-- PLUGSTACK_ARGS...]
//   CONTEXT: local | allocator | remote | slurmd
//
// Prints one line per callback ("callback NAME rc N") and, in the remote context, the job environment after the
// callbacks ("env NAME=VALUE", sorted). Exit status: 0, or 2 for bad usage / a plugin that does not load. The
// plugin's own _exit (task_init with on_error = "closed") ends the process with the plugin's status, as it ends
// the task in Slurm.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

extern "C" {
#include <slurm/spank.h>
}

#define HOST_EXPORT extern "C" __attribute__((visibility("default")))

// The handle Slurm passes to every callback: here, the step's items and environment.
struct spank_handle {
  spank_context_t context = S_CTX_ERROR;
  uint32_t job_id = 1, step_id = 0xfffffffbu /* batch */, node_id = 0;
  uid_t uid = ::getuid();
  gid_t gid = ::getgid();
  int exit_status = 0;
  std::map<std::string, std::string> env;
  std::vector<spank_option> options;
};

namespace {
spank_handle g_handle;

// Slurm 22.05 spells the ESPANK_* codes as plain ints of its slurm_err_t enum.
spank_err_t code(int e) { return static_cast<spank_err_t>(e); }

void vlog(const char* prefix, const char* format, va_list ap) {
  std::fputs(prefix, stderr);
  std::vfprintf(stderr, format, ap);
  std::fputc('\n', stderr);
}
}  // namespace

// --- the SPANK API the plugin uses (signatures from <slurm/spank.h>: a mismatch does not compile) ---
HOST_EXPORT spank_context_t spank_context(void) { return g_handle.context; }

HOST_EXPORT const char* spank_strerror(spank_err_t err) {
  switch (static_cast<int>(err)) {
    case ESPANK_SUCCESS: return "Success";
    case ESPANK_BAD_ARG: return "Bad argument";
    case ESPANK_NOT_AVAIL: return "Item not available from this callback";
    case ESPANK_ENV_EXISTS: return "Environment variable exists";
    case ESPANK_ENV_NOEXIST: return "Environment variable does not exist";
    case ESPANK_NOSPACE: return "Buffer too small";
    default: return "Generic error";
  }
}

// spank.h puts an enum right before the "...": clang warns that va_start on it is undefined (an enum whose
// values fit an int is passed as an int on every ABI Slurm runs on; Slurm's own spank.c does the same).
#ifdef __clang__
#pragma clang diagnostic ignored "-Wvarargs"
#endif
HOST_EXPORT spank_err_t spank_get_item(spank_t sp, spank_item_t item, ...) {
  if (!sp) return code(ESPANK_BAD_ARG);
  va_list ap;
  va_start(ap, item);
  spank_err_t rc = code(ESPANK_SUCCESS);
  switch (item) {
    case S_JOB_UID: *va_arg(ap, uid_t*) = sp->uid; break;
    case S_JOB_GID: *va_arg(ap, gid_t*) = sp->gid; break;
    case S_JOB_ID: *va_arg(ap, uint32_t*) = sp->job_id; break;
    case S_JOB_STEPID: *va_arg(ap, uint32_t*) = sp->step_id; break;
    case S_JOB_NODEID: *va_arg(ap, uint32_t*) = sp->node_id; break;
    case S_TASK_EXIT_STATUS: *va_arg(ap, int*) = sp->exit_status; break;
    default: rc = code(ESPANK_NOT_AVAIL);
  }
  va_end(ap);
  return rc;
}

HOST_EXPORT spank_err_t spank_getenv(spank_t sp, const char* var, char* buf, int len) {
  if (!sp || !var || !buf || len <= 0) return code(ESPANK_BAD_ARG);
  const auto it = sp->env.find(var);
  if (it == sp->env.end()) return code(ESPANK_ENV_NOEXIST);
  if (it->second.size() + 1 > static_cast<size_t>(len)) return code(ESPANK_NOSPACE);
  std::memcpy(buf, it->second.c_str(), it->second.size() + 1);
  return code(ESPANK_SUCCESS);
}

HOST_EXPORT spank_err_t spank_setenv(spank_t sp, const char* var, const char* val, int overwrite) {
  if (!sp || !var || !val) return code(ESPANK_BAD_ARG);
  if (!overwrite && sp->env.count(var)) return code(ESPANK_ENV_EXISTS);
  sp->env[var] = val;
  return code(ESPANK_SUCCESS);
}

HOST_EXPORT spank_err_t spank_unsetenv(spank_t sp, const char* var) {
  if (!sp || !var) return code(ESPANK_BAD_ARG);
  sp->env.erase(var);
  return code(ESPANK_SUCCESS);
}

HOST_EXPORT spank_err_t spank_option_register(spank_t sp, struct spank_option* opt) {
  if (!sp || !opt || !opt->name) return code(ESPANK_BAD_ARG);
  sp->options.push_back(*opt);
  return code(ESPANK_SUCCESS);
}

// Slurm's logging functions: the same body five times over, so one macro defines them (a variadic function cannot
// forward its "..." to another, only its va_list).
#define HOST_LOG_FUNCTION(name, prefix) \
  HOST_EXPORT void name(const char* format, ...) { \
    va_list ap;                                    \
    va_start(ap, format);                          \
    vlog(prefix, format, ap);                      \
    va_end(ap);                                    \
  }
HOST_LOG_FUNCTION(slurm_info, "info: ")
HOST_LOG_FUNCTION(slurm_error, "error: ")
HOST_LOG_FUNCTION(slurm_verbose, "verbose: ")
HOST_LOG_FUNCTION(slurm_debug, "debug: ")
HOST_LOG_FUNCTION(slurm_spank_log, "")

// --- the driver ---
namespace {

using Callback = int (*)(spank_t, int, char**);

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "spank_host: %s\nusage: spank_host PLUGIN.so local|allocator|remote|slurmd [--option SPEC] "
                       "[--step batch|N] [--job-id N] [--node-id N] [--exit-status N] [--env NAME=VALUE]... "
                       "[-- PLUGSTACK_ARGS...]\n", why);
  std::exit(2);
}

uint32_t number(const char* flag, const char* text) {
  char* end = nullptr;
  const unsigned long v = std::strtoul(text, &end, 10);
  if (!*text || *end || v > 0xffffffffUL) usage((std::string(flag) + " needs a number").c_str());
  return static_cast<uint32_t>(v);
}

int call(void* so, const char* name, int ac, char** av) {
  const auto fn = reinterpret_cast<Callback>(::dlsym(so, name));
  if (!fn) return 0;  // Slurm skips callbacks a plugin does not define
  const int rc = fn(&g_handle, ac, av);
  std::printf("callback %s rc %d\n", name, rc);
  std::fflush(stdout);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) usage("PLUGIN and CONTEXT are required");
  const std::string context = argv[2];
  if (context == "local") g_handle.context = S_CTX_LOCAL;
  else if (context == "allocator") g_handle.context = S_CTX_ALLOCATOR;
  else if (context == "remote") g_handle.context = S_CTX_REMOTE;
  else if (context == "slurmd") g_handle.context = S_CTX_SLURMD;
  else usage("CONTEXT must be local, allocator, remote or slurmd");

  std::optional<std::string> option;
  std::vector<char*> plugstack;
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> char* {
      if (i + 1 >= argc) usage((a + " needs a value").c_str());
      return argv[++i];
    };
    if (a == "--") {
      plugstack.assign(argv + i + 1, argv + argc);
      break;
    } else if (a == "--option") {
      option = value();
    } else if (a == "--step") {
      const char* v = value();
      g_handle.step_id = std::strcmp(v, "batch") == 0 ? 0xfffffffbu : number("--step", v);
    } else if (a == "--job-id") {
      g_handle.job_id = number("--job-id", value());
    } else if (a == "--node-id") {
      g_handle.node_id = number("--node-id", value());
    } else if (a == "--exit-status") {
      g_handle.exit_status = static_cast<int>(number("--exit-status", value()));
    } else if (a == "--env") {
      const std::string kv = value();
      const auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) usage("--env needs NAME=VALUE");
      g_handle.env[kv.substr(0, eq)] = kv.substr(eq + 1);
    } else {
      usage(("unknown argument " + a).c_str());
    }
  }

  // As slurmstepd/srun do: RTLD_NOW, so a missing symbol fails here and not in the middle of a job.
  void* so = ::dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!so) usage(::dlerror());
  const int ac = static_cast<int>(plugstack.size());
  plugstack.push_back(nullptr);
  char** av = plugstack.data();

  call(so, "slurm_spank_init", ac, av);
  if (g_handle.context == S_CTX_SLURMD) {
    call(so, "slurm_spank_slurmd_exit", ac, av);
  } else {
    // The option's callback, as Slurm calls it between init and init_post_opt (remote = 1 in slurmstepd).
    if (option) {
      for (const auto& opt : g_handle.options) {
        if (std::strcmp(opt.name, "paratune") != 0 || !opt.cb) continue;
        const int rc = opt.cb(opt.val, option->empty() ? nullptr : option->c_str(), g_handle.context == S_CTX_REMOTE);
        std::printf("callback option rc %d\n", rc);
      }
    }
    const int post = call(so, "slurm_spank_init_post_opt", ac, av);
    if (g_handle.context == S_CTX_REMOTE && post == 0) {
      call(so, "slurm_spank_user_init", ac, av);
      call(so, "slurm_spank_task_init", ac, av);
      call(so, "slurm_spank_task_exit", ac, av);
    }
    call(so, "slurm_spank_exit", ac, av);
    if (g_handle.context == S_CTX_REMOTE)
      for (const auto& [k, v] : g_handle.env) std::printf("env %s=%s\n", k.c_str(), v.c_str());
  }
  std::fflush(stdout);
  ::dlclose(so);  // Slurm unloads its plugins too: the plugin's static state is destroyed here (LSan checks it)
  return 0;
}
