// slurmd context: runs once when slurmd starts (as root). The probe cache is filled here so that job steps
// pay milliseconds, not a full discovery; until the probe issue lands its cache, this only validates config.
#include "contexts.h"
#include "plugin_state.h"

namespace paratune::plugin {

int slurmd_init(spank_t, int ac, char** av) {
  if (load_config(ac, av)) log().info("loaded (slurmd); topology={}", state().config.topology.empty() ? "live probe" : state().config.topology);
  return 0;
}

}  // namespace paratune::plugin
