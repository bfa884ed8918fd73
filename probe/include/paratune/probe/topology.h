// The Topology value: what one node looks like, as the advisor and a person need it.
// Its JSON form (to_json/from_json) is a public contract: see the probe issue / README.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace paratune::probe {

// NCCL-style path classes between two PCI devices (NODE is folded into PHB as NCCL does).
enum class PathClass { X, NVL, PIX, PXB, PHB, SYS };
const char* to_string(PathClass c);
PathClass path_class_from_string(const std::string& s);  // throws std::invalid_argument

struct Gpu {
  int index = 0;                      // order on the node (PCI bus id order)
  std::string pci_bus_id;             // "0000:07:00.0"
  uint16_t vendor_id = 0;             // 0x10de NVIDIA, 0x1002 AMD
  uint16_t device_id = 0;
  std::string model;                  // catalog key ("a100-sxm4-40gb") or "unknown-10de:xxxx"
  std::optional<double> memory_gib;   // where known (catalog)
  int numa = -1;                      // -1 = unknown
  bool in_allocation = true;          // intersected with CUDA_VISIBLE_DEVICES / SLURM_*_GPUS
  std::vector<std::string> nearest_nics;
  std::string nic_path;               // path class to the nearest NIC ("PIX"...), empty if no NIC
  // Added: /dev/nvidiaN minor (live NVIDIA nodes, /proc/driver/nvidia/gpus/<bus>/information), -1 = unknown.
  // Slurm's GRES indexes (SLURM_JOB_GPUS) are these minors; the allocation is matched on them when known.
  int device_minor = -1;
};

struct Nic {
  std::string name;                   // "mlx5_0", "rdmap16s27", "qib0"
  int port = 1;
  std::optional<std::string> state;        // "active", "down", ... (null: source does not say)
  std::optional<std::string> link_layer;   // "infiniband" | "ethernet"
  std::optional<double> rate_gbps;
  std::string netdev;                 // "ib0" or empty
  std::string pci_bus_id;
  int numa = -1;
  std::string role;                   // "compute" | "storage" | "unknown"
  std::optional<int> gid_index;       // RoCE: the RoCEv2 GID to use, where known
  // Added after the first contract (optional in JSON; absent = unknown):
  std::optional<std::string> phys_state;   // "linkup", "polling", "disabled", ... (sysfs/ibverbs)
  uint16_t vendor_id = 0;                  // PCI vendor of the NIC (0x15b3 Mellanox, 0x1d0f EFA), 0 = unknown
  // Whether `name` is the device's own name as the node reported it (ibverbs/sysfs/hwloc on the node, a
  // <net name=...> in an NCCL topology file, a `paratune probe --json` made there). False: a placeholder the probe
  // made up so the NIC can be referred to (vendor NCCL files list HCAs by PCI address only: "nic0", "efa0") or a
  // name derived from another one (Slingshot "cxiN" from hwloc's "hsiN"). Such a name must never reach a variable
  // that names devices (NCCL_IB_HCA): NCCL would look for a device that does not exist. `netdev` is always a
  // reported name or empty. JSON "name_reported" (absent in older output: see from_json).
  bool name_reported = true;
};

struct Topology {
  std::string source;                 // "hwloc-live" | "hwloc-xml" | "hwloc-fsroot" | "nccl-topo" | "json"
  std::optional<std::string> cloud;   // "aws" | "azure" | "gcp" | null
  std::string fingerprint;            // stable hash of what matters for the decision
  std::string hostname;               // where it was probed, if known
  std::vector<Gpu> gpus;
  std::vector<Nic> nics;
  std::vector<std::vector<std::string>> gpu_paths;  // GPU x GPU path classes ("X" on the diagonal)
  std::vector<std::vector<int>> nvlink_domains;     // GPU indexes sharing NVLink/NVSwitch
  std::optional<double> nvlink_gbps_per_gpu;        // unidirectional GB/s per GPU into its domain
  std::vector<std::string> inferred;  // what was inferred rather than read ("nvlink_domains: from GPU model")
  std::vector<std::string> warnings;  // e.g. duplicate PCI bus ids, untrusted PCI locality on cloud VMs
  // Added after the first contract (optional in JSON):
  // gpu_paths says NVL where two GPUs share an NVLink domain; gpu_pci_paths always has the pure PCIe class.
  std::vector<std::vector<std::string>> gpu_pci_paths;
  std::vector<std::vector<std::string>> gpu_nic_paths;  // GPU x NIC (one column per entry of `nics`)
  int numa_nodes = 0;                 // NUMA nodes of the machine (0 = unknown)
  // Added (optional in JSON): nothing in the source said what the NVLink/xGMI domain is and the GPU model is not
  // known either, so nvlink_domains is a guess (every GPU alone) — "unknown", not "none"; the decision takes the
  // domain from the GPU model the site's policy names (facts.gpu) and says what it assumed.
  bool nvlink_unknown = false;
  int nvlink_domain_span = 0;         // GPUs in one NVLink domain counting other nodes' (NVL72: 72); 0 = this node
  // Added (optional in JSON): the NCCL topology file (NCCL_TOPO_FILE format) the facts were read from or laid over
  // a live probe with, as an absolute path; empty otherwise. A vendor's file for a VM type is what NCCL itself
  // should read on that VM (Azure's HPC images point NCCL_TOPO_FILE at the same files).
  std::string nccl_topo_file;
};

}  // namespace paratune::probe
