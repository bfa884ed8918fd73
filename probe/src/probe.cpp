// probe(): pick the source (file by content, builtin, fsroot, live) and produce a finished Topology.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "internal.h"

namespace paratune::probe {


namespace detail {
Topology load_hwloc_xml_text(const std::string& text, const std::string& origin) {
  return internal::load_hwloc({internal::HwlocSource::XmlText, text, origin}, internal::Extras{});
}
}  // namespace detail

namespace {

using internal::Extras;
using internal::HwlocSource;

enum class Format { Json, HwlocXml, NcclTopo, Unknown };

Format detect_format(const std::string& text) {
  size_t p = text.find_first_not_of(" \t\r\n\xef\xbb\xbf");
  if (p == std::string::npos) return Format::Unknown;
  if (text[p] == '{') return Format::Json;
  if (text[p] != '<') return Format::Unknown;
  // Skip the prolog/comments: the first element decides.
  const size_t topo = text.find("<topology"), sys = text.find("<system");
  if (topo != std::string::npos && (sys == std::string::npos || topo < sys)) return Format::HwlocXml;
  if (sys != std::string::npos) return Format::NcclTopo;
  return Format::Unknown;
}

Topology from_text(const std::string& text, const std::string& origin) {
  if (text.find('\0') != std::string::npos) throw ProbeError(origin + ": binary data, not a topology file");
  switch (detect_format(text)) {
    case Format::Json: {
      Topology t = from_json(text, origin);
      t.source = "json";
      return t;
    }
    case Format::HwlocXml:
      return internal::load_hwloc({HwlocSource::XmlText, text, origin}, Extras{});
    case Format::NcclTopo:
      return detail::parse_nccl_topo(text, origin);
    case Format::Unknown:
      break;
  }
  throw ProbeError(origin +
                   ": not a topology file (expected hwloc XML <topology>, NCCL topology XML <system> or "
                   "`paratune probe --json` output)");
}

Extras live_extras(const ProbeOptions& o, const std::string& sysfs_root) {
  Extras e;
  e.sysfs_nics = detail::read_sysfs_nics(sysfs_root);
  e.dmi_root = sysfs_root + "/class/dmi/id";
  e.proc_root = o.fsroot.empty() ? "/proc" : o.fsroot + "/proc";
  if (o.use_ibverbs && o.fsroot.empty()) e.verbs = detail::read_ibverbs_nics();
  if (o.use_nvml && o.fsroot.empty()) e.nvml = detail::read_nvml();
  return e;
}

// The path as NCCL in the job would need it (the job's working directory is not the probe's).
std::string absolute_path(const std::string& path) {
  std::error_code ec;
  const auto abs = std::filesystem::absolute(path, ec);
  return ec ? path : abs.lexically_normal().string();
}

// Lay a vendor NCCL topology file over a probed topology (cloud VMs hide the real PCIe switches).
void overlay_nccl_topo(Topology& t, const std::string& file) {
  bool too_big = false;
  auto text = internal::read_file(file, 16u << 20, &too_big);
  if (!text) throw ProbeError(file + ": cannot read" + (too_big ? ": larger than 16 MiB" : ": " + std::string(std::strerror(errno ? errno : EIO))));
  const Topology v = detail::parse_nccl_topo(*text, file);
  auto index_of = [](const auto& list, const std::string& busid) {
    for (size_t i = 0; i < list.size(); ++i)
      if (!busid.empty() && list[i].pci_bus_id == busid) return static_cast<int>(i);
    return -1;
  };
  const size_t ng = t.gpus.size(), nn = t.nics.size();
  std::vector<int> gmap(ng), nmap(nn);
  int gm = 0, nm = 0;
  for (size_t i = 0; i < ng; ++i) gm += (gmap[i] = index_of(v.gpus, t.gpus[i].pci_bus_id)) >= 0;
  for (size_t k = 0; k < nn; ++k) nm += (nmap[k] = index_of(v.nics, t.nics[k].pci_bus_id)) >= 0;
  if (gm == 0 && nm == 0) {
    t.warnings.push_back("NCCL topology file " + file + " names no GPU or NIC of this node (PCI bus ids differ)");
    return;
  }
  t.gpu_pci_paths.resize(ng, std::vector<std::string>(ng, "SYS"));
  for (size_t i = 0; i < ng; ++i)
    for (size_t j = 0; j < ng; ++j)
      if (i != j && gmap[i] >= 0 && gmap[j] >= 0) t.gpu_pci_paths[i][j] = v.gpu_pci_paths[gmap[i]][gmap[j]];
  std::vector<std::vector<std::string>> nic_paths = t.gpu_nic_paths;
  nic_paths.resize(ng, std::vector<std::string>(nn, "SYS"));
  for (size_t i = 0; i < ng; ++i)
    for (size_t k = 0; k < nn; ++k)
      if (gmap[i] >= 0 && nmap[k] >= 0) nic_paths[i][k] = v.gpu_nic_paths[gmap[i]][nmap[k]];
  for (auto& n : t.nics) n.role = "unknown";  // re-derived from the corrected paths
  t.inferred.push_back("paths: from NCCL topology file " + file + " (" + std::to_string(gm) + "/" +
                       std::to_string(ng) + " GPUs, " + std::to_string(nm) + "/" + std::to_string(nn) +
                       " NICs matched by PCI bus id)");
  internal::finish_topology(t, nic_paths);
  t.nccl_topo_file = absolute_path(file);
}

}  // namespace

Topology probe(const ProbeOptions& options) {
  if (!options.topology_file.empty() && !options.fsroot.empty())
    throw ProbeError("probe options: give either a topology file or an fsroot, not both");
  Topology t;
  if (!options.topology_file.empty()) {
    const std::string& f = options.topology_file;
    if (f.rfind("builtin:", 0) == 0) {
      const std::string name = f.substr(8);
      const std::string* xml = detail::builtin_topology_xml(name);
      if (!xml) {
        std::string valid;
        for (const auto& n : builtin_topology_names()) valid += (valid.empty() ? "" : ", ") + ("builtin:" + n);
        throw ProbeError(f + ": no such builtin topology (valid: " + valid + ")");
      }
      t = internal::load_hwloc({HwlocSource::XmlText, *xml, f, /*trusted=*/true}, Extras{});
      t.source = "hwloc-xml";
      t.inferred.push_back("topology: builtin " + name + " (not this machine)");
    } else {
      struct stat st {};
      if (::stat(f.c_str(), &st) != 0) throw ProbeError(f + ": cannot read: " + std::strerror(errno));
      if (S_ISDIR(st.st_mode)) throw ProbeError(f + ": is a directory (use --fsroot for a sysfs tree)");
      bool too_big = false;
      auto text = internal::read_file(f, 256u << 20, &too_big);
      if (too_big) throw ProbeError(f + ": larger than 256 MiB, not a topology file");
      if (!text) throw ProbeError(f + ": cannot read: " + std::strerror(errno ? errno : EIO));
      t = from_text(*text, f);
      if (t.source == "nccl-topo") t.nccl_topo_file = absolute_path(f);
    }
  } else if (!options.fsroot.empty()) {
    struct stat st {};
    if (::stat(options.fsroot.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw ProbeError(options.fsroot + ": not a directory (fsroot must hold sys/ and proc/)");
    struct stat st2 {};
    if (::stat((options.fsroot + "/sys").c_str(), &st2) != 0)
      throw ProbeError(options.fsroot + ": no sys/ directory inside (not an HWLOC_FSROOT tree)");
    Extras e = live_extras(options, options.fsroot + "/sys");
    t = internal::load_hwloc({HwlocSource::Fsroot, options.fsroot, options.fsroot}, e);
  } else {
    Extras e = live_extras(options, options.sysfs_root.empty() ? "/sys" : options.sysfs_root);
    t = internal::load_hwloc({HwlocSource::Live, "", "live node"}, e);
    if (e.nvml && !e.nvml->available && !t.gpus.empty() && t.gpus[0].vendor_id == 0x10de)
      t.inferred.push_back("nvml: not available (" + e.nvml->error + ")");
    if (e.verbs && !e.verbs->available) t.inferred.push_back("ibverbs: not available (" + e.verbs->error + ")");
  }
  if (!options.nccl_topo_file.empty()) overlay_nccl_topo(t, options.nccl_topo_file);
  detail::apply_allocation(t, options.allocated_gpus);
  // Recomputed for every source (also JSON) so a hand-edited file cannot carry a stale fingerprint.
  t.fingerprint = compute_fingerprint(t);
  return t;
}

}  // namespace paratune::probe
