// `paratune probe [--topology FILE | --fsroot DIR] [--nccl-topo FILE] [--gpus LIST] [--json]`: what this node (or a file) looks like.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "command.h"
#include "options.h"
#include "paratune/probe/probe.h"

namespace paratune::cli {
namespace {

const char* kDescription =
    "Probe the GPUs, NICs and PCIe/NVLink paths of this node (hwloc, sysfs, ibverbs, NVML when present)\n"
    "and print a summary, or the Topology as JSON with --json.";
const char* kFooter = "exit status: 0 ok, 2 bad input (unreadable or corrupt file, bad option)";

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

struct ProbeArgs {
  probe::ProbeOptions o;
  std::string gpus;
  bool json = false;
};

int run_probe(ProbeArgs& a) {
  probe::ProbeOptions& o = a.o;
  const bool have_gpus = !a.gpus.empty();
  if (have_gpus) parse_list(a.gpus, o.allocated_gpus);  // checked by the option's validator
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
  if (a.json) std::printf("%s\n", probe::to_json(t).c_str());
  else print_human(t);
  return kOk;
}

Action setup(CLI::App& app, const std::vector<std::string>&) {
  auto a = std::make_shared<ProbeArgs>();
  describe(app, kDescription);
  app.footer(kFooter);
  auto* topology = app.add_option("--topology", a->o.topology_file,
                                  "read FILE instead of the live node: hwloc XML (lstopo file.xml), an NCCL topology\n"
                                  "file (NCCL_TOPO_FILE) or `paratune probe --json` output, detected by content;\n"
                                  "builtin:nvidia-dgx2 and builtin:lassen are compiled in (demo)")
                      ->type_name("FILE");
  app.add_option("--fsroot", a->o.fsroot, "read an HWLOC_FSROOT-style copy of /sys and /proc")
      ->type_name("DIR")
      ->excludes(topology);
  app.add_option("--nccl-topo", a->o.nccl_topo_file,
                 "lay a vendor NCCL topology file (NCCL_TOPO_FILE) over the probe: its GPU/NIC grouping\n"
                 "replaces the VM's virtual PCI locality for the devices it names")
      ->type_name("FILE");
  app.add_option("--gpus", a->gpus,
                 "GPU indexes of the allocation, e.g. 0,1 (default: CUDA_VISIBLE_DEVICES if set)")
      ->type_name("LIST")
      ->check(options::parsed_by([](const std::string& v) {
        std::vector<int> list;
        if (!parse_list(v, list)) throw std::invalid_argument("'" + v + "': expected GPU indexes like 0,1,2");
      }));
  app.add_flag("--json", a->json, "print JSON (the contract of the tuning log and of --topology)");
  return [a] { return run_probe(*a); };
}

Register reg{"probe", "what this node looks like: GPUs, NICs, PCIe/NVLink paths, fingerprint", setup};

}  // namespace
}  // namespace paratune::cli
