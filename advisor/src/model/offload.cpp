// CPU activation offload (Megatron-Core cpu_offloading, --cpu-offloading-num-layers): the activations of the first
// offload_layers transformer layers go to host memory in the forward pass and come back for the backward pass.
#include <algorithm>
#include <string>

#include "terms.h"

namespace paratune::advisor::terms {

namespace {
// Host link per GPU and direction, GB/s (data sheets). NVLink-C2C carries 900 GB/s bidirectional, 450 a direction
// (NVIDIA GH200 and GB200 NVL72 data sheets). A Grace-Hopper superchip gives it to its one GPU; a Grace-Blackwell
// superchip (GB200, GB300) joins one Grace to two GPUs over it (the data sheets give the superchip's 900, no split
// per GPU), and both offload at once in a data-parallel job: 225 each. Other GPUs copy over their PCIe link (the catalog's pcie_gbps: Gen5 x16 = 64 per direction), which in
// a job across nodes also carries the GPUDirect RDMA traffic of the NIC under the same PCIe switch (one NIC per GPU
// on rail-aligned nodes): the copies get what the NIC leaves of it while the network is busy, at least a tenth. No
// measured offload run on a PCIe-attached GPU is in the data, so this is the cautious reading.
double host_link_gbps(const Resolved& R) {
  const GpuSpec& g = R.gpu;
  if (g.key.rfind("gh200", 0) == 0) return 450.0;
  if (g.key == "gb200" || g.key == "gb300") return 225.0;
  const double pcie = std::max(1.0, g.pcie_gbps);
  if (R.s.cluster.nodes <= 1) return pcie;
  return std::max(0.1 * pcie, pcie - R.node_net_gbps / std::max(1, R.G));
}

// Host memory per GPU of the system each GPU is sold in (GiB = GB / 1.0737): DGX A100 1 TB (40 GB GPUs) or 2 TB
// (80 GB), DGX H100 / H200 / B200 / B300 2 TB, for 8 GPUs (NVIDIA DGX data sheets); GB200 / GB300 NVL72 up to
// 17 TB LPDDR5X for 72 GPUs (NVL72 data sheets). 0: no reference system; the site states it ([cluster]
// host_memory_gib).
double reference_host_gib_per_gpu(const std::string& key) {
  constexpr double kGBperGiB = double(1ull << 30) / 1e9;
  if (key == "a100-sxm4-40gb") return 1000 / kGBperGiB / 8;
  if (key == "a100-sxm4-80gb" || key == "h100-sxm5-80gb" || key == "h800-sxm5-80gb" || key == "h200-sxm-141gb" ||
      key == "b200-sxm-180gb" || key == "b300-sxm-288gb")
    return 2000 / kGBperGiB / 8;
  if (key == "gb200" || key == "gb300") return 17000 / kGBperGiB / 72;
  return 0;
}

// Offloaded activations are pinned host memory; the rest of the host serves the job's processes, its data loaders
// and checkpoint staging: a fifth is left to them.
constexpr double kPinnableHostShare = 0.8;

}  // namespace

double host_capacity_gib(const Resolved& R) {
  const ClusterSpec& c = R.s.cluster;
  const double per_gpu = c.host_memory_gib > 0 ? c.host_memory_gib / std::max(1, c.gpus_per_node)
                                                : reference_host_gib_per_gpu(R.gpu.key);
  return kPinnableHostShare * per_gpu;
}

double resident_layers(const Layout& l, int stage_layers) {
  if (l.offload_layers <= 0) return stage_layers;
  const int off = std::min(l.offload_layers, std::max(0, stage_layers - 1));
  return stage_layers - off + (off > 0 ? 1 : 0);  // one layer's buffer in flight to or from the host
}

double offload_copy_s(const Resolved& R, double layer_bytes) { return layer_bytes / (host_link_gbps(R) * 1e9); }

// Megatron-Core's cpu_offloading is Transformer Engine's offload (transformer_block.py get_cpu_offload_context; TE
// cpu_offload.py DefaultOffloadSynchronizer, the default since TE 2.10): layers 0..n-1 offload, each starting when
// the next layer's forward starts, one after another on one copy stream; layer i's copy must be done before layer
// L-n+i's forward, and its reload starts at the backward of layer L-1-n+i. With copies of c each, forward f and
// backward b per layer, the last copy is due after L-1 forwards and the first reload needed after L-2 backwards:
// what the compute does not hide is max(0, n c - (L-1) f) out and max(0, n c - (L-2) b) back. TE's older handler
// (cpu_offload_v1.py, NVTE_CPU_OFFLOAD_V1=1) spreads the copies over windows of L/n layers: about the same.
double offload_exposed_s(const Resolved& R, double layer_bytes, int offloaded, int layers, double layer_fwd_s,
                         double layer_bwd_s) {
  const double copies = offloaded * offload_copy_s(R, layer_bytes);
  return std::max(0.0, copies - (layers - 1) * layer_fwd_s) + std::max(0.0, copies - (layers - 2) * layer_bwd_s);
}

}  // namespace paratune::advisor::terms
