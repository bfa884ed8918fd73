// CPU activation offload (Megatron-Core cpu_offloading, --cpu-offloading-num-layers): the activations of the first
// offload_layers transformer layers go to host memory in the forward pass and come back for the backward pass.
#include <algorithm>

#include "terms.h"

namespace paratune::advisor::terms {

namespace {
// Host link per direction, GB/s (data sheets): Grace-Blackwell (GB200, GB300) and Grace-Hopper reach host memory
// over NVLink-C2C, 900 GB/s bidirectional = 450 per direction (NVIDIA GB200 NVL72 and GH200 data sheets); the other
// GPUs over their PCIe link (the catalog's pcie_gbps: Gen5 x16 = 64 per direction).
double host_link_gbps(const GpuSpec& g) {
  const bool grace = g.key == "gb200" || g.key == "gb300" || g.key.rfind("gh200", 0) == 0;
  return grace ? 450.0 : std::max(1.0, g.pcie_gbps);
}
}  // namespace

double resident_layers(const Layout& l, int stage_layers) {
  if (l.offload_layers <= 0) return stage_layers;
  const int off = std::min(l.offload_layers, std::max(0, stage_layers - 1));
  return stage_layers - off + (off > 0 ? 1 : 0);  // one layer's buffer in flight to or from the host
}

// One layer's saved activations out (forward) and back (backward) at the link's data-sheet rate. Charged in full:
// Megatron runs the copies on a side stream, but no measurement in the data says how much of them the layer's
// compute hides.
double offload_layer_s(const Resolved& R, double layer_bytes) {
  return 2 * layer_bytes / (host_link_gbps(R.gpu) * 1e9);
}

}  // namespace paratune::advisor::terms
