/* spank_facts.so: a SPANK plugin for tests that records what Slurm gives a plugin, so that the facts paratune
 * relies on can be asserted for each Slurm release series it is built for (docs/slurm-versions.md,
 * tests/integration/test_slurm_series.sh). It changes nothing in the job.
 *
 *   plugstack.conf:  optional /path/spank_facts.so DIR
 *
 * Each process that loads it (srun, sbatch, salloc, slurmd, every slurmstepd) appends to its own file
 * DIR/<context>.<pid>, opened once in slurm_spank_init as the caller (root in slurmstepd) and kept open, so the
 * callbacks that run as the job's user can still write. Per callback:
 *   == CALLBACK euid=N
 *   item NAME=VALUE | item NAME=ERR N       every spank_get_item paratune uses, and a few it might
 *   env NAME=VALUE                          the job environment (remote: S_JOB_ENV; elsewhere: environ)
 * and, for each call of the --spank-facts option callback: "opt remote=N value=V". */
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <slurm/spank.h>

/* The exported symbols SPANK_PLUGIN(spank_facts, 1) would define. The build may give it another release series'
 * number (spank_facts_other_series.so, test_other_series.sh): what Slurm's loader checks, and all it checks. */
#ifndef SPANK_FACTS_PLUGIN_VERSION
#define SPANK_FACTS_PLUGIN_VERSION SLURM_VERSION_NUMBER
#endif
const char plugin_name[] = "spank_facts";
const char plugin_type[] = "spank";
const unsigned int plugin_version = SPANK_FACTS_PLUGIN_VERSION;
const unsigned int spank_plugin_version = 1;

extern char** environ;

static int out_fd = -1;

static void put(const char* fmt, ...) {
  char line[8192];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (out_fd < 0 || n < 0) return;
  if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
  line[n++] = '\n';
  ssize_t ignored = write(out_fd, line, (size_t)n);
  (void)ignored;
}

static const char* context_name(void) {
  switch (spank_context()) {
    case S_CTX_LOCAL: return "local";
    case S_CTX_REMOTE: return "remote";
    case S_CTX_ALLOCATOR: return "allocator";
    case S_CTX_SLURMD: return "slurmd";
    case S_CTX_JOB_SCRIPT: return "job_script";
    default: return "error";
  }
}

static void item_u32(spank_t sp, spank_item_t which, const char* name) {
  uint32_t v = 0;
  spank_err_t rc = spank_get_item(sp, which, &v);
  if (rc == ESPANK_SUCCESS) put("item %s=%u", name, v);
  else put("item %s=ERR %d", name, (int)rc);
}

static void item_u64(spank_t sp, spank_item_t which, const char* name) {
  uint64_t v = 0;
  spank_err_t rc = spank_get_item(sp, which, &v);
  if (rc == ESPANK_SUCCESS) put("item %s=%llu", name, (unsigned long long)v);
  else put("item %s=ERR %d", name, (int)rc);
}

static void item_str(spank_t sp, spank_item_t which, const char* name) {
  char* v = NULL;
  spank_err_t rc = spank_get_item(sp, which, &v);
  if (rc == ESPANK_SUCCESS) put("item %s=%s", name, v ? v : "(null)");
  else put("item %s=ERR %d", name, (int)rc);
}

