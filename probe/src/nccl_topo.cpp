// NCCL topology files (NCCL_TOPO_FILE, <system version="1">): the vendors' description of what the VM hides.
// A small, strict XML reader (elements, attributes, comments; no DTD/entities beyond the five predefined).
#include <algorithm>
#include <cctype>
#include <functional>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>

#include "internal.h"

namespace paratune::probe::detail {

namespace {

struct Node {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::vector<std::unique_ptr<Node>> children;
  Node* parent = nullptr;
  int line = 0;
  std::string attr(const char* k) const {
    auto it = attrs.find(k);
    return it == attrs.end() ? "" : it->second;
  }
};

class XmlReader {
 public:
  XmlReader(const std::string& text, const std::string& origin) : s_(text), origin_(origin) {}

  std::unique_ptr<Node> parse() {
    std::unique_ptr<Node> root;
    std::vector<Node*> stack;
    while (true) {
      skip_text(stack.empty());
      if (i_ >= s_.size()) break;
      // at '<'
      if (starts("<?")) {
        skip_past("?>");
      } else if (starts("<!--")) {
        skip_past("-->");
      } else if (starts("<!")) {
        fail("DOCTYPE/CDATA sections are not supported in an NCCL topology file");
      } else if (starts("</")) {
        i_ += 2;
        std::string name = read_name();
        skip_ws();
        expect('>');
        if (stack.empty() || stack.back()->name != name)
          fail("closing tag </" + name + "> does not match " + (stack.empty() ? "anything" : "<" + stack.back()->name + ">"));
        stack.pop_back();
        if (stack.empty()) {
          trailing();
          break;
        }
      } else {
        ++i_;
        auto node = std::make_unique<Node>();
        node->line = line_;
        node->name = read_name();
        bool self_closing = false;
        while (true) {
          skip_ws();
          if (i_ >= s_.size()) fail("unexpected end of file inside <" + node->name + ">");
          if (s_[i_] == '/') {
            ++i_;
            expect('>');
            self_closing = true;
            break;
          }
          if (s_[i_] == '>') {
            ++i_;
            break;
          }
          std::string k = read_name();
          skip_ws();
          expect('=');
          skip_ws();
          std::string v = read_quoted();
          if (node->attrs.count(k)) fail("attribute '" + k + "' given twice");
          if (node->attrs.size() >= 64) fail("too many attributes");
          node->attrs[k] = v;
        }
        if (++count_ > 100000) fail("too many elements");
        Node* raw = node.get();
        if (stack.empty()) {
          if (root) fail("more than one root element");
          root = std::move(node);
        } else {
          raw->parent = stack.back();
          stack.back()->children.push_back(std::move(node));
        }
        if (!self_closing) {
          if (stack.size() >= 64) fail("elements nested too deeply");
          stack.push_back(raw);
        } else if (stack.empty()) {
          trailing();
          break;
        }
      }
    }
    if (!stack.empty()) fail("unexpected end of file: <" + stack.back()->name + "> is not closed");
    if (!root) fail("no XML element");
    return root;
  }

