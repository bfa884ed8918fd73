// `paratune probe [--topology FILE | --fsroot DIR] [--nccl-topo FILE] [--gpus LIST] [--json]`: what this node (or a file) looks like.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "command.h"
#include "paratune/probe/probe.h"

namespace paratune::cli {
namespace {

const char* kHelp =
    "usage: paratune probe [--topology FILE | --fsroot DIR] [--nccl-topo FILE] [--gpus LIST] [--json]\n"
    "\n"
    "Probe the GPUs, NICs and PCIe/NVLink paths of this node (hwloc, sysfs, ibverbs, NVML when present)\n"
    "and print a summary, or the Topology as JSON with --json.\n"
    "\n"
    "  --topology FILE  read FILE instead of the live node: hwloc XML (lstopo file.xml), an NCCL topology\n"
    "                   file (NCCL_TOPO_FILE) or `paratune probe --json` output, detected by content;\n"
    "                   builtin:nvidia-dgx2 and builtin:lassen are compiled in (demo)\n"
    "  --fsroot DIR     read an HWLOC_FSROOT-style copy of /sys and /proc\n"
    "  --nccl-topo FILE lay a vendor NCCL topology file (NCCL_TOPO_FILE) over the probe: its GPU/NIC grouping\n"
    "                   replaces the VM's virtual PCI locality for the devices it names\n"
    "  --gpus LIST      GPU indexes of the allocation, e.g. 0,1 (default: CUDA_VISIBLE_DEVICES if set)\n"
    "  --json           print JSON (the contract of the tuning log and of --topology)\n"
    "\n"
    "exit status: 0 ok, 2 bad input (unreadable or corrupt file, bad option)\n";

bool parse_list(const std::string& s, std::vector<int>& out) {
  out.clear();
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    const std::string item = s.substr(i, j - i);
    if (item.empty() || item.size() > 4 || item.find_first_not_of("0123456789") != std::string::npos) return false;
    out.push_back(std::atoi(item.c_str()));
    i = j + 1;
  }
  return !out.empty();
}

std::string opt_str(const std::optional<std::string>& s) { return s ? *s : "-"; }

void print_human(const probe::Topology& t) {
  std::printf("source       %s%s%s\n", t.source.c_str(), t.hostname.empty() ? "" : "  host ",
              t.hostname.c_str());
  std::printf("fingerprint  %s\n", t.fingerprint.c_str());
  std::printf("cloud        %s\n", t.cloud ? t.cloud->c_str() : "none detected");
  std::printf("numa nodes   %d\n", t.numa_nodes);

  std::printf("\nGPUs (%zu)\n", t.gpus.size());
  if (!t.gpus.empty())
    std::printf("  %-4s %-13s %-18s %7s %5s %5s  %s\n", "idx", "pci", "model", "mem GiB", "numa", "alloc",
                "nearest NIC (path)");
  for (const auto& g : t.gpus) {
    std::string nics;
    for (const auto& n : g.nearest_nics) nics += (nics.empty() ? "" : ",") + n;
    char mem[32] = "-";
    if (g.memory_gib) std::snprintf(mem, sizeof mem, "%.0f", *g.memory_gib);
    std::printf("  %-4d %-13s %-18s %7s %5d %5s  %s%s\n", g.index, g.pci_bus_id.empty() ? "-" : g.pci_bus_id.c_str(),
                g.model.c_str(), mem, g.numa, g.in_allocation ? "yes" : "no", nics.empty() ? "-" : nics.c_str(),
                g.nic_path.empty() ? "" : (" (" + g.nic_path + ")").c_str());
  }

  std::printf("\nNICs (%zu)\n", t.nics.size());
  if (!t.nics.empty())
    std::printf("  %-12s %4s %-8s %-10s %9s %-12s %-13s %5s %s\n", "name", "port", "state", "link", "Gb/s", "netdev",
                "pci", "numa", "role");
  for (const auto& n : t.nics) {
    char rate[32] = "-";
    if (n.rate_gbps) std::snprintf(rate, sizeof rate, "%g", *n.rate_gbps);
    std::printf("  %-12s %4d %-8s %-10s %9s %-12s %-13s %5d %s\n", n.name.c_str(), n.port, opt_str(n.state).c_str(),
                opt_str(n.link_layer).c_str(), rate, n.netdev.empty() ? "-" : n.netdev.c_str(),
                n.pci_bus_id.empty() ? "-" : n.pci_bus_id.c_str(), n.numa, n.role.c_str());
  }

  if (!t.gpus.empty()) {
    // nvidia-smi topo -m style: GPUs then NICs as columns.
    std::printf("\nPaths (X self, NVL NVLink, PIX one PCIe switch, PXB several, PHB host bridge, SYS across NUMA)\n");
    std::printf("  %-6s", "");
    for (size_t j = 0; j < t.gpus.size(); ++j) std::printf(" %-5s", ("GPU" + std::to_string(j)).c_str());
    for (size_t k = 0; k < t.nics.size(); ++k) std::printf(" %-5s", ("NIC" + std::to_string(k)).c_str());
    std::printf("\n");
    for (size_t i = 0; i < t.gpus.size(); ++i) {
      std::printf("  %-6s", ("GPU" + std::to_string(i)).c_str());
      for (size_t j = 0; j < t.gpus.size(); ++j)
        std::printf(" %-5s", i < t.gpu_paths.size() && j < t.gpu_paths[i].size() ? t.gpu_paths[i][j].c_str() : "?");
      for (size_t k = 0; k < t.nics.size(); ++k)
        std::printf(" %-5s",
                    i < t.gpu_nic_paths.size() && k < t.gpu_nic_paths[i].size() ? t.gpu_nic_paths[i][k].c_str() : "?");
      std::printf("\n");
    }
    if (!t.nics.empty()) {
      std::printf("  NICs:");
      for (size_t k = 0; k < t.nics.size(); ++k)
        std::printf(" NIC%zu=%s:%d", k, t.nics[k].name.c_str(), t.nics[k].port);
      std::printf("\n");
    }
    std::printf("\nNVLink domains:");
    if (t.nvlink_unknown) std::printf(" unknown (the GPU model is not known; set facts.gpu in the site policy)");
    else for (const auto& d : t.nvlink_domains) {
      std::printf(" [");
      for (size_t i = 0; i < d.size(); ++i) std::printf("%s%d", i ? "," : "", d[i]);
      std::printf("]");
    }
    if (t.nvlink_gbps_per_gpu) std::printf("  %g GB/s per GPU", *t.nvlink_gbps_per_gpu);
    if (t.nvlink_domain_span > 0) std::printf("  (the domain spans %d GPUs across nodes)", t.nvlink_domain_span);
    std::printf("\n");
  }
  if (!t.inferred.empty()) {
    std::printf("\ninferred:\n");
    for (const auto& s : t.inferred) std::printf("  - %s\n", s.c_str());
  }
  if (!t.warnings.empty()) {
    std::printf("\nwarnings:\n");
    for (const auto& s : t.warnings) std::printf("  - %s\n", s.c_str());
  }
}

int run_probe(const std::vector<std::string>& args) {
  probe::ProbeOptions o;
  bool json = false, have_gpus = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const char* name) -> const std::string* {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "paratune probe: %s needs a value\n", name);
        return nullptr;
      }
      return &args[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kHelp, stdout);
      return kOk;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--topology") {
      const auto* v = value("--topology");
      if (!v) return kBadInput;
      o.topology_file = *v;
    } else if (a == "--fsroot") {
      const auto* v = value("--fsroot");
      if (!v) return kBadInput;
      o.fsroot = *v;
    } else if (a == "--nccl-topo") {
      const auto* v = value("--nccl-topo");
      if (!v) return kBadInput;
      o.nccl_topo_file = *v;
    } else if (a == "--gpus") {
      const auto* v = value("--gpus");
      if (!v) return kBadInput;
      if (!parse_list(*v, o.allocated_gpus)) {
        std::fprintf(stderr, "paratune probe: --gpus '%s': expected GPU indexes like 0,1,2\n", v->c_str());
        return kBadInput;
      }
      have_gpus = true;
    } else {
      std::fprintf(stderr, "paratune probe: unknown option '%s' (see paratune probe --help)\n", a.c_str());
      return kBadInput;
    }
  }
  if (!o.topology_file.empty() && !o.fsroot.empty()) {
    std::fprintf(stderr, "paratune probe: give either --topology or --fsroot, not both\n");
    return kBadInput;
  }
  if (!have_gpus && o.topology_file.empty() && o.fsroot.empty()) {
    // The live node: CUDA_VISIBLE_DEVICES is the allocation when it lists indexes.
    if (const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES"); cvd && *cvd) {
      std::vector<int> list;
      if (parse_list(cvd, list)) o.allocated_gpus = list;
    }
  }
  probe::Topology t;
  try {
    t = probe::probe(o);
  } catch (const probe::ProbeError& e) {
    std::fprintf(stderr, "paratune probe: %s\n", e.what());
    return kBadInput;
  }
  if (json) std::printf("%s\n", probe::to_json(t).c_str());
  else print_human(t);
  return kOk;
}

Register reg{{"probe", "what this node looks like: GPUs, NICs, PCIe/NVLink paths, fingerprint", run_probe}};

}  // namespace
}  // namespace paratune::cli
