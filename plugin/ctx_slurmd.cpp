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
#include <string>

#include "contexts.h"
#include "job/bounded_probe.h"
#include "job/safe_file.h"
#include "paratune/probe/probe.h"
#include "paratune/version.h"
#include "plugin_state.h"

namespace paratune::plugin {

int slurmd_init(spank_t, int ac, char** av) {
  // The version first: it is what an admin needs when a bad plugstack line disables the plugin below.
  log().info("paratune {} (built for Slurm {}) loaded in slurmd", kVersion, kSlurmVersion);
  if (!load_config(ac, av)) return 0;
  const auto& cfg = state().config;
  log().info("topology={}", cfg.topology.empty() ? "live probe" : cfg.topology);
  try {
    const auto slash = cfg.cache.find_last_of('/');
    if (slash != std::string::npos && slash > 0) job::ensure_directory(cfg.cache.substr(0, slash), 0755, 0);
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
  return 0;
}

}  // namespace paratune::plugin
