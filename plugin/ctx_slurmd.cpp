// slurmd context: runs once when slurmd starts (as root). Logs what was loaded (version, the Slurm it was built
// for) and fills the node's probe cache so that job steps pay a cache read, not a full discovery.
//
// The probe here is bounded exactly like a job step's (job/bounded_probe.h, plugstack probe_timeout_ms, default
// 10 s): it runs in a forked child that probes and writes the cache, and is killed at the deadline. slurmd calls
// this before it registers with slurmctld, so an unbounded probe that hangs (a wedged NVML or driver, a sysfs read
// that never returns, a topology= "file" that is a FIFO) would hold slurmd's start — and the node — forever. One
// bound for both is deliberate: a probe that cannot finish within it at slurmd start would not finish within it
// in a step either, so a longer bound here would only delay slurmd; an admin whose live probe is slow raises
// probe_timeout_ms for both.
#include <unistd.h>

#include <ctime>
#include <string>

#include "contexts.h"
#include "job/bounded_probe.h"
#include "paratune/common/child_call.h"
#include "job/job_files.h"
#include "paratune/common/safe_file.h"
#include "paratune/probe/probe.h"
#include "paratune/version.h"
#include "plugin_state.h"

namespace paratune::plugin {

namespace {

constexpr int kGcTimeoutMs = 10000;
constexpr size_t kGcMaxEntries = 200000;

// log_dir/jobs/<jobid>/ older than jobs_days (job/job_files.h): what no job epilog collected (a node that died, a
// slurmd that was down at a job's end) and the per-job logs. In a forked child bounded in time, like the probe:
// slurmd is not registered yet, and a log_dir on a hung file system must not hold the node.
void collect_old_job_directories() {
  const auto& cfg = state().config;
  const std::string jobs_path = cfg.log_dir + "/jobs";
  if (::access(jobs_path.c_str(), F_OK) != 0) return;
  try {
    const std::string reply = common::call_in_child(
        [&] {
          auto jobs = common::ensure_directory(jobs_path, 0750, 0);
          const auto gc = job::collect_old_jobs(jobs.get(), std::time(nullptr), 86400L * cfg.jobs_days, kGcMaxEntries);
          return std::to_string(gc.removed) + " removed, " + std::to_string(gc.kept) + " kept" +
                 (gc.stopped_early ? " (stopped after " + std::to_string(gc.looked_at) + " entries)" : "");
        },
        kGcTimeoutMs, "clearing " + jobs_path, 4096);
    log().info("{}: entries older than {} days: {}", jobs_path, cfg.jobs_days, reply);
  } catch (const std::exception& e) {
    log().warn("{}: old job directories not cleared: {}", jobs_path, e.what());
  }
}

}  // namespace

int slurmd_init(spank_t, int ac, char** av) {
  // The version first: it is what an admin needs when a bad plugstack line disables the plugin below.
  log().info("paratune {} (built for Slurm {}) loaded in slurmd", kVersion, kSlurmVersion);
  if (!load_config(ac, av)) return 0;
  const auto& cfg = state().config;
  log().info("topology={}", cfg.topology.empty() ? "live probe" : cfg.topology);
  try {
    const auto slash = cfg.cache.find_last_of('/');
    if (slash != std::string::npos && slash > 0) common::ensure_directory(cfg.cache.substr(0, slash), 0755, 0);
    probe::ProbeOptions opts;
    opts.topology_file = cfg.topology;
    probe::CacheOptions cache;
    cache.path = cfg.cache;
    probe::CacheResult result;
    const auto topo = job::probe_with_deadline(opts, cache, cfg.probe_timeout_ms, &result);
    log().info("node topology: {} GPUs, {} NICs, fingerprint {} ({})", topo.gpus.size(), topo.nics.size(),
               topo.fingerprint, result.hit ? "cache hit" : "probed, cache written");
  } catch (const std::exception& e) {
    // slurmd goes on starting either way; without a cache each job step probes again, under the same bound.
    log().error("probe at slurmd start: {}; slurmd starts without a probe cache, job steps will probe again "
                "(each bounded by probe_timeout_ms={})", e.what(), cfg.probe_timeout_ms);
  }
  collect_old_job_directories();
  return 0;
}

}  // namespace paratune::plugin