 private:
  // Only whitespace, comments and processing instructions may follow the root element.
  void trailing() {
    while (true) {
      skip_text(true);
      if (i_ >= s_.size()) break;
      if (starts("<!--")) skip_past("-->");
      else if (starts("<?")) skip_past("?>");
      else fail("content after the end of the document");
    }
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw ProbeError(origin_ + ":" + std::to_string(line_) + ": " + what);
  }
  bool starts(const char* p) const { return s_.compare(i_, std::char_traits<char>::length(p), p) == 0; }
  void advance() {
    if (s_[i_] == '\n') ++line_;
    ++i_;
  }
  void skip_ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) advance();
  }
  void skip_text(bool outside) {
    while (i_ < s_.size() && s_[i_] != '<') {
      if (outside && !std::isspace(static_cast<unsigned char>(s_[i_])) && !(i_ < 3 && (s_[i_] & 0x80)))
        fail("text outside of the root element");
      advance();
    }
  }
  void skip_past(const char* end) {
    auto p = s_.find(end, i_);
    if (p == std::string::npos) fail(std::string("unterminated '") + s_.substr(i_, 4) + "'");
    while (i_ < p + std::char_traits<char>::length(end)) advance();
  }
  void expect(char c) {
    if (i_ >= s_.size() || s_[i_] != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string read_name() {
    size_t b = i_;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_' || s_[i_] == '-' ||
                              s_[i_] == ':' || s_[i_] == '.'))
      ++i_;
    if (i_ == b) fail("expected a name");
    if (i_ - b > 64) fail("name too long");
    return s_.substr(b, i_ - b);
  }
  std::string read_quoted() {
    if (i_ >= s_.size() || (s_[i_] != '"' && s_[i_] != '\'')) fail("expected a quoted attribute value");
    char q = s_[i_++];
    std::string out;
    while (true) {
      if (i_ >= s_.size()) fail("unterminated attribute value");
      char c = s_[i_];
      if (c == q) {
        ++i_;
        break;
      }
      if (c == '<') fail("'<' inside an attribute value");
      if (c == '&') {
        static const std::pair<const char*, char> ents[] = {
            {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
        bool ok = false;
        for (auto& [e, ch] : ents)
          if (starts(e)) {
            out += ch;
            i_ += std::char_traits<char>::length(e);
            ok = true;
            break;
          }
        if (!ok) fail("unknown entity in an attribute value");
        continue;
      }
      out += c;
      advance();
      if (out.size() > 4096) fail("attribute value too long");
    }
    return out;
  }

  const std::string& s_;
  const std::string& origin_;
  size_t i_ = 0;
  int line_ = 1;
  int count_ = 0;
};

std::optional<unsigned long> parse_hex(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  unsigned long v = std::strtoul(s.c_str(), &end, 16);
  if (!end || *end) return std::nullopt;
  return v;
}

bool valid_busid(const std::string& s) {
  // dddd:bb:dd.f, hex; "ffff:ff:01.0" is a fake switch id in cloud files.
  if (s.size() != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.') return false;
  for (size_t i = 0; i < s.size(); ++i)
    if (i != 4 && i != 7 && i != 10 && !std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

struct Dev {
  enum Kind { Gpu, Nic, Unknown } kind = Unknown;
  const Node* node = nullptr;      // the <pci> or <nic> element
  const Node* attach = nullptr;    // where it sits in the tree (for paths)
  std::string busid;
  uint16_t vendor = 0, device = 0, class_id = 0;
  int numa = -1;
  int gpu_dev = -1;
};

int numa_of(const Node* n) {
  for (; n; n = n->parent)
    if (n->name == "cpu") {
      auto v = n->attr("numaid");
      char* end = nullptr;
      long x = std::strtol(v.c_str(), &end, 10);
      if (!v.empty() && end && !*end && x >= 0 && x < 4096) return static_cast<int>(x);
      return -1;
    }
  return -1;
}

// NCCL classes on the file's own tree: pci elements with children are switches.
std::string classify(const Node* a, const Node* b) {
  if (a == b) return "PIX";
  std::vector<const Node*> chain;
  for (const Node* o = a; o; o = o->parent) chain.push_back(o);
  const Node* lca = nullptr;
  int sb = 0;
  for (const Node* o = b; o; o = o->parent) {
    if (std::find(chain.begin(), chain.end(), o) != chain.end()) {
      lca = o;
      break;
    }
    if (o != b && o->name == "pci") ++sb;
  }
  if (!lca) return "SYS";
  int sa = 0;
  for (const Node* o = a->parent; o && o != lca; o = o->parent)
    if (o->name == "pci") ++sa;
  if (lca->name == "pci") return (sa == 0 && sb == 0) ? "PIX" : "PXB";  // lca is itself the switch
  if (lca->name == "cpu") return "PHB";
  return "SYS";
}

// --- the steps of parse_nccl_topo ------------------------------------------------------------------------

// NCCL writes version 1; RCCL (AMD) writes version 2 with the same elements plus <xgmi>.
std::unique_ptr<Node> parse_document(const std::string& text, const std::string& origin) {
  if (text.size() > (16u << 20)) throw ProbeError(origin + ": too large for an NCCL topology file");
  XmlReader reader(text, origin);
  auto root = reader.parse();
  if (root->name != "system")
    throw ProbeError(origin + ":" + std::to_string(root->line) + ": root element is <" + root->name +
                     ">, expected <system> (NCCL topology)");
  const std::string version = root->attr("version");
  if (!version.empty() && version != "1" && version != "2")
    throw ProbeError(origin + ": NCCL topology version " + version + " is not supported (expected 1, or 2 from RCCL)");
  return root;
}

// NCCL fuses the topologies of several hosts into one file for multi-node NVLink (one host_hash per host): that is
// not one node, and taking it for one would plan 8 GPUs of two machines as if they shared a PCIe tree.
void refuse_several_hosts(const Node& root, const std::string& origin) {
  std::set<std::string> hosts;
  for (const auto& c : root.children)
    if (c->name == "cpu" && !c->attr("host_hash").empty()) hosts.insert(c->attr("host_hash"));
  if (hosts.size() <= 1) return;
  std::string list;
  for (const auto& h : hosts) list += (list.empty() ? "" : ", ") + h;
  throw ProbeError(origin + ": describes " + std::to_string(hosts.size()) + " hosts (host_hash " + list +
                   "), as NCCL writes for a multi-node NVLink job; a topology file must describe one node: keep "
                   "the <cpu> elements of one host_hash");
}

std::optional<uint16_t> hex16(const Node* n, const char* k, const std::string& origin) {
  const auto s = n->attr(k);
  if (s.empty()) return std::nullopt;
  auto v = parse_hex(s);
  if (!v || *v > 0xffff)
    throw ProbeError(origin + ":" + std::to_string(n->line) + ": <pci> " + k + " '" + s + "' is not a 16-bit hex id");
  return static_cast<uint16_t>(*v);
}

// One <pci> element: a switch (has <pci> children, or a bridge class), or a device classified by its children.
void read_pci(const Node* n, const std::string& origin, Topology& t, std::set<std::string>& busids,
              std::vector<Dev>& devs, std::vector<const Node*>& switches) {
  Dev d;
  d.node = d.attach = n;
  d.busid = lower(n->attr("busid"));
  if (!valid_busid(d.busid))
    throw ProbeError(origin + ":" + std::to_string(n->line) + ": <pci> busid '" + n->attr("busid") +
                     "' is not a PCI bus id (dddd:bb:dd.f)");
  if (!busids.insert(d.busid).second) t.warnings.push_back("duplicate PCI bus id " + d.busid + " in the file");
  if (const auto cls = n->attr("class"); !cls.empty()) {
    auto v = parse_hex(cls);
    if (!v || *v > 0xffffff) throw ProbeError(origin + ":" + std::to_string(n->line) + ": <pci> class '" + cls + "' is not hex");
    d.class_id = static_cast<uint16_t>(*v > 0xffff ? *v >> 8 : *v);
  }
  d.vendor = hex16(n, "vendor", origin).value_or(0);
  d.device = hex16(n, "device", origin).value_or(0);
  bool has_pci_child = false, has_gpu = false, has_nic = false;
  for (const auto& c : n->children) {
    has_pci_child |= c->name == "pci";
    has_nic |= c->name == "nic";
    if (c->name != "gpu") continue;
    has_gpu = true;
    const auto dv = c->attr("dev");
    char* end = nullptr;
    const long x = std::strtol(dv.c_str(), &end, 10);
    if (!dv.empty() && end && !*end && x >= 0 && x < 1024) d.gpu_dev = static_cast<int>(x);
  }
  if (has_pci_child || (d.class_id >> 8) == 0x06) {
    switches.push_back(n);
    return;
  }
  if (has_gpu || (d.class_id >> 8) == 0x03 || (d.class_id >> 8) == 0x12) d.kind = Dev::Gpu;
  else if (has_nic || (d.class_id >> 8) == 0x02) d.kind = Dev::Nic;
  d.numa = numa_of(n);
  devs.push_back(d);
}

struct Walk {
  std::vector<Dev> devs;
  std::vector<const Node*> switches;
};

Walk walk_tree(const Node* root, const std::string& origin, Topology& t) {
  Walk w;
  std::set<std::string> busids;
  static const std::set<std::string> known = {"cpu", "system", "gpu", "nic", "net", "nvlink", "xgmi", "c2c", "pcilink"};
  std::vector<const Node*> todo{root};
  while (!todo.empty()) {
    const Node* n = todo.back();
    todo.pop_back();
    for (auto it = n->children.rbegin(); it != n->children.rend(); ++it) todo.push_back(it->get());
    if (n->name == "pci") {
      read_pci(n, origin, t, busids, w.devs, w.switches);
    } else if (n->name == "nic" && n->parent && n->parent->name != "pci") {
      Dev d;
      d.kind = Dev::Nic;
      d.node = d.attach = n;
      d.numa = numa_of(n);
      w.devs.push_back(d);
    } else if (!known.count(n->name)) {
      t.warnings.push_back("unknown element <" + n->name + "> at line " + std::to_string(n->line) + " ignored");
    }
  }
  return w;
}

// p5-style files: GPUs are not listed, the leaves under each switch are the NICs; one GPU per such switch.
std::vector<const Node*> switches_for_missing_gpus(Walk& w, Topology& t) {
  std::vector<const Node*> out;
  if (std::any_of(w.devs.begin(), w.devs.end(), [](const Dev& d) { return d.kind == Dev::Gpu; })) return out;
  std::set<const Node*> sw_with_leaves;
  for (auto& d : w.devs)
    if (d.kind == Dev::Unknown && d.node->parent && d.node->parent->name == "pci") {
      d.kind = Dev::Nic;
      sw_with_leaves.insert(d.node->parent);
    }
  for (const Node* s : w.switches)
    if (sw_with_leaves.count(s)) out.push_back(s);
  if (!out.empty()) {
    t.inferred.push_back("nics: unclassified devices behind the PCIe switches taken as NICs");
    t.inferred.push_back("gpus: one per PCIe switch with NICs (the file does not list GPUs)");
  }
  return out;
}

const Node* gpu_element(const Dev& d) {
  if (!d.node) return nullptr;
  for (const auto& c : d.node->children)
    if (c->name == "gpu") return c.get();
  return nullptr;
}

// GPUs in these files are NVIDIA's (NCCL) or AMD's (RCCL: a gcn attribute, <xgmi> links). Most cloud files leave
// out the PCI ids: the vendor then follows from who wrote the file, the model stays unknown unless a device id says.
uint16_t gpu_vendor(const Dev& d, Topology& t) {
  if (d.vendor) return d.vendor;
  const Node* g = gpu_element(d);
  bool amd = g && !g->attr("gcn").empty();
  if (g)
    for (const auto& l : g->children) amd |= l->name == "xgmi";
  const uint16_t v = amd ? 0x1002 : 0x10de;
  const std::string note = std::string("gpu vendor: not in the file; ") +
                           (amd ? "AMD (RCCL attributes)" : "NVIDIA (an NCCL topology file)");
  if (std::find(t.inferred.begin(), t.inferred.end(), note) == t.inferred.end()) t.inferred.push_back(note);
  return v;
}

void add_gpus(std::vector<Dev>& gpus, std::vector<std::unique_ptr<Node>>& synthetic, Topology& t) {
  const bool all_dev = !gpus.empty() && std::all_of(gpus.begin(), gpus.end(), [](const Dev& d) { return d.gpu_dev >= 0; });
  std::stable_sort(gpus.begin(), gpus.end(), [&](const Dev& a, const Dev& b) {
    return all_dev ? a.gpu_dev < b.gpu_dev : a.busid < b.busid;
  });
  for (size_t i = 0; i < gpus.size(); ++i) {
    auto& d = gpus[i];
    if (!d.node) {  // synthesized: a GPU directly under a switch with NICs as siblings is PIX to them
      auto n = std::make_unique<Node>();
      n->name = "gpu-placeholder";
      n->parent = const_cast<Node*>(d.attach);
      d.attach = n.get();
      synthetic.push_back(std::move(n));
    }
    Gpu g;
    g.index = static_cast<int>(i);
    g.pci_bus_id = d.busid;
    g.vendor_id = gpu_vendor(d, t);
    g.device_id = d.device;
    g.model = gpu_model_key(g.vendor_id, g.device_id);
    if (const auto* m = find_gpu_model(g.vendor_id, g.device_id); m && m->memory_gib > 0) g.memory_gib = m->memory_gib;
    g.numa = d.numa;
    t.gpus.push_back(std::move(g));
  }
}

// One NIC per <net>: a dual-port adapter (two <net> under one <nic>) is two NICs for bandwidth and nearness.
void add_nics(const std::vector<Dev>& devs, std::vector<Dev>& nic_devs, Topology& t) {
  int k = 0;
  for (const auto& d : devs) {
    const Node* nic_el = d.node->name == "nic" ? d.node : nullptr;
    if (!nic_el)
      for (const auto& c : d.node->children)
        if (c->name == "nic") nic_el = c.get();
    std::vector<const Node*> nets;
    if (nic_el)
      for (const auto& c : nic_el->children)
        if (c->name == "net") nets.push_back(c.get());
    if (nets.empty()) nets.push_back(nullptr);
    for (const Node* net : nets) {
      Nic n;
      n.pci_bus_id = d.busid;
      n.vendor_id = d.vendor;
      n.numa = d.numa;
      // Vendor files for VMs list the HCAs by PCI address only: the name is then a placeholder (never a device name).
      n.name_reported = net && !net->attr("name").empty();
      n.name = n.name_reported ? net->attr("name") : std::string(d.vendor == 0x1d0f ? "efa" : "nic") + std::to_string(k);
      if (net) {
        char* end = nullptr;
        const auto sp = net->attr("speed");
        const double mbps = std::strtod(sp.c_str(), &end);
        // NCCL writes Mb/s; RCCL's Slingshot (cxi) entries are in kb/s (200000000 for 200 Gb/s).
        if (!sp.empty() && end && !*end && mbps > 0 && mbps < 1e8) n.rate_gbps = mbps / 1000.0;
        else if (!sp.empty() && end && !*end && mbps >= 1e8 && mbps < 1e11) n.rate_gbps = mbps / 1e6;
        // NCCL writes the ibverbs port number (1-based: ncclIbGetProperties, props->port = portNum + realPort) for
        // IB/RoCE devices and 0 for sockets; NCCL_IB_HCA's ":port" is that same ibverbs number.
        const auto port = net->attr("port");
        const long p = std::strtol(port.c_str(), &end, 10);
        if (!port.empty() && end && !*end && p >= 1 && p < 256) n.port = static_cast<int>(p);
        if (n.name.rfind("eth", 0) == 0 || n.name.rfind("en", 0) == 0) n.netdev = n.name;
      }
      if ((d.class_id >> 8) == 0x02) {
        if (d.vendor == 0x1d0f) n.link_layer = std::nullopt;  // EFA (SRD): neither IB nor RoCE
        else if (d.class_id == 0x0207) n.link_layer = "infiniband";
        else n.link_layer = "ethernet";
      }
      if (d.vendor == 0x1d0f) t.cloud = "aws";
      t.nics.push_back(std::move(n));
      nic_devs.push_back(d);
      ++k;
    }
  }
}

// NVLink (<nvlink>) and xGMI (<xgmi>) links: NVSwitch targets join one domain, GPU targets join their pair.
void add_gpu_links(const std::vector<Dev>& gpus, Topology& t) {
  const size_t ng = gpus.size();
  std::vector<int> comp(ng);
  for (size_t i = 0; i < ng; ++i) comp[i] = static_cast<int>(i);
  std::function<int(int)> find = [&](int x) { return comp[x] == x ? x : comp[x] = find(comp[x]); };
  std::vector<int> on_switch;
  bool any = false, xgmi = false;
  for (size_t i = 0; i < ng; ++i) {
    const Node* g = gpu_element(gpus[i]);
    if (!g) continue;
    for (const auto& l : g->children) {
      if (l->name != "nvlink" && l->name != "xgmi") continue;
      const std::string target = lower(l->attr("target"));
      if (target == gpus[i].busid) continue;  // self links (seen in Azure NCv4): meaningless
      xgmi |= l->name == "xgmi";
      const auto tcls = parse_hex(l->attr("tclass")).value_or(0);
      if ((tcls >> 8) == 0x0680 || (tcls >> 16) == 0x06) {
        on_switch.push_back(static_cast<int>(i));
        any = true;
        continue;
      }
      for (size_t j = 0; j < ng; ++j)
        if (j != i && gpus[j].busid == target) {
          comp[find(static_cast<int>(i))] = find(static_cast<int>(j));
          any = true;
        }
    }
  }
  if (!any) return;
  for (size_t s = 1; s < on_switch.size(); ++s) comp[find(on_switch[s])] = find(on_switch[0]);
  std::map<int, std::vector<int>> groups;
  for (size_t i = 0; i < ng; ++i) groups[find(static_cast<int>(i))].push_back(static_cast<int>(i));
  for (auto& [r, v] : groups) t.nvlink_domains.push_back(v);
  std::sort(t.nvlink_domains.begin(), t.nvlink_domains.end());
  t.inferred.push_back(xgmi ? "nvlink_domains: from the file's <xgmi> elements (AMD Infinity Fabric)"
                            : "nvlink_domains: from the file's <nvlink> elements");
  if (!t.gpus.empty())
    if (const auto* m = find_gpu_model(t.gpus[0].vendor_id, t.gpus[0].device_id); m && m->nvlink_gbps > 0) {
      t.nvlink_gbps_per_gpu = m->nvlink_gbps;
      t.inferred.push_back("nvlink_gbps_per_gpu: from GPU model");
    }
}

// Hyper-V's virtual PCI bus (Linux pci-hyperv) gives every passed-through device a PCI domain of its own at bus 00,
// device 00, function 0 ("0001:00:00.0" GPU, "0101:00:00.0" HCA in Azure's ND/NC files). Bare metal and the other
// clouds' VMs show the host's bus numbers: 0000:10:1c.0 (AWS p4d), 0000:4f:00.0 (AWS p5), 0000:14:00.0 (OCI).
bool hyperv_virtual_pci(const std::vector<Dev>& devs) {
  std::set<std::string> domains;
  int seen = 0;
  for (const auto& d : devs) {
    if ((d.kind != Dev::Gpu && d.kind != Dev::Nic) || d.busid.empty()) continue;
    if (d.busid.compare(4, 8, ":00:00.0") != 0 || !domains.insert(d.busid.substr(0, 4)).second) return false;
    ++seen;
  }
  return seen > 0 && !(domains.size() == 1 && domains.count("0000"));
}

}  // namespace

Topology parse_nccl_topo(const std::string& text, const std::string& origin) {
  const auto root = parse_document(text, origin);
  refuse_several_hosts(*root, origin);
  Topology t;
  t.source = "nccl-topo";
  Walk w = walk_tree(root.get(), origin, t);
  const auto synth_switches = switches_for_missing_gpus(w, t);
  const int unknown = static_cast<int>(std::count_if(w.devs.begin(), w.devs.end(), [](const Dev& d) { return d.kind == Dev::Unknown; }));
  if (unknown > 0) t.warnings.push_back(std::to_string(unknown) + " PCI devices without a class: neither GPU nor NIC known");
  std::vector<Dev> gpus, nic_sources, nics;
  for (const auto& d : w.devs) {
    if (d.kind == Dev::Gpu) gpus.push_back(d);
    if (d.kind == Dev::Nic) nic_sources.push_back(d);
  }
  for (const Node* s : synth_switches) {
    Dev d;
    d.kind = Dev::Gpu;
    d.attach = s;
    d.numa = numa_of(s);
    gpus.push_back(d);
  }
  std::vector<std::unique_ptr<Node>> synthetic;  // placeholders of synthesized GPUs; alive until the paths are made
  add_gpus(gpus, synthetic, t);
  add_nics(nic_sources, nics, t);
  add_gpu_links(gpus, t);
  if (!t.cloud && hyperv_virtual_pci(w.devs)) {
    t.cloud = "azure";
    t.inferred.push_back("cloud: azure (Hyper-V virtual PCI: every GPU and NIC alone in its own PCI domain at 00:00.0)");
  }
  std::set<int> numas;
  for (const auto& c : root->children)
    if (c->name == "cpu") numas.insert(numa_of(c.get()));
  t.numa_nodes = static_cast<int>(numas.size());
  t.gpu_pci_paths.assign(gpus.size(), std::vector<std::string>(gpus.size(), "X"));
  for (size_t i = 0; i < gpus.size(); ++i)
    for (size_t j = 0; j < gpus.size(); ++j)
      if (i != j) t.gpu_pci_paths[i][j] = classify(gpus[i].attach, gpus[j].attach);
  std::vector<std::vector<std::string>> nic_paths(gpus.size(), std::vector<std::string>(nics.size(), "SYS"));
  for (size_t i = 0; i < gpus.size(); ++i)
    for (size_t j = 0; j < nics.size(); ++j) nic_paths[i][j] = classify(gpus[i].attach, nics[j].attach);
  internal::finish_topology(t, nic_paths);
  return t;
}

}  // namespace paratune::probe::detail
