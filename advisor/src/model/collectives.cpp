// Collectives: achieved bus bandwidth of a group by where its ranks sit, and α–β time per collective
// (docs/model.md §4; NCCL src/graph/tuning.cc for ring steps).
#include <algorithm>
#include <cmath>

#include "terms.h"

namespace paratune::advisor::terms {

namespace {
inline double ceil_log2(double k) { return k <= 1 ? 0 : std::ceil(std::log2(k)); }

// Ranks of a group that share an island (node, or multi-node NVLink domain), and how many islands it spans.
void island_split(const Resolved& R, int k, int stride, int* per_island, int* islands) {
  const int island = R.island();
  *per_island = stride >= island ? 1 : std::min(k, std::max(1, island / stride));
  *islands = (k + *per_island - 1) / *per_island;
}
}  // namespace

double group_busbw_gbps(const Resolved& R, const ModelParams& p, int k, int stride, bool allreduce) {
  if (k <= 1) return 1e9;
  const long span = long(stride) * k;
  if (R.D > 1 && span <= R.D) {  // inside one NVLink domain (assumes groups aligned to domains, as rank order gives)
    const bool nvls = allreduce && k > 2 && R.gpu.nvls && R.s.cluster.nvls;
    return R.nvl_gbps * (nvls ? p.nvls_gain : 1.0);
  }
  // An island is what GPUs reach without the scale-out network: one node, or one NVLink domain that spans several
  // nodes (GB200/GB300 NVL72: 18 trays of 4 GPUs), with the NICs of all its nodes.
  const int island = R.island();
  int per_island, islands;
  island_split(R, k, stride, &per_island, &islands);
  const double intra = R.D > 1 && std::min<long>(span, island) <= R.D ? R.nvl_gbps : R.pcie_gbps;
  if (islands <= 1) return intra;
  // Between islands the island/per_island groups of this kind that run at once share the island's NICs
  // (rail-aligned ring: busbw = NIC aggregate when the whole node is in one group, nccl #812: 192 GB/s on 8x HDR;
  // NCCL runs one channel per NIC, so a ring through an NVL72 rack leaves it on as many NICs as the rack has).
  const double island_net = R.node_net_gbps * double(island) / R.G;
  double net = island_net * per_island / island;
  // Leaf switches of the allocation (placement.h): rings whose hops leave a leaf share its uplinks (node islands).
  if (R.s.cluster.placement && island == R.G)
    net *= placement_bandwidth_factor(*R.s.cluster.placement, islands, std::max(1, stride / R.G));
  return std::min(net, per_island > 1 ? intra : 1e9);
}

double collective_s(const Resolved& R, const ModelParams& p, Coll c, double bytes, int k, int stride) {
  if (k <= 1 || bytes <= 0) return 0;
  const bool ar = c == Coll::AllReduce;
  const double bw = group_busbw_gbps(R, p, k, stride, ar) * 1e9;
  const long span = long(stride) * k;
  const int island = R.island();
  const bool crosses = span > island || stride >= island;
  const double alpha = (crosses ? p.alpha_net_us : p.alpha_nvl_us) * 1e-6;
  switch (c) {
    case Coll::AllReduce: {  // ring 2(k-1) steps, tree 2 log2 k
      const double steps = std::min(2.0 * (k - 1), 2 * ceil_log2(k) + 2);
      return p.launch_us * 1e-6 + steps * alpha + bytes * 2.0 * (k - 1) / k / bw;
    }
    case Coll::ReduceScatter:
    case Coll::AllGather: {
      // NCCL runs these as rings (no tree; PAT only with one rank per node): k-1 steps, of which one per island
      // boundary crosses the network and the rest stay on NVLink (src/graph/tuning.cc). At 1,536 GPUs this
      // latency, not bandwidth, bounds a ZeRO-3 layer gather of a small model.
      int per_island, islands;
      island_split(R, k, stride, &per_island, &islands);
      const double inter = islands - 1, intra = (k - 1) - inter;
      return p.launch_us * 1e-6 + inter * p.alpha_net_us * 1e-6 + intra * p.alpha_ring_intra_us * 1e-6 +
             bytes * double(k - 1) / k / bw;
    }
    case Coll::SendRecv:
    default:
      return p.launch_us * 1e-6 + alpha + bytes / bw;
  }
}

}  // namespace paratune::advisor::terms
