// NCCL / CUDA settings from Topology x Plan. Per-platform practice: shared/docs/anchors.md §4; NCCL env docs.
#include "paratune/advisor/env.h"

#include "paratune/advisor/framework_versions.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>

#include "paratune/advisor/catalog.h"
#include "paratune/advisor/model.h"

namespace paratune::advisor {

namespace {

// NCCL_NET_GDR_LEVEL=P2C exists from NCCL 2.27.3 on (topoPathTypeStr, tests/contracts/nccl--2.27.json).
bool nccl_has_p2c(const std::string& version) {
  int major = 0, minor = 0, patch = 0;
  if (std::sscanf(version.c_str(), "%d.%d.%d", &major, &minor, &patch) < 2) return false;
  return major > 2 || (major == 2 && (minor > 27 || (minor == 27 && patch >= 3)));
}

using Add = std::function<void(const char*, std::string, std::string)>;

bool verbs_fabric(const ClusterSpec& c) {
  return c.fabric_known && (c.fabric == Fabric::InfiniBand || c.fabric == Fabric::RoCE);
}

// Some active NIC is known only by a placeholder the probe made up (a vendor NCCL topology file without names).
bool unnamed_nics(const ClusterSpec& c) {
  return std::any_of(c.nics.begin(), c.nics.end(), [](const NicFacts& n) { return n.active && !n.name_reported; });
}

// Which devices NCCL uses. Only names the node itself reported may appear here: with the exact-match "=" prefix a
// name the node does not have leaves NCCL no device at all (it then fails or falls back to sockets).
void add_device_selection(const ClusterSpec& c, const Add& add) {
  if (verbs_fabric(c) && !c.nics.empty() && !unnamed_nics(c)) {
    std::string v = "=";
    int n = 0;
    // Every compute port, down ones too: the list goes to every node of the job, NCCL skips a port that is not
    // active on its own node (net_ib.cc), and a port down on this node may be up on the others.
    for (const auto& nic : c.nics)
      if (nic.name_reported) v += (n++ ? "," : "") + nic.name + ":" + std::to_string(nic.port);
    if (n > 0)
      add("NCCL_IB_HCA", v,
          std::to_string(n) + " compute NIC port(s) in GPU-affinity order, as the node names them; exact match "
                              "keeps storage NICs out of NCCL's rings (a port down on a node NCCL skips there)");
  }
  if (!c.socket_ifname.empty()) {
    add("NCCL_SOCKET_IFNAME", c.socket_ifname, "bootstrap/out-of-band traffic on the interface the probe found routable");
    return;
  }
  // A netdev is always a name the node reported (probe::Nic), never a placeholder.
  for (const auto& nic : c.nics)
    if (nic.active && !nic.netdev.empty() && c.fabric != Fabric::InfiniBand) {
      add("NCCL_SOCKET_IFNAME", "=" + nic.netdev, "bootstrap on the compute NIC's netdev (no loopback/docker bridges)");
      break;
    }
}

// What the fabric's own stack needs, each from its vendor's source (docs/operations.md "Cloud fabrics"). Nothing where the
// fabric is not known: the settings of one would break another.
void add_fabric_settings(const ClusterSpec& c, const GpuSpec& g, const Add& add) {
  if (!c.fabric_known) return;
  if (c.fabric == Fabric::Efa)
    // FI_EFA_USE_DEVICE_RDMA is left to libfabric: AWS says not to set it with libfabric >= 1.18 and aws-ofi-nccl
    // >= 1.7 (they enable device RDMA where the EFA generation has it), and it is wrong on EFA without RDMA.
    add("FI_PROVIDER", "efa",
        "libfabric's EFA provider for the aws-ofi-nccl net plugin (AWS, aws-ofi-nccl doc/efa-env-var.md: required up "
        "to aws-ofi-nccl 1.5; later versions make the same choice themselves on EC2, src/platform-aws.cpp)");
  if (c.fabric == Fabric::Slingshot) {
    add("FI_PROVIDER", "cxi", "libfabric's CXI provider for HPE Slingshot (aws-ofi-nccl hands FI_PROVIDER to libfabric "
                              "as its provider filter)");
    add("NCCL_NET", "AWS Libfabric",
        "load NCCL's traffic onto the aws-ofi-nccl plugin, which answers to this name (aws-ofi-nccl "
        "src/nccl_ofi_interface_nvidia.cpp), and fail rather than fall back to TCP sockets where it is missing (CSCS "
        "Alps NCCL guide for Slingshot)");
  }
  const bool azure = c.cloud && *c.cloud == "azure";
  // Azure's HPC images (azhpc-images components/customizations/ndv4.sh, ndv5.sh) set relaxed PCIe ordering on the
  // ND A100 v4 and ND H100/H200 v5 VMs, the InfiniBand SKUs of those GPU generations; not on ND V100 v2 (ndv2.sh).
  if (azure && c.fabric == Fabric::InfiniBand && (g.arch == GpuArch::Ampere || g.arch == GpuArch::Hopper))
    add("NCCL_IB_PCI_RELAXED_ORDERING", "1",
        "Azure ND A100 v4 / ND H100 v5: relaxed PCIe ordering for the HCAs passed through to the VM, as Azure's HPC "
        "images set it (Azure/azhpc-images components/customizations/ndv4.sh, ndv5.sh)");
  if (azure && c.nccl_topo_file.empty() && !c.topology_nccl_file.empty())
    add("NCCL_TOPO_FILE", c.topology_nccl_file,
        "Azure VM: NCCL reads the vendor topology file paratune planned with, as Azure's HPC images point it at theirs "
        "(Azure/azhpc-images components/customizations/ndv2.sh, ndv4.sh, ndv5.sh, ncv4.sh)");
}

}  // namespace

std::vector<std::string> network_notes(const Scenario& s) {
  const ClusterSpec& c = s.cluster;
  std::vector<std::string> notes;
  if (unnamed_nics(c))
    notes.push_back(
        "NIC device names: the topology source lists the NICs without names (a vendor NCCL topology file gives PCI "
        "addresses only; nic0, efa0... are paratune's placeholders), so no variable names a device from them "
        "(NCCL_IB_HCA): a name the node does not have leaves NCCL no device. NCCL's own "
        "selection is left alone: it takes every active device and ranks them by PCI distance to each GPU (on a VM "
        "from the vendor's topology file), which is what the list would have said");
  if (!c.fabric_known && !c.nics.empty())
    notes.push_back("fabric: the topology source does not say which fabric the NICs are on (no PCI vendor or class "
                    "ids, no device names): modelled as " + std::string(to_string(c.fabric)) +
                    "; no fabric-specific NCCL/libfabric variable is set (the site policy's facts.fabric states it)");
  return notes;
}

std::string cuda_connections_problem(const Scenario& s, const Layout& l, Framework f,
                                     const std::optional<std::string>& site) {
  if (!site) return "";
  const std::string given = site->empty() ? "removed" : "forced to " + *site;
  const bool megatron_ds = f == Framework::DeepSpeed && version_for(s, f).id == "megatron-deepspeed";
  if (f == Framework::Megatron && l.zero_stage >= 3 && *site == "1")
    return "the site policy forces CUDA_DEVICE_MAX_CONNECTIONS=1, which Megatron-FSDP (zero_stage 3) refuses at "
           "start-up (arguments.py: 'FSDP always requires CUDA_DEVICE_MAX_CONNECTIONS value large than one')";
  const bool needs_one =
      (f == Framework::Megatron && (l.tp > 1 || l.cp > 1) && l.zero_stage < 3 &&
       effective_gpu(s.cluster).arch != GpuArch::Blackwell && !moe_a2a_overlap(s, l, f)) ||
      (megatron_ds && l.tp > 1 && l.sequence_parallel);
  if (needs_one && *site != "1")
    return "the site policy has CUDA_DEVICE_MAX_CONNECTIONS " + given + ", but " +
           (megatron_ds ? "Megatron-DeepSpeed with sequence parallelism" : "Megatron with tp or cp > 1 before Blackwell") +
           " stops at start-up unless it is 1";
  return "";
}

std::vector<EnvSetting> synthesize_env(const Scenario& s, Framework f, const Layout& l, double memory_gib) {
  std::vector<EnvSetting> env;
  const ClusterSpec& c = s.cluster;
  const GpuSpec g = effective_gpu(c);
  const Add add = [&](const char* n, std::string v, std::string why) { env.push_back({n, std::move(v), std::move(why)}); };
  const bool megatron_like = f == Framework::Megatron || f == Framework::Nemo;

  // CUDA_DEVICE_MAX_CONNECTIONS: Megatron's TP/SP (and CP) communication overlap relies on kernels being issued in
  // program order on one hardware queue (Megatron asserts it is 1 with tp or cp > 1 before Blackwell); Megatron-FSDP
  // (ZeRO-3) asserts the opposite, that it is not 1, so it is left unset there, as for FSDP / ZeRO-3 prefetching.
  const bool megatron_fsdp = megatron_like && l.zero_stage >= 3;
  const bool a2a_overlap = megatron_like && moe_a2a_overlap(s, l, f);
  if (a2a_overlap) {
    // Megatron's "must be 1" rule does not apply with --overlap-moe-expert-parallel-comm (its `within`), and the
    // overlap needs the all-to-all and compute streams to run side by side (Megatron-Bridge perf overrides).
    const bool wide = l.dispatcher == Dispatcher::Flex || g.arch == GpuArch::Blackwell;
    add("CUDA_DEVICE_MAX_CONNECTIONS", wide ? "32" : "8",
        std::string("MoE all-to-all overlapped with compute needs concurrent hardware queues (Megatron-Bridge: 32 with "
                    "DeepEP/HybridEP or on Blackwell, 8 otherwise)"));
  } else if (megatron_like && (l.tp > 1 || l.cp > 1) && !megatron_fsdp) {
    if (g.arch == GpuArch::Blackwell)
      add("CUDA_DEVICE_MAX_CONNECTIONS", "32",
          "Blackwell: TP/CP overlap no longer needs one queue; NeMo uses 32 on SM100+ for concurrency");
    else
      add("CUDA_DEVICE_MAX_CONNECTIONS", "1",
          "Megatron TP/SP/CP communication overlap needs kernels issued in order on a single hardware queue");
  } else if (f == Framework::DeepSpeed && l.tp > 1 && l.sequence_parallel) {
    // Megatron-DeepSpeed raises at start-up with --sequence-parallel unless it is 1, whatever the ZeRO stage
    // (megatron/arguments.py at 4efb479d); DeepSpeed itself never reads it.
    add("CUDA_DEVICE_MAX_CONNECTIONS", "1", "Megatron-DeepSpeed refuses sequence parallelism without it");
  }

  // NICs: exact list of the active compute HCAs (ports), in the order the GPUs see them (probe order).
  add_device_selection(c, add);
  // GPUDirect RDMA: follow the measured GPU-NIC path class (NCCL uses GDR up to NCCL_NET_GDR_LEVEL).
  if (c.nodes > 1 && !c.gpu_nic_path.empty()) {
    const std::string& p = c.gpu_nic_path;
    if (p == "PIX" || p == "PXB")
      add("NCCL_NET_GDR_LEVEL", "PXB",
          "every GPU has a NIC behind the same PCIe switch (measured " + p +
              "): GPUDirect RDMA on, stated explicitly so a flattened VM topology cannot turn it off");
    else if (p == "PHB" || (p == "P2C" && !nccl_has_p2c(c.nccl_version)))
      add("NCCL_NET_GDR_LEVEL", "PHB",
          "nearest NIC is reached through the CPU host bridge (measured " + p +
              "): allow GPUDirect RDMA through it rather than bouncing through host memory" +
              (p == "P2C" ? " (P2C itself needs NCCL >= 2.27.3, and this NCCL's version is not known to be)" : ""));
    else if (p == "P2C")
      add("NCCL_NET_GDR_LEVEL", "P2C",
          "GPU and NIC share a C2C-attached CPU (measured P2C, NCCL " + c.nccl_version + " knows the level)");
    else if (p == "SYS")
      add("NCCL_NET_GDR_LEVEL", "PHB",
          "some GPUs reach their NIC only across the CPU interconnect (SYS): keep GPUDirect RDMA off for those pairs");
  }
  // One value for every device on every node: stated only where all the compute NICs probed agree on it. Where they
  // differ NCCL's own choice per device (IPv4 first, RoCE v2, no link-local: net_ib.cc) is left to act.
  if (verbs_fabric(c) && c.fabric == Fabric::RoCE) {
    std::optional<int> common;
    bool agree = true;
    for (const auto& nic : c.nics) {
      if (!nic.active) continue;
      if (!nic.gid_index || (common && *common != *nic.gid_index)) agree = false;
      if (!common) common = nic.gid_index;
    }
    if (agree && common)
      add("NCCL_IB_GID_INDEX", std::to_string(*common),
          "RoCE v2 GID of every compute NIC as probed (routable IPv4/IPv6 GID, the same index on all)");
  }
  // Only when rail alignment was stated: NCCL's default (cross-NIC allowed) is right on fabrics that are not.
  if (c.nodes > 1 && verbs_fabric(c) && c.rail_alignment_known && c.rail_aligned && c.nic_count >= c.gpus_per_node &&
      c.gpus_per_node > 1)
    add("NCCL_CROSS_NIC", "0",
        "rail-optimised fabric (one NIC per GPU on its own rail): keep each ring on the same NIC index on every node");
  add_fabric_settings(c, g, add);
  // NVLink SHARP: NCCL enables it by itself where NVSwitch and Fabric Manager support it (NCCL_NVLS_ENABLE's
  // default); paratune only turns it off when its buffers (~1 GiB per GPU) would not fit next to the plan.
  if (g.nvls && c.nvls && c.nvlink_domain > 1 && memory_gib > 0 && g.memory_gib - memory_gib < 1.0)
    add("NCCL_NVLS_ENABLE", "0", "NVLS buffers (~1 GiB per GPU) would not fit next to this plan");
  if (!c.nccl_topo_file.empty())
    add("NCCL_TOPO_FILE", c.nccl_topo_file,
        "virtualised PCIe topology: the vendor's topology file gives NCCL the real GPU-NIC affinity");
  // Pipeline point-to-point across nodes: larger network chunks (NeMo PerfEnvPlugin sets 2 MiB).
  const int island = std::max(c.gpus_per_node, c.nvlink_domain);
  const bool ep_across = l.ep > 1 && long(l.ep) * l.etp > island && l.dispatcher != Dispatcher::AllGather;
  // Not on EFA, nor where the fabric is unknown: aws-ofi-nccl sets its own per-platform chunk size (524288 on
  // p4d/p5, src/platform-aws.cpp) only where the variable is unset, so a value here would override AWS's tuning.
  const bool own_chunks = c.fabric_known && c.fabric != Fabric::Efa;
  if (own_chunks && l.pp > 1 && (long(l.tp) * l.cp * l.dp >= c.gpus_per_node) && c.nodes > 1)
    add("NCCL_P2P_NET_CHUNKSIZE", "2097152",
        "pipeline stages talk across nodes: 2 MiB chunks fill the NIC for activation/gradient sends (NeMo practice)");
  else if (own_chunks && ep_across && l.dispatcher == Dispatcher::AllToAll)
    add("NCCL_P2P_NET_CHUNKSIZE", "2097152",
        "the expert-parallel all-to-all crosses nodes as point-to-point sends of megabytes per peer: 2 MiB chunks "
        "fill the NIC (NCCL's default is 128 KiB)");
  // HybridEP (the flex dispatcher's backend across an NVL72 rack) sizes its buffers by the EP ranks that share one
  // NVLink domain (Megatron-Bridge perf overrides set it from the GPU type; here from the allocation).
  if (megatron_like && l.ep > 1 && l.dispatcher == Dispatcher::Flex && c.nvlink_domain > c.gpus_per_node)
    add("NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN", std::to_string(std::min(l.ep * l.etp, c.nvlink_domain)),
        "HybridEP: EP ranks inside one multi-node NVLink domain (the rest are reached over the NICs)");
  if (memory_gib > 0 && memory_gib > 0.85 * g.memory_gib && f != Framework::DeepSpeed)
    add("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True",
        "the plan uses " + std::to_string(int(memory_gib * 100 / g.memory_gib)) +
            " % of GPU memory: expandable segments avoid fragmentation OOMs");
  return env;
}

}  // namespace paratune::advisor
