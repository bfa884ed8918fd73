// slurmd context: runs once when slurmd starts (as root). Logs what was loaded (version, the Slurm it was built
// for) and fills the node's probe cache so that job steps pay a cache read, not a full discovery.
#include <string>

#include "contexts.h"
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
    const auto topo = probe::probe_cached(opts, cache, &result);
    log().info("node topology: {} GPUs, {} NICs, fingerprint {} ({})", topo.gpus.size(), topo.nics.size(),
               topo.fingerprint, result.hit ? "cache hit" : "probed, cache written");
  } catch (const std::exception& e) {
    log().error("probe at slurmd start: {}; job steps will probe again", e.what());
  }
  return 0;
}

}  // namespace paratune::plugin
