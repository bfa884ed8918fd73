// NCCL / CUDA settings from Topology x Plan. Per-platform practice: shared/docs/anchors.md §4; NCCL env docs.
#include "paratune/advisor/env.h"

#include <cstdio>
#include <string>

#include "paratune/advisor/catalog.h"

namespace paratune::advisor {

namespace {

// NCCL_NET_GDR_LEVEL=P2C exists from NCCL 2.27.3 on (topoPathTypeStr, tests/contracts/nccl--2.27.json).
bool nccl_has_p2c(const std::string& version) {
  int major = 0, minor = 0, patch = 0;
  if (std::sscanf(version.c_str(), "%d.%d.%d", &major, &minor, &patch) < 2) return false;
  return major > 2 || (major == 2 && (minor > 27 || (minor == 27 && patch >= 3)));
}

}  // namespace

std::vector<EnvSetting> synthesize_env(const Scenario& s, Framework f, const Layout& l, double memory_gib) {
  std::vector<EnvSetting> env;
  const ClusterSpec& c = s.cluster;
  const GpuSpec g = effective_gpu(c);
  auto add = [&](const char* n, std::string v, std::string why) { env.push_back({n, std::move(v), std::move(why)}); };
  const bool megatron_like = f == Framework::Megatron || f == Framework::Nemo;

  // CUDA_DEVICE_MAX_CONNECTIONS: Megatron's TP/SP (and CP) communication overlap relies on kernels being issued in
  // program order on one hardware queue (Megatron asserts it is 1 with tp or cp > 1 before Blackwell); Megatron-FSDP
  // (ZeRO-3) asserts the opposite, that it is not 1, so it is left unset there, as for FSDP / ZeRO-3 prefetching.
  const bool megatron_fsdp = megatron_like && l.zero_stage >= 3;
  if (megatron_like && (l.tp > 1 || l.cp > 1) && !megatron_fsdp) {
    if (g.arch == GpuArch::Blackwell)
      add("CUDA_DEVICE_MAX_CONNECTIONS", "32",
          "Blackwell: TP/CP overlap no longer needs one queue; NeMo uses 32 on SM100+ for concurrency");
    else
      add("CUDA_DEVICE_MAX_CONNECTIONS", "1",
          "Megatron TP/SP/CP communication overlap needs kernels issued in order on a single hardware queue");
  } else if (f == Framework::DeepSpeed && l.tp > 1 && l.zero_stage < 3) {
    add("CUDA_DEVICE_MAX_CONNECTIONS", "1", "Megatron-DeepSpeed tensor parallelism with sequence parallel overlap");
  }

  // NICs: exact list of the active compute HCAs (ports), in the order the GPUs see them (probe order).
  const bool verbs = c.fabric == Fabric::InfiniBand || c.fabric == Fabric::RoCE;
  if (verbs && !c.nics.empty()) {
    std::string v = "=";
    int n = 0;
    for (const auto& nic : c.nics) {
      if (!nic.active) continue;
      v += (n++ ? "," : "") + nic.name + ":" + std::to_string(nic.port);
    }
    if (n > 0)
      add("NCCL_IB_HCA", v,
          std::to_string(n) + " active compute NIC port(s) in GPU-affinity order; exact match keeps storage or down "
                              "ports out of NCCL's rings");
  }
  if (!c.socket_ifname.empty()) {
    add("NCCL_SOCKET_IFNAME", c.socket_ifname, "bootstrap/out-of-band traffic on the interface the probe found routable");
  } else if (!c.nics.empty()) {
    for (const auto& nic : c.nics)
      if (nic.active && !nic.netdev.empty() && c.fabric != Fabric::InfiniBand) {
        add("NCCL_SOCKET_IFNAME", "=" + nic.netdev, "bootstrap on the compute NIC's netdev (no loopback/docker bridges)");
        break;
      }
  }
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
  if (c.fabric == Fabric::RoCE) {
    for (const auto& nic : c.nics)
      if (nic.active && nic.gid_index) {
        add("NCCL_IB_GID_INDEX", std::to_string(*nic.gid_index),
            "RoCE v2 GID of the compute NICs as probed (routable IPv4/IPv6 GID)");
        break;
      }
  }
  // Only when rail alignment was stated: NCCL's default (cross-NIC allowed) is right on fabrics that are not.
  if (c.nodes > 1 && verbs && c.rail_alignment_known && c.rail_aligned && c.nic_count >= c.gpus_per_node &&
      c.gpus_per_node > 1)
    add("NCCL_CROSS_NIC", "0",
        "rail-optimised fabric (one NIC per GPU on its own rail): keep each ring on the same NIC index on every node");
  if (c.fabric == Fabric::Efa) {
    add("FI_PROVIDER", "efa", "libfabric provider for AWS EFA (aws-ofi-nccl)");
    add("FI_EFA_USE_DEVICE_RDMA", "1", "GPUDirect RDMA over EFA (p4d/p5 and later)");
  }
  if (c.fabric == Fabric::Slingshot) {
    add("FI_PROVIDER", "cxi", "libfabric provider for HPE Slingshot (CXI)");
    add("NCCL_NET", "AWS Libfabric", "NCCL over libfabric through the aws-ofi-nccl plugin on Slingshot");
  }
  // NVLink SHARP: NCCL enables it by itself where NVSwitch and Fabric Manager support it (NCCL_NVLS_ENABLE's
  // default); paratune only turns it off when its buffers (~1 GiB per GPU) would not fit next to the plan.
  if (g.nvls && c.nvls && c.nvlink_domain > 1 && memory_gib > 0 && g.memory_gib - memory_gib < 1.0)
    add("NCCL_NVLS_ENABLE", "0", "NVLS buffers (~1 GiB per GPU) would not fit next to this plan");
  if (!c.nccl_topo_file.empty())
    add("NCCL_TOPO_FILE", c.nccl_topo_file,
        "virtualised PCIe topology: the vendor's topology file gives NCCL the real GPU-NIC affinity");
  // Pipeline point-to-point across nodes: larger network chunks (NeMo PerfEnvPlugin sets 2 MiB).
  if (l.pp > 1 && (long(l.tp) * l.cp * l.dp >= c.gpus_per_node) && c.nodes > 1)
    add("NCCL_P2P_NET_CHUNKSIZE", "2097152",
        "pipeline stages talk across nodes: 2 MiB chunks fill the NIC for activation/gradient sends (NeMo practice)");
  if (memory_gib > 0 && memory_gib > 0.85 * g.memory_gib && f != Framework::DeepSpeed)
    add("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True",
        "the plan uses " + std::to_string(int(memory_gib * 100 / g.memory_gib)) +
            " % of GPU memory: expandable segments avoid fragmentation OOMs");
  return env;
}

}  // namespace paratune::advisor
