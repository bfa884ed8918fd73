// Pieces shared by every probe source: path classes, the GPU model table, NVLink inference,
// the allocation, the fingerprint hash and cloud detection.
#include <algorithm>
#include <cstdio>
#include <map>
#include <stdexcept>

#include "paratune/probe/detail.h"
#include "paratune/probe/probe.h"

namespace paratune::probe {

const char* to_string(PathClass c) {
  switch (c) {
    case PathClass::X: return "X";
    case PathClass::NVL: return "NVL";
    case PathClass::PIX: return "PIX";
    case PathClass::PXB: return "PXB";
    case PathClass::PHB: return "PHB";
    case PathClass::SYS: return "SYS";
  }
  return "SYS";
}

PathClass path_class_from_string(const std::string& s) {
  if (s == "X") return PathClass::X;
  if (s == "NVL") return PathClass::NVL;
  if (s == "PIX") return PathClass::PIX;
  if (s == "PXB") return PathClass::PXB;
  if (s == "PHB" || s == "NODE") return PathClass::PHB;  // NCCL folds NODE into PHB
  if (s == "SYS") return PathClass::SYS;
  throw std::invalid_argument("unknown path class '" + s + "' (valid: X, NVL, PIX, PXB, PHB, SYS)");
}

namespace detail {

// Sources: Debian pci.ids 2023.04 for the ids; NVIDIA/AMD data sheets for memory and NVLink
// (unidirectional GB/s per GPU = links x 25 GB/s for NVLink2/3/4, x 20 GB/s for NVLink1).
const std::vector<GpuModelInfo>& gpu_model_table() {
  static const std::vector<GpuModelInfo> table = {
      // NVIDIA datacenter SXM parts (NVLink)
      {0x10de, 0x15f9, "p100-sxm2-16gb", 16, 80, GpuModelInfo::Mesh},     // 4 x NVLink1
      {0x10de, 0x1db1, "v100-sxm2-16gb", 16, 150, GpuModelInfo::Mesh},    // 6 x NVLink2
      {0x10de, 0x1db5, "v100-sxm2-32gb", 32, 150, GpuModelInfo::Mesh},
      {0x10de, 0x1db8, "v100-sxm3-32gb", 32, 150, GpuModelInfo::Switch},  // DGX-2 (NVSwitch)
      {0x10de, 0x20b0, "a100-sxm4-40gb", 40, 300, GpuModelInfo::Switch},  // 12 x NVLink3
      {0x10de, 0x20b2, "a100-sxm4-80gb", 80, 300, GpuModelInfo::Switch},
      {0x10de, 0x20b3, "a100-sxm-64gb", 64, 300, GpuModelInfo::Switch},
      {0x10de, 0x2330, "h100-sxm5-80gb", 80, 450, GpuModelInfo::Switch},  // 18 x NVLink4
      {0x10de, 0x2324, "h800-sxm5-80gb", 80, 200, GpuModelInfo::Switch},  // 8 x NVLink4
      {0x10de, 0x2335, "h200-sxm-141gb", 141, 450, GpuModelInfo::Switch},
      {0x10de, 0x2901, "b200-sxm-180gb", 180, 900, GpuModelInfo::Switch},
      // Blackwell Ultra and Grace-Blackwell (NVLink 5, 18 links x 50 GB/s). The GB200/GB300 superchips' NVLink
      // spans the NVL72 rack through its NVLink switch trays: 72 GPUs in one domain, 4 per compute tray.
      {0x10de, 0x3182, "b300-sxm-288gb", 288, 900, GpuModelInfo::Switch},
      {0x10de, 0x2941, "gb200-186gb", 186, 900, GpuModelInfo::Switch, 72},
      {0x10de, 0x31c2, "gb300-288gb", 288, 900, GpuModelInfo::Switch, 72},
      // NVIDIA PCIe parts (no NVLink domain assumed; bridges are not visible on PCI)
      {0x10de, 0x15f8, "p100-pcie-16gb", 16, 0, GpuModelInfo::None},
      {0x10de, 0x15f7, "p100-pcie-12gb", 12, 0, GpuModelInfo::None},
      {0x10de, 0x1db4, "v100-pcie-16gb", 16, 0, GpuModelInfo::None},
      {0x10de, 0x1db6, "v100-pcie-32gb", 32, 0, GpuModelInfo::None},
      {0x10de, 0x1eb8, "t4-16gb", 16, 0, GpuModelInfo::None},
      {0x10de, 0x20f1, "a100-pcie-40gb", 40, 0, GpuModelInfo::None},
      {0x10de, 0x20b5, "a100-pcie-80gb", 80, 0, GpuModelInfo::None},
      {0x10de, 0x20b7, "a30-24gb", 24, 0, GpuModelInfo::None},
      {0x10de, 0x2236, "a10-24gb", 24, 0, GpuModelInfo::None},
      {0x10de, 0x2237, "a10g-24gb", 24, 0, GpuModelInfo::None},
      {0x10de, 0x2331, "h100-pcie-80gb", 80, 0, GpuModelInfo::None},
      {0x10de, 0x2321, "h100-nvl-94gb", 94, 0, GpuModelInfo::None},
      {0x10de, 0x26b5, "l40-48gb", 48, 0, GpuModelInfo::None},
      {0x10de, 0x26b9, "l40s-48gb", 48, 0, GpuModelInfo::None},
      {0x10de, 0x27b8, "l4-24gb", 24, 0, GpuModelInfo::None},
      {0x10de, 0x1094, "m2075-6gb", 6, 0, GpuModelInfo::None},
      {0x10de, 0x06d2, "m2070-6gb", 6, 0, GpuModelInfo::None},
      // AMD Instinct. PCIe cards (MI50, MI100): bridges are not visible on PCI, no domain. OAM parts (MI250X,
      // MI300X, MI300A): Infinity Fabric (xGMI) links between all GPUs of the node; bandwidth from the catalog.
      {0x1002, 0x66a1, "mi50-32gb", 32, 0, GpuModelInfo::None},
      {0x1002, 0x738c, "mi100-32gb", 32, 0, GpuModelInfo::None},
      // MI250X: each PCI function is one of the package's two GCDs, with its own 64 GB of HBM2e (the 128 GB is
      // the package's; the OS, ROCm and Slurm's gres all count GCDs).
      {0x1002, 0x7408, "mi250x-64gb", 64, 0, GpuModelInfo::Xgmi},
      {0x1002, 0x740c, "mi250x-64gb", 64, 0, GpuModelInfo::Xgmi},
      {0x1002, 0x74a1, "mi300x-192gb", 192, 0, GpuModelInfo::Xgmi},
      {0x1002, 0x74a0, "mi300a-128gb", 128, 0, GpuModelInfo::Xgmi},
  };
  return table;
}

const GpuModelInfo* find_gpu_model(uint16_t vendor_id, uint16_t device_id) {
  for (const auto& m : gpu_model_table())
    if (m.vendor_id == vendor_id && m.device_id == device_id) return &m;
  return nullptr;
}

const GpuModelInfo* find_gpu_model_by_key(const std::string& key) {
  for (const auto& m : gpu_model_table())
    if (key == m.key) return &m;
  return nullptr;
}

std::string gpu_model_key(uint16_t vendor_id, uint16_t device_id) {
  if (const auto* m = find_gpu_model(vendor_id, device_id)) return m->key;
  char buf[32];
  std::snprintf(buf, sizeof buf, "unknown-%04x:%04x", vendor_id, device_id);
  return buf;
}

bool is_gpu_class(uint16_t vendor_id, uint16_t class_id) {
  if (vendor_id == 0x10de) return class_id == 0x0302 || class_id == 0x0300;
  // AMD: Instinct parts are 0x0380 (display other) / 0x1200 (processing accelerator); 0x0300 VGA parts on
  // these machines are BMC/onboard graphics (ATI ES1000) or desktop cards, not training GPUs.
  if (vendor_id == 0x1002) return class_id == 0x0380 || class_id == 0x0302 || class_id == 0x1200;
  return false;
}

int path_rank(const std::string& cls) {
  if (cls == "X") return 0;
  if (cls == "NVL") return 1;
  if (cls == "PIX") return 2;
  if (cls == "PXB") return 3;
  if (cls == "PHB" || cls == "NODE") return 4;
  if (cls == "SYS") return 5;
  return 6;
}

std::string fnv1a64_hex(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::optional<std::string> detect_cloud(const std::string& sys_vendor, const std::string& product_name,
                                        const std::string& board_vendor, const std::string& chassis_asset_tag) {
  auto has = [](const std::string& s, const char* what) { return s.find(what) != std::string::npos; };
  if (has(sys_vendor, "Amazon") || has(board_vendor, "Amazon") || has(product_name, "xlarge") ||
      has(product_name, ".metal"))
    return "aws";
  if (chassis_asset_tag == "7783-7084-3265-9085-8269-3286-77" ||
      (has(sys_vendor, "Microsoft Corporation") && has(product_name, "Virtual Machine")))
    return "azure";
  if (has(sys_vendor, "Google") || has(product_name, "Google Compute Engine")) return "gcp";
  return std::nullopt;
}

// One model's contribution: the domain key of a GPU (GPUs with the same key share a domain), or "" for alone.
std::string domain_key(const GpuModelInfo* m, const Gpu& g) {
  if (!m || m->fabric == GpuModelInfo::None) return "";
  if (m->fabric == GpuModelInfo::Mesh) return g.model + "/numa" + std::to_string(g.numa);
  return g.model;
}

void infer_nvlink_from_model(Topology& t) {
  if (!t.nvlink_domains.empty() || t.gpus.empty()) return;
  // Switch and Xgmi parts: one domain per model; Mesh parts: one per NUMA node (POWER/DGX-1 style meshes only reach
  // all peers inside a socket reliably); None and unknown models: every GPU alone.
  std::map<std::string, std::vector<int>> groups;
  std::vector<std::string> unknown_models;
  bool any_link = false;
  std::optional<double> gbps;
  int span = 0;
  for (const auto& g : t.gpus) {
    const auto* m = find_gpu_model(g.vendor_id, g.device_id);
    if (!m && std::find(unknown_models.begin(), unknown_models.end(), g.model) == unknown_models.end())
      unknown_models.push_back(g.model);
    const std::string key = domain_key(m, g);
    groups[key.empty() ? "#" + std::to_string(g.index) : key].push_back(g.index);
    if (key.empty()) continue;
    any_link = true;
    if (m->nvlink_gbps > 0) gbps = gbps ? std::min(*gbps, m->nvlink_gbps) : m->nvlink_gbps;
    span = std::max(span, m->domain_span);
  }
  for (auto& [k, v] : groups) t.nvlink_domains.push_back(v);
  std::sort(t.nvlink_domains.begin(), t.nvlink_domains.end());
  if (gbps) {
    t.nvlink_gbps_per_gpu = gbps;
    t.inferred.push_back("nvlink_gbps_per_gpu: from GPU model");
  }
  if (!unknown_models.empty()) {
    std::string list;
    for (const auto& m : unknown_models) list += (list.empty() ? "" : ", ") + m;
    t.nvlink_unknown = true;
    t.inferred.push_back("nvlink_domains: unknown (GPU model " + list +
                         " not known and the source does not say; the policy's facts.gpu or facts.nvlink_domain "
                         "decides)");
  } else if (any_link) {
    t.inferred.push_back("nvlink_domains: from GPU model");
  } else {
    t.inferred.push_back("nvlink_domains: none (PCIe GPU models)");
  }
  if (span > 0) {
    t.nvlink_domain_span = span;
    t.inferred.push_back("nvlink_domain_span: " + std::to_string(span) +
                         " GPUs (from GPU model: NVLink spans the rack, beyond this node)");
  }
}

void apply_allocation(Topology& t, const std::vector<int>& allocated_gpus) {
  // Slurm's GPU indexes are /dev/nvidiaN minors; use them when every GPU has one, else the PCI order.
  const bool by_minor = !t.gpus.empty() && std::all_of(t.gpus.begin(), t.gpus.end(),
                                                       [](const Gpu& g) { return g.device_minor >= 0; });
  auto id = [&](const Gpu& g) { return by_minor ? g.device_minor : g.index; };
  for (auto& g : t.gpus)
    g.in_allocation = allocated_gpus.empty() ||
                      std::find(allocated_gpus.begin(), allocated_gpus.end(), id(g)) != allocated_gpus.end();
  for (int a : allocated_gpus) {
    if (std::none_of(t.gpus.begin(), t.gpus.end(), [&](const Gpu& g) { return id(g) == a; })) {
      std::string w = "allocation names GPU " + std::to_string(a) + " but the node has " +
                      std::to_string(t.gpus.size()) + " GPUs";
      if (std::find(t.warnings.begin(), t.warnings.end(), w) == t.warnings.end()) t.warnings.push_back(w);
    }
  }
}

void finish_gpu_paths(Topology& t) {
  const size_t n = t.gpus.size();
  std::vector<int> domain_of(n, -1);
  for (size_t d = 0; d < t.nvlink_domains.size(); ++d)
    for (int i : t.nvlink_domains[d])
      if (i >= 0 && static_cast<size_t>(i) < n) domain_of[i] = static_cast<int>(d);
  t.gpu_paths = t.gpu_pci_paths;
  t.gpu_paths.resize(n);
  for (size_t i = 0; i < n; ++i) {
    t.gpu_paths[i].resize(n, "SYS");
    for (size_t j = 0; j < n; ++j) {
      if (i == j) {
        t.gpu_paths[i][j] = "X";
      } else if (domain_of[i] >= 0 && domain_of[i] == domain_of[j] && t.nvlink_domains[domain_of[i]].size() > 1) {
        t.gpu_paths[i][j] = "NVL";
      }
    }
  }
}

}  // namespace detail

std::string compute_fingerprint(const Topology& t) {
  // Canonical text of what matters for the advisor's decision; not the host name, bus ids, source or
  // allocation. Format changes must bump the "v1" prefix.
  std::string s = "v1;gpus=" + std::to_string(t.gpus.size());
  for (const auto& g : t.gpus) s += ";g:" + g.model + "/" + std::to_string(g.numa) + "/" + g.nic_path;
  s += ";nvl=";
  for (const auto& d : t.nvlink_domains) {
    s += "[";
    for (int i : d) s += std::to_string(i) + ",";
    s += "]";
  }
  if (t.nvlink_gbps_per_gpu) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f", *t.nvlink_gbps_per_gpu);
    s += std::string(";nvlbw=") + buf;
  }
  if (t.nvlink_unknown) s += ";nvlu";
  if (t.nvlink_domain_span > 0) s += ";nvlspan=" + std::to_string(t.nvlink_domain_span);
  s += ";nics=" + std::to_string(t.nics.size());
  for (const auto& n : t.nics) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f", n.rate_gbps.value_or(-1));
    s += ";n:" + n.name + "/" + std::to_string(n.port) + "/" + buf + "/" + n.state.value_or("?") + "/" +
         n.link_layer.value_or("?") + "/" + n.role;
  }
  s += ";paths=";
  for (const auto& row : t.gpu_paths) {
    for (const auto& c : row) s += c + ",";
    s += "|";
  }
  return detail::fnv1a64_hex(s);
}

}  // namespace paratune::probe
