// Building blocks of the probe, exposed for tests, benchmarks and the CLI. Not a stable contract:
// use probe.h in other libraries.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "paratune/probe/topology.h"

namespace paratune::probe::detail {

// --- GPU model table (PCI id -> catalog key) -------------------------------------------------------
struct GpuModelInfo {
  uint16_t vendor_id;
  uint16_t device_id;
  const char* key;           // catalog key ("a100-sxm4-40gb")
  double memory_gib;         // 0 = unknown
  double nvlink_gbps;        // unidirectional GB/s per GPU into its NVLink domain, 0 = no NVLink
  // Switch: NVSwitch (all GPUs of the node); Mesh: NVLink per socket; Xgmi: AMD Infinity Fabric between all the
  // node's GPUs of the model (OAM parts); None: PCIe only.
  enum Fabric { None, Switch, Mesh, Xgmi } fabric;
  int domain_span = 0;       // GPUs in one NVLink domain across nodes (GB200/GB300 NVL72: 72); 0 = the node's
};
// By catalog key ("h100-sxm5-80gb"): the first entry with that key, nullptr if none.
const GpuModelInfo* find_gpu_model_by_key(const std::string& key);
const GpuModelInfo* find_gpu_model(uint16_t vendor_id, uint16_t device_id);  // nullptr if unknown
std::string gpu_model_key(uint16_t vendor_id, uint16_t device_id);            // key or "unknown-10de:xxxx"
const std::vector<GpuModelInfo>& gpu_model_table();

// --- PCI classification ----------------------------------------------------------------------------
bool is_gpu_class(uint16_t vendor_id, uint16_t class_id);  // NVIDIA 0x0302/0x0300, AMD 0x0380/0x0302/0x1200

// --- sysfs (/sys/class/infiniband, /sys/class/net) -------------------------------------------------
// Parses "100 Gb/sec (4X EDR)" -> 100; "2.5 Gb/sec (1X SDR)" -> 2.5; nullopt when it is not a rate.
std::optional<double> parse_ib_rate(const std::string& text);
// Parses "4: ACTIVE" -> "active", "5: LinkUp" -> "linkup"; nullopt for garbage.
std::optional<std::string> parse_ib_state(const std::string& text);
// One entry per port of every device under <sysfs_root>/class/infiniband. Missing directory = empty.
// Never throws for odd content: unreadable fields stay unset.
std::vector<Nic> read_sysfs_nics(const std::string& sysfs_root);

// --- libibverbs ------------------------------------------------------------------------------------
struct VerbsResult {
  bool available = false;    // ibv_get_device_list worked (even with zero devices)
  std::vector<Nic> nics;     // one per port
  std::string error;
};
VerbsResult read_ibverbs_nics();
// ibverbs active_width/active_speed codes -> Gb/s (0 for unknown codes).
double ibv_rate_gbps(uint8_t active_width, uint8_t active_speed);

// --- NVML (dlopen("libnvidia-ml.so.1") only) --------------------------------------------------------
struct NvmlGpu {
  std::string pci_bus_id;    // "0000:07:00.0"
  std::string name;          // "NVIDIA H200"
  std::optional<double> memory_gib;
  int nvlinks_active = 0;
  std::vector<std::string> nvlink_peers;  // remote PCI bus ids of active links (GPU or NVSwitch)
};
struct NvmlResult {
  bool available = false;
  std::vector<NvmlGpu> gpus;
  std::string error;
};
NvmlResult read_nvml(const char* library = "libnvidia-ml.so.1");

// --- NCCL topology XML (<system version="1">) --------------------------------------------------------
// Parse an NCCL topology file's text into a Topology (source "nccl-topo"). Throws ProbeError("ORIGIN: ...").
Topology parse_nccl_topo(const std::string& text, const std::string& origin);

// --- hwloc -----------------------------------------------------------------------------------------
// Load hwloc XML text (must be NUL-free) into a Topology (source "hwloc-xml"). Throws ProbeError.
Topology load_hwloc_xml_text(const std::string& text, const std::string& origin);

// --- the pieces shared by every source ---------------------------------------------------------------
// Cloud from DMI strings (sys vendor, product name, board vendor, chassis asset tag); nullopt = bare metal.
std::optional<std::string> detect_cloud(const std::string& sys_vendor, const std::string& product_name,
                                        const std::string& board_vendor, const std::string& chassis_asset_tag);
// Fill nvlink_domains / nvlink_gbps_per_gpu from the GPU models where nothing measured them.
void infer_nvlink_from_model(Topology& t);
// Apply the allocation (indexes of GPUs visible to the job; empty = all).
void apply_allocation(Topology& t, const std::vector<int>& allocated_gpus);
// After gpu_pci_paths and nvlink_domains are known: gpu_paths with NVL inside a domain.
void finish_gpu_paths(Topology& t);
// NCCL path class order (X < NVL < PIX < PXB < PHB < SYS).
int path_rank(const std::string& cls);

// Embedded hwloc XML of a builtin topology, or nullptr.
const std::string* builtin_topology_xml(const std::string& name);

// FNV-1a 64-bit of a string, as 16 lower-case hex digits.
std::string fnv1a64_hex(const std::string& s);

}  // namespace paratune::probe::detail
