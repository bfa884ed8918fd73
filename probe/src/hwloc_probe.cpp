// hwloc: load (XML text, HWLOC_FSROOT directory or the live node) and turn the PCI tree into a Topology.
// Rules from docs (field notes §3): I/O filter KEEP_IMPORTANT before load, GPUs by PCI vendor/class, our own
// lowest-common-ancestor walk (hwloc_get_common_ancestor_obj crashes on I/O objects in 2.9).
#include <hwloc.h>
#include <hwloc/distances.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <tuple>
#include <map>
#include <mutex>
#include <set>
#include <system_error>

#include "internal.h"
#include "paratune/common/bounded_child.h"

namespace paratune::probe::internal {

namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

struct DistancesRelease {
  hwloc_topology_t topo;
  void operator()(hwloc_distances_s* d) const { hwloc_distances_release(topo, d); }
};
using DistancesPtr = std::unique_ptr<hwloc_distances_s, DistancesRelease>;

// Sets environment variables for the duration of a load and restores them (HWLOC_FSROOT has no API in
// hwloc 2.x). Serialised: the environment is process-global.
class ScopedEnv {
 public:
  ScopedEnv(std::vector<std::pair<std::string, std::string>> vars) : lock_(mutex()) {
    for (auto& [k, v] : vars) {
      const char* old = std::getenv(k.c_str());
      saved_.push_back({k, old ? std::optional<std::string>(old) : std::nullopt});
      ::setenv(k.c_str(), v.c_str(), 1);
    }
  }
  ~ScopedEnv() {
    for (auto& [k, v] : saved_) {
      if (v) ::setenv(k.c_str(), v->c_str(), 1);
      else ::unsetenv(k.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }

 private:
  std::lock_guard<std::mutex> lock_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

std::string info(hwloc_obj_t o, const char* name) {
  const char* v = hwloc_obj_get_info_by_name(o, name);
  return v ? v : "";
}

std::string busid_of(hwloc_obj_t pci) {
  const auto& a = pci->attr->pcidev;
  return format_busid(a.domain, a.bus, a.dev, a.func);
}

hwloc_obj_t pci_parent(hwloc_obj_t o) {
  for (; o; o = o->parent)
    if (o->type == HWLOC_OBJ_PCI_DEVICE) return o;
  return nullptr;
}

int numa_of(hwloc_topology_t t, hwloc_obj_t o) {
  hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t, o);
  if (!anc || !anc->nodeset) return -1;
  if (hwloc_bitmap_weight(anc->nodeset) != 1) return -1;
  return hwloc_bitmap_first(anc->nodeset);
}

// NCCL path class between two PCI devices by walking ->parent chains.
std::string classify(hwloc_obj_t a, hwloc_obj_t b) {
  if (!a || !b) return "SYS";
  if (a == b) return "PIX";
  if (a->type == HWLOC_OBJ_PCI_DEVICE && b->type == HWLOC_OBJ_PCI_DEVICE) {
    const auto &x = a->attr->pcidev, &y = b->attr->pcidev;
    if (x.domain == y.domain && x.bus == y.bus && x.dev == y.dev) return "PIX";  // multi-function device
  }
  std::vector<hwloc_obj_t> chain;
  for (hwloc_obj_t o = a; o; o = o->parent) chain.push_back(o);
  hwloc_obj_t lca = nullptr;
  int bridges_b = 0;
  for (hwloc_obj_t o = b; o; o = o->parent) {
    if (std::find(chain.begin(), chain.end(), o) != chain.end()) {
      lca = o;
      break;
    }
    if (o != b && o->type == HWLOC_OBJ_BRIDGE) ++bridges_b;
  }
  if (!lca) return "SYS";
  int bridges_a = 0;
  for (hwloc_obj_t o = a->parent; o && o != lca; o = o->parent)
    if (o->type == HWLOC_OBJ_BRIDGE) ++bridges_a;
  if (lca->type == HWLOC_OBJ_BRIDGE) {
    if (lca->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) return "PHB";
    return (bridges_a <= 1 && bridges_b <= 1) ? "PIX" : "PXB";
  }
  if (lca->type == HWLOC_OBJ_PCI_DEVICE) return "PIX";
  if (lca->nodeset && hwloc_bitmap_weight(lca->nodeset) == 1) return "PHB";  // NODE, folded into PHB
  return "SYS";
}

std::optional<std::string> ib_state_name(const std::string& code) {
  if (code == "1") return "down";
  if (code == "2") return "init";
  if (code == "3") return "armed";
  if (code == "4") return "active";
  if (code == "5") return "active_defer";
  return std::nullopt;
}

struct NicObj {
  Nic nic;
  hwloc_obj_t pci = nullptr;
};

// NVLinkBandwidth matrix (NVML component; in fixtures) -> domains + GB/s per GPU. Returns false if absent.
bool nvlink_from_distances(hwloc_topology_t topo, const std::vector<hwloc_obj_t>& gpu_objs, Topology& t) {
  unsigned nr = 1;
  hwloc_distances_s* raw = nullptr;
  if (hwloc_distances_get_by_name(topo, "NVLinkBandwidth", &nr, &raw, 0) != 0 || nr == 0 || !raw) return false;
  DistancesPtr dist(raw, DistancesRelease{topo});
  bool has_switch = false;
  for (unsigned i = 0; i < dist->nbobjs; ++i)
    if (dist->objs[i] && dist->objs[i]->type == HWLOC_OBJ_PCI_DEVICE && pci_parent(dist->objs[i]) &&
        std::find(gpu_objs.begin(), gpu_objs.end(), dist->objs[i]) == gpu_objs.end())
      has_switch = true;
  if (has_switch) {
    // Both may fail on matrices without NVSwitches; then the raw values are what we have.
    (void)hwloc_distances_transform(topo, dist.get(), HWLOC_DISTANCES_TRANSFORM_MERGE_SWITCH_PORTS, nullptr, 0);
    (void)hwloc_distances_transform(topo, dist.get(), HWLOC_DISTANCES_TRANSFORM_TRANSITIVE_CLOSURE, nullptr, 0);
  }
  const unsigned n = dist->nbobjs;
  std::vector<int> gpu_of(n, -1);
  for (unsigned i = 0; i < n; ++i) {
    hwloc_obj_t p = pci_parent(dist->objs[i]);
    for (size_t g = 0; g < gpu_objs.size(); ++g)
      if (p && p == gpu_objs[g]) gpu_of[i] = static_cast<int>(g);
  }
  const size_t ng = gpu_objs.size();
  std::vector<std::vector<double>> bw(ng, std::vector<double>(ng, 0));
  bool any = false;
  for (unsigned i = 0; i < n; ++i)
    for (unsigned j = 0; j < n; ++j) {
      if (i == j || gpu_of[i] < 0 || gpu_of[j] < 0 || gpu_of[i] == gpu_of[j]) continue;
      double v = static_cast<double>(dist->values[i * n + j]);
      bw[gpu_of[i]][gpu_of[j]] = v;
      if (v > 0) any = true;
    }
  if (!any) return false;
  // Connected components over links with bandwidth.
  std::vector<int> comp(ng, -1);
  int nc = 0;
  for (size_t s = 0; s < ng; ++s) {
    if (comp[s] >= 0) continue;
    std::vector<size_t> stack{s};
    comp[s] = nc;
    while (!stack.empty()) {
      size_t u = stack.back();
      stack.pop_back();
      for (size_t v = 0; v < ng; ++v)
        if (comp[v] < 0 && (bw[u][v] > 0 || bw[v][u] > 0)) {
          comp[v] = nc;
          stack.push_back(v);
        }
    }
    ++nc;
  }
  std::vector<std::vector<int>> domains(nc);
  for (size_t g = 0; g < ng; ++g) domains[comp[g]].push_back(t.gpus[g].index);
  for (auto& d : domains) std::sort(d.begin(), d.end());
  std::sort(domains.begin(), domains.end());
  // Per GPU: through a switch every pair shows the GPU's whole bandwidth; in a mesh it is the sum over peers.
  std::optional<double> per_gpu;
  for (size_t g = 0; g < ng; ++g) {
    double total = 0, best = 0;
    for (size_t h = 0; h < ng; ++h) {
      total += bw[g][h];
      best = std::max(best, bw[g][h]);
    }
    double v = (has_switch ? best : total) / 1000.0;  // MB/s -> GB/s
    if (v > 0) per_gpu = per_gpu ? std::min(*per_gpu, v) : v;
  }
  t.nvlink_domains = std::move(domains);
  t.nvlink_gbps_per_gpu = per_gpu;
  return true;
}

void merge_port_facts(Nic& into, const Nic& from) {
  if (from.state) into.state = from.state;
  if (from.phys_state) into.phys_state = from.phys_state;
  if (from.link_layer) into.link_layer = from.link_layer;
  if (from.rate_gbps) into.rate_gbps = from.rate_gbps;
  if (!from.netdev.empty()) into.netdev = from.netdev;
  if (from.gid_index) into.gid_index = from.gid_index;
  if (into.pci_bus_id.empty()) into.pci_bus_id = from.pci_bus_id;
}

// The options every load sets before hwloc_topology_load (the trial load in the child uses the same).
void configure(hwloc_topology_t topo) {
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
  // Not registered on Debian for most of them: -1 is expected and harmless.
  for (const char* c : {"opencl", "gl", "cuda", "nvml", "rsmi", "levelzero", "pci"})
    (void)hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, c);
}

constexpr int kXmlCheckSeconds = 20;

// hwloc 2.9.0's XML importer dereferences NULL on some malformed files (e.g. a NUMANode whose complete_nodeset
// attribute is misspelt: SIGSEGV in hwloc_bitmap_or; others in hwloc_bitmap_compare_first) — found by
// tests/fuzz/fuzz_hwloc_xml, reproduced with a plain C program against Debian's libhwloc. A topology= file is the
// administrator's, but one typo in it must not crash slurmd (which probes at start) or every job step: an XML
// that is not compiled in is loaded first in a forked child, bounded in time, and only loaded here if the child
// loaded it cleanly (same bytes, same library: the second load takes the same path). The child touches nothing
// but hwloc and leaves with _exit; a crash there is silent (default signal action, no core file).
void check_xml_in_child(const HwlocSource& src) {
  // run_bounded_child (bounded_child.h): a process group killed at the deadline, never a blocking waitpid, the
  // worker's status through a pipe (so a caller whose SIGCHLD is ignored still sees a crash), and in the worker
  // every signal unblocked and at its default action: the alarm() below works in slurmstepd's children, where
  // SIGALRM is blocked, and SIGSEGV & co. end the worker silently instead of reaching a handler of the daemon.
  common::BoundedChildLimits limits;
  limits.deadline = std::chrono::seconds(kXmlCheckSeconds);
  limits.max_reply = 0;
  limits.alarm_s = kXmlCheckSeconds + 5;  // never outlive the parent's wait by much, even if the parent is gone
  common::BoundedChildResult r;
  try {
    r = common::run_bounded_child(
        [&](int) {
          const struct rlimit no_core {0, 0};
          ::setrlimit(RLIMIT_CORE, &no_core);
          hwloc_topology_t topo = nullptr;
          if (hwloc_topology_init(&topo) != 0) ::_exit(2);
          configure(topo);
          if (hwloc_topology_set_xmlbuffer(topo, src.text_or_dir.c_str(),
                                           static_cast<int>(src.text_or_dir.size() + 1)) != 0)
            ::_exit(1);
          ::_exit(hwloc_topology_load(topo) == 0 ? 0 : 1);
        },
        limits);
  } catch (const std::system_error& e) {
    throw ProbeError(src.origin + ": cannot fork to check the XML: " + e.what());
  }
  if (r.timed_out)
    throw ProbeError(src.origin + ": hwloc did not finish loading this XML within " +
                     std::to_string(kXmlCheckSeconds) + " s; not a usable topology file");
  if (!r.status_known)
    throw ProbeError(src.origin + ": lost the XML check process" +
                     (r.fork_errno ? std::string(": ") + std::strerror(r.fork_errno) : std::string()));
  const int status = r.status;
  if (WIFSIGNALED(status))
    throw ProbeError(src.origin + ": hwloc " + std::to_string(HWLOC_API_VERSION >> 16) + ".x crashes on this XML (" +
                     ::strsignal(WTERMSIG(status)) + "); the file is corrupt");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw ProbeError(src.origin + ": hwloc could not load this XML (corrupt, or a format newer than hwloc " +
                     std::to_string(HWLOC_API_VERSION >> 16) + ".x reads)");
}

// --- the steps of load_hwloc ---------------------------------------------------------------------------

// hwloc's minimalistic XML parser (used when Debian's libhwloc-plugins, with the libxml2 backend, is absent)
// cannot read comments, and real files carry their licence as one (the NIXL B200 dump: an SPDX block). Comments
// in the prolog, before the root <topology> element, are removed with the white space after them (that parser
// also fails on the blank lines they would leave); everything from the root on is left as it is.
std::string without_prolog_comments(const std::string& text) {
  const size_t root = text.find("<topology");
  if (root == std::string::npos || text.find("<!--") >= root) return text;
  std::string out;
  size_t i = 0;
  while (i < root) {
    const size_t open = text.find("<!--", i);
    if (open == std::string::npos || open >= root) break;
    const size_t close = text.find("-->", open + 4);
    if (close == std::string::npos || close >= root) break;  // malformed: leave it for hwloc to refuse
    out.append(text, i, open - i);
    i = close + 3;
    // The minimalistic parser also wants the prolog's lines as hwloc writes them: no blank line left behind.
    while (i < root && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  }
  out.append(text, i, std::string::npos);
  return out;
}

// Init, configure, (for untrusted XML) check in a child, load. The returned holder owns the topology.
TopologyPtr load_topology(const HwlocSource& src, Topology& t) {
  if (src.kind == HwlocSource::XmlText && src.text_or_dir.size() > 512u << 20)
    throw ProbeError(src.origin + ": file too large for an hwloc XML");
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) throw ProbeError(src.origin + ": hwloc_topology_init failed");
  TopologyPtr holder(raw);
  hwloc_topology_t topo = holder.get();
  configure(topo);
  HwlocSource xml = src;
  if (src.kind == HwlocSource::XmlText) xml.text_or_dir = without_prolog_comments(src.text_or_dir);
  // After init: hwloc's components (dlopen'ed plugins) are loaded while a topology exists, so the child inherits
  // them instead of calling dlopen after fork.
  if (xml.kind == HwlocSource::XmlText && !xml.trusted) check_xml_in_child(xml);
  int rc = 0;
  if (xml.kind == HwlocSource::XmlText) {
    t.source = "hwloc-xml";
    if (hwloc_topology_set_xmlbuffer(topo, xml.text_or_dir.c_str(), static_cast<int>(xml.text_or_dir.size() + 1)) != 0)
      throw ProbeError(src.origin + ": hwloc cannot use this XML");
    rc = hwloc_topology_load(topo);
  } else if (src.kind == HwlocSource::Fsroot) {
    t.source = "hwloc-fsroot";
    ScopedEnv env({{"HWLOC_FSROOT", src.text_or_dir}, {"HWLOC_COMPONENTS", "linux,stop"}});
    rc = hwloc_topology_load(topo);
  } else {
    t.source = "hwloc-live";
    rc = hwloc_topology_load(topo);
  }
  if (rc != 0) {
    if (src.kind == HwlocSource::XmlText)
      throw ProbeError(src.origin + ": hwloc could not load this XML (corrupt, or a format newer than hwloc " +
                       std::to_string(HWLOC_API_VERSION >> 16) + ".x reads)");
    throw ProbeError(src.origin + ": hwloc_topology_load failed: " + std::strerror(errno));
  }
  return holder;
}

// Host name, NUMA node count and the cloud (DMI infos of the root object; hwloc reads /sys/class/dmi/id on Linux,
// XML keeps them; a live or fsroot probe falls back to the DMI files).
void read_machine(hwloc_topology_t topo, const Extras& extras, Topology& t) {
  hwloc_obj_t root = hwloc_get_root_obj(topo);
  t.hostname = info(root, "HostName");
  t.numa_nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  std::string sys_vendor = info(root, "DMISysVendor"), product = info(root, "DMIProductName"),
              board_vendor = info(root, "DMIBoardVendor"), asset = info(root, "DMIChassisAssetTag");
  if (!extras.dmi_root.empty()) {
    if (sys_vendor.empty()) sys_vendor = trim(read_line(extras.dmi_root + "/sys_vendor").value_or(""));
    if (product.empty()) product = trim(read_line(extras.dmi_root + "/product_name").value_or(""));
    if (board_vendor.empty()) board_vendor = trim(read_line(extras.dmi_root + "/board_vendor").value_or(""));
    if (asset.empty()) asset = trim(read_line(extras.dmi_root + "/chassis_asset_tag").value_or(""));
  }
  t.cloud = detail::detect_cloud(sys_vendor, product, board_vendor, asset);
  if (t.cloud)
    t.warnings.push_back("cloud VM (" + *t.cloud + ", " + product +
                         "): PCI locality of the virtual machine may hide the real GPU/NIC switches; prefer the "
                         "vendor's NCCL topology file");
}

// /dev/nvidiaN minor of an NVIDIA GPU from /proc/driver/nvidia (live nodes); -1 when unknown.
int device_minor(const Extras& extras, const Gpu& g) {
  if (extras.proc_root.empty() || g.vendor_id != 0x10de) return -1;
  const auto text = read_file(extras.proc_root + "/driver/nvidia/gpus/" + g.pci_bus_id + "/information", 1u << 16);
  if (!text) return -1;
  const auto p = text->find("Device Minor:");
  if (p == std::string::npos) return -1;
  const int minor = std::atoi(text->c_str() + p + 13);
  return minor >= 0 && minor < 4096 ? minor : -1;
}

// GPUs: PCI devices by vendor/class, ordered by bus id; NVSwitch devices counted; duplicate bus ids warned.
std::vector<hwloc_obj_t> collect_gpus(hwloc_topology_t topo, const Extras& extras, Topology& t) {
  std::vector<hwloc_obj_t> gpu_objs;
  int nvswitches = 0;
  std::set<std::string> seen_busids;
  for (hwloc_obj_t o = hwloc_get_next_pcidev(topo, nullptr); o; o = hwloc_get_next_pcidev(topo, o)) {
    const auto& a = o->attr->pcidev;
    if (detail::is_gpu_class(a.vendor_id, a.class_id)) gpu_objs.push_back(o);
    else if ((a.vendor_id == 0x10de && a.class_id == 0x0680) || (o->subtype && std::strcmp(o->subtype, "NVSwitch") == 0))
      ++nvswitches;
    if (!seen_busids.insert(busid_of(o)).second) t.warnings.push_back("duplicate PCI bus id " + busid_of(o) + " in the topology");
  }
  std::stable_sort(gpu_objs.begin(), gpu_objs.end(), [](hwloc_obj_t x, hwloc_obj_t y) {
    const auto &a = x->attr->pcidev, &b = y->attr->pcidev;
    return std::tie(a.domain, a.bus, a.dev, a.func) < std::tie(b.domain, b.bus, b.dev, b.func);
  });
  for (size_t i = 0; i < gpu_objs.size(); ++i) {
    const auto& a = gpu_objs[i]->attr->pcidev;
    Gpu g;
    g.index = static_cast<int>(i);
    g.pci_bus_id = busid_of(gpu_objs[i]);
    g.vendor_id = a.vendor_id;
    g.device_id = a.device_id;
    g.model = detail::gpu_model_key(a.vendor_id, a.device_id);
    if (const auto* m = detail::find_gpu_model(a.vendor_id, a.device_id); m && m->memory_gib > 0) g.memory_gib = m->memory_gib;
    g.numa = numa_of(topo, gpu_objs[i]);
    g.device_minor = device_minor(extras, g);
    // NVML (live only): memory where the table does not know the PCI id.
    if (extras.nvml && extras.nvml->available)
      for (const auto& n : extras.nvml->gpus)
        if (n.pci_bus_id == g.pci_bus_id && !g.memory_gib && n.memory_gib) g.memory_gib = n.memory_gib;
    t.gpus.push_back(std::move(g));
  }
  if (nvswitches > 0) t.inferred.push_back("nvswitch: " + std::to_string(nvswitches) + " NVSwitch PCI devices seen");
  return gpu_objs;
}

// Port states from an OpenFabrics OS device's "Port<N>State" infos; port 1 of unknown state when there are none.
std::map<int, std::string> port_states(hwloc_obj_t o) {
  std::map<int, std::string> states;
  for (unsigned k = 0; k < o->infos_count; ++k) {
    const char* nm = o->infos[k].name;
    if (!nm) continue;
    const std::string key = nm;
    if (key.size() < 10 || key.rfind("Port", 0) != 0 || key.compare(key.size() - 5, 5, "State") != 0) continue;
    const std::string num = key.substr(4, key.size() - 9);
    if (num.empty() || num.size() > 3 || num.find_first_not_of("0123456789") != std::string::npos) continue;
    const int port = std::atoi(num.c_str());
    if (port > 0 && port < 256) states[port] = o->infos[k].value ? o->infos[k].value : "";
  }
  if (states.empty()) states[1] = "";
  return states;
}

// The network interfaces beside an OS device under the same PCI device.
std::vector<std::string> sibling_netdevs(hwloc_obj_t o) {
  std::vector<std::string> netdevs;
  if (o->parent)
    for (hwloc_obj_t c = o->parent->io_first_child; c; c = c->next_sibling)
      if (c->type == HWLOC_OBJ_OS_DEVICE && c->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && c->name)
        netdevs.push_back(c->name);
  return netdevs;
}

// OpenFabrics OS devices (InfiniBand, RoCE, EFA): one entry per port.
void add_openfabrics_nics(hwloc_topology_t topo, hwloc_obj_t o, std::vector<NicObj>& nics) {
  hwloc_obj_t pci = pci_parent(o);
  const auto netdevs = sibling_netdevs(o);
  const auto states = port_states(o);
  size_t pi = 0;
  for (const auto& [port, st] : states) {
    NicObj n;
    n.pci = pci;
    n.nic.name = o->name;
    n.nic.port = port;
    n.nic.state = ib_state_name(st);
    if (pci) {
      n.nic.pci_bus_id = busid_of(pci);
      n.nic.vendor_id = pci->attr->pcidev.vendor_id;
    }
    n.nic.numa = numa_of(topo, o);
    if (netdevs.size() == states.size()) {
      n.nic.netdev = netdevs[pi];
    } else if (!netdevs.empty()) {
      n.nic.netdev = netdevs.front();
      for (const auto& d : netdevs)
        if (d.rfind("ib", 0) == 0 || d.rfind("hsi", 0) == 0) {
          n.nic.netdev = d;
          break;
        }
    }
    if (n.nic.vendor_id == 0x1d0f) n.nic.link_layer = std::nullopt;  // EFA: neither IB nor RoCE
    nics.push_back(std::move(n));
    ++pi;
  }
}

// HPE Slingshot (Cassini, PCI vendor 0x17db) has no OpenFabrics device: Linux shows network interfaces hsiN, and
// NCCL/RCCL reach the NIC through libfabric's cxi provider, whose devices are cxiN with hsiN as their interface.
constexpr uint16_t kHpeCrayVendor = 0x17db;
constexpr double kCassiniGbps = 200;  // Slingshot-11 / Cassini-1 (17db:0501): 200 Gb/s per NIC (HPE data sheet)

void add_slingshot_nic(hwloc_topology_t topo, hwloc_obj_t o, std::vector<NicObj>& nics, Topology& t) {
  hwloc_obj_t pci = pci_parent(o);
  if (!pci || pci->attr->pcidev.vendor_id != kHpeCrayVendor) return;
  const std::string netdev = o->name;
  NicObj n;
  n.pci = pci;
  n.nic.name = netdev.rfind("hsi", 0) == 0 ? "cxi" + netdev.substr(3) : netdev;
  n.nic.name_reported = n.nic.name == netdev;  // "cxiN" is inferred from "hsiN", not a name the node gave
  n.nic.netdev = netdev;
  n.nic.pci_bus_id = busid_of(pci);
  n.nic.vendor_id = kHpeCrayVendor;
  n.nic.numa = numa_of(topo, o);
  n.nic.link_layer = "ethernet";  // Slingshot is Ethernet-based; fabric_of() knows cxi
  if (pci->attr->pcidev.device_id == 0x0501) {
    n.nic.rate_gbps = kCassiniGbps;
    const std::string note = "nic rate: Slingshot Cassini (17db:0501) taken as 200 Gb/s";
    if (std::find(t.inferred.begin(), t.inferred.end(), note) == t.inferred.end()) t.inferred.push_back(note);
  }
  nics.push_back(std::move(n));
}

// NICs from hwloc's OS devices, then the live facts (sysfs, ibverbs) laid over them.
std::vector<NicObj> collect_nics(hwloc_topology_t topo, Topology& t) {
  std::vector<NicObj> nics;
  for (hwloc_obj_t o = hwloc_get_next_osdev(topo, nullptr); o; o = hwloc_get_next_osdev(topo, o)) {
    if (!o->name) continue;
    if (o->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) add_openfabrics_nics(topo, o, nics);
    else if (o->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK) add_slingshot_nic(topo, o, nics, t);
  }
  return nics;
}

// Live/fsroot: sysfs (rate, state, link layer, netdev, GIDs) and ibverbs override hwloc's partial view.
void merge_live_nics(hwloc_topology_t topo, const std::vector<Nic>& list, std::vector<NicObj>& nics) {
  for (const auto& s : list) {
    bool found = false;
    for (auto& n : nics)
      if (n.nic.name == s.name && n.nic.port == s.port) {
        merge_port_facts(n.nic, s);
        found = true;
      }
    if (found) continue;
    NicObj n;
    n.nic = s;
    for (hwloc_obj_t o = hwloc_get_next_pcidev(topo, nullptr); o && !s.pci_bus_id.empty(); o = hwloc_get_next_pcidev(topo, o))
      if (busid_of(o) == s.pci_bus_id) {
        n.pci = o;
        n.nic.vendor_id = o->attr->pcidev.vendor_id;
        n.nic.numa = numa_of(topo, o);
      }
    nics.push_back(std::move(n));
  }
}

// NVML (live only): GPUs with active NVLinks whose peers are GPUs of this node or NVSwitches. False if none.
bool nvlink_from_nvml(const detail::NvmlResult& nvml, Topology& t) {
  const size_t ng = t.gpus.size();
  std::map<std::string, int> idx;
  for (const auto& g : t.gpus) idx[g.pci_bus_id] = g.index;
  std::vector<int> comp(ng);
  for (size_t i = 0; i < ng; ++i) comp[i] = static_cast<int>(i);
  std::function<int(int)> find = [&](int x) { return comp[x] == x ? x : comp[x] = find(comp[x]); };
  std::vector<int> switch_members;
  bool any = false;
  for (const auto& n : nvml.gpus) {
    auto it = idx.find(n.pci_bus_id);
    if (it == idx.end() || n.nvlinks_active == 0) continue;
    any = true;
    for (const auto& peer : n.nvlink_peers) {
      auto pj = idx.find(peer);
      if (pj != idx.end()) comp[find(it->second)] = find(pj->second);
      else switch_members.push_back(it->second);  // peer is an NVSwitch
    }
  }
  if (!any) return false;
  for (size_t k = 1; k < switch_members.size(); ++k) comp[find(switch_members[k])] = find(switch_members[0]);
  std::map<int, std::vector<int>> groups;
  for (size_t i = 0; i < ng; ++i) groups[find(static_cast<int>(i))].push_back(static_cast<int>(i));
  for (auto& [k, v] : groups) t.nvlink_domains.push_back(v);
  std::sort(t.nvlink_domains.begin(), t.nvlink_domains.end());
  t.inferred.push_back("nvlink_domains: from NVML link state");
  if (!t.gpus.empty())
    if (const auto* m = detail::find_gpu_model(t.gpus[0].vendor_id, t.gpus[0].device_id); m && m->nvlink_gbps > 0) {
      t.nvlink_gbps_per_gpu = m->nvlink_gbps;
      t.inferred.push_back("nvlink_gbps_per_gpu: from GPU model");
    }
  return true;
}

}  // namespace

Topology load_hwloc(const HwlocSource& src, const Extras& extras) {
  Topology t;
  const TopologyPtr holder = load_topology(src, t);
  hwloc_topology_t topo = holder.get();
  read_machine(topo, extras, t);
  const auto gpu_objs = collect_gpus(topo, extras, t);
  auto nics = collect_nics(topo, t);
  if (extras.verbs && extras.verbs->available) merge_live_nics(topo, extras.verbs->nics, nics);
  if (extras.sysfs_nics) merge_live_nics(topo, *extras.sysfs_nics, nics);  // sysfs wins for rates (RoCE: netdev speed)
  std::stable_sort(nics.begin(), nics.end(), [](const NicObj& a, const NicObj& b) {
    return std::tie(a.nic.name, a.nic.port) < std::tie(b.nic.name, b.nic.port);
  });
  // Pairwise PCIe classes.
  const size_t ng = gpu_objs.size();
  t.gpu_pci_paths.assign(ng, std::vector<std::string>(ng, "X"));
  for (size_t i = 0; i < ng; ++i)
    for (size_t j = 0; j < ng; ++j)
      if (i != j) t.gpu_pci_paths[i][j] = classify(gpu_objs[i], gpu_objs[j]);
  std::vector<std::vector<std::string>> nic_paths(ng, std::vector<std::string>(nics.size(), "SYS"));
  for (size_t i = 0; i < ng; ++i)
    for (size_t k = 0; k < nics.size(); ++k) nic_paths[i][k] = nics[k].pci ? classify(gpu_objs[i], nics[k].pci) : "SYS";
  for (auto& n : nics) t.nics.push_back(std::move(n.nic));
  // NVLink: measured (hwloc NVLinkBandwidth), else NVML link counts, else from the model (in finish_topology).
  if (nvlink_from_distances(topo, gpu_objs, t))
    t.inferred.push_back("nvlink_domains: measured (hwloc NVLinkBandwidth matrix)");
  else if (extras.nvml && extras.nvml->available)
    nvlink_from_nvml(*extras.nvml, t);
  finish_topology(t, nic_paths);
  return t;
}

}  // namespace paratune::probe::internal