static void items(spank_t sp) {
  uint16_t ncpus = 0;
  gid_t* gids = NULL;
  int ngids = 0;
  spank_err_t rc;
  item_u32(sp, S_JOB_UID, "S_JOB_UID");
  item_u32(sp, S_JOB_GID, "S_JOB_GID");
  item_u32(sp, S_JOB_ID, "S_JOB_ID");
  item_u32(sp, S_JOB_STEPID, "S_JOB_STEPID");
  item_u32(sp, S_JOB_NNODES, "S_JOB_NNODES");
  item_u32(sp, S_JOB_NODEID, "S_JOB_NODEID");
  item_u32(sp, S_JOB_LOCAL_TASK_COUNT, "S_JOB_LOCAL_TASK_COUNT");
  item_u32(sp, S_JOB_TOTAL_TASK_COUNT, "S_JOB_TOTAL_TASK_COUNT");
  rc = spank_get_item(sp, S_JOB_NCPUS, &ncpus);
  if (rc == ESPANK_SUCCESS) put("item S_JOB_NCPUS=%u", (unsigned)ncpus);
  else put("item S_JOB_NCPUS=ERR %d", (int)rc);
  rc = spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &gids, &ngids);
  if (rc == ESPANK_SUCCESS) put("item S_JOB_SUPPLEMENTARY_GIDS=%d", ngids);
  else put("item S_JOB_SUPPLEMENTARY_GIDS=ERR %d", (int)rc);
  item_str(sp, S_SLURM_VERSION, "S_SLURM_VERSION");
  item_u32(sp, S_STEP_CPUS_PER_TASK, "S_STEP_CPUS_PER_TASK");
  item_str(sp, S_JOB_ALLOC_CORES, "S_JOB_ALLOC_CORES");
  item_u64(sp, S_JOB_ALLOC_MEM, "S_JOB_ALLOC_MEM");
  item_str(sp, S_STEP_ALLOC_CORES, "S_STEP_ALLOC_CORES");
  item_u64(sp, S_STEP_ALLOC_MEM, "S_STEP_ALLOC_MEM");
  item_u32(sp, S_SLURM_RESTART_COUNT, "S_SLURM_RESTART_COUNT");
  item_u32(sp, S_JOB_ARRAY_ID, "S_JOB_ARRAY_ID");
  item_u32(sp, S_JOB_ARRAY_TASK_ID, "S_JOB_ARRAY_TASK_ID");
}

static void environment(spank_t sp) {
  char** env = NULL;
  if (spank_context() == S_CTX_REMOTE) {
    spank_err_t rc = spank_get_item(sp, S_JOB_ENV, &env);
    if (rc != ESPANK_SUCCESS) {
      put("env ERR %d", (int)rc);
      return;
    }
  } else {
    env = environ;
  }
  for (char** e = env; e && *e; ++e) put("env %s", *e);
}

static void record(spank_t sp, const char* callback, int with_env) {
  put("== %s euid=%u", callback, (unsigned)geteuid());
  items(sp);
  if (with_env) environment(sp);
}

static int on_option(int val, const char* optarg, int remote) {
  (void)val;
  put("opt remote=%d value=%s", remote, optarg ? optarg : "(null)");
  return 0;
}

static struct spank_option facts_option = {
  (char*)"spank-facts", (char*)"[VALUE]", (char*)"[spank_facts] test tool: record the value", 2, 0, on_option};

int slurm_spank_init(spank_t sp, int ac, char** av) {
  char path[4096];
  if (ac < 1) return 0;
  snprintf(path, sizeof path, "%s/%s.%ld", av[0], context_name(), (long)getpid());
  out_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (spank_context() != S_CTX_SLURMD && spank_context() != S_CTX_JOB_SCRIPT)
    spank_option_register(sp, &facts_option);
  record(sp, "init", 1);
  return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char** av) {
  (void)ac, (void)av;
  record(sp, "init_post_opt", 1);
  return 0;
}

int slurm_spank_local_user_init(spank_t sp, int ac, char** av) {
  (void)ac, (void)av;
  record(sp, "local_user_init", 0);
  return 0;
}

int slurm_spank_user_init(spank_t sp, int ac, char** av) {
  (void)ac, (void)av;
  record(sp, "user_init", 1);
  return 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char** av) {
  (void)ac, (void)av;
  record(sp, "task_init", 1);
  return 0;
}

int slurm_spank_task_exit(spank_t sp, int ac, char** av) {
  int status = -1;
  (void)ac, (void)av;
  spank_err_t rc = spank_get_item(sp, S_TASK_EXIT_STATUS, &status);
  put("== task_exit euid=%u", (unsigned)geteuid());
  if (rc == ESPANK_SUCCESS) put("item S_TASK_EXIT_STATUS=%d", status);
  else put("item S_TASK_EXIT_STATUS=ERR %d", (int)rc);
  return 0;
}

int slurm_spank_exit(spank_t sp, int ac, char** av) {
  (void)ac, (void)av;
  record(sp, "exit", 0);
  if (out_fd >= 0) close(out_fd);
  out_fd = -1;
  return 0;
}

int slurm_spank_slurmd_exit(spank_t sp, int ac, char** av) {
  (void)sp, (void)ac, (void)av;
  put("== slurmd_exit euid=%u", (unsigned)geteuid());
  return 0;
}
