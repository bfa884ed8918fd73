// Topology <-> JSON. The key names are the public contract (`paratune probe --json`, the tuning log).
#include <cstdio>
#include <string>
#include <nlohmann/json.hpp>

#include "paratune/probe/probe.h"

namespace paratune::probe {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

std::string hex4(uint16_t v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%04x", v);
  return buf;
}

template <class T>
ordered_json opt(const std::optional<T>& v) {
  return v ? ordered_json(*v) : ordered_json(nullptr);
}

struct Reader {
  const std::string& origin;

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw ProbeError(origin + ": key '" + key + "': " + what);
  }
  const json& get(const json& o, const std::string& parent, const char* key) const {
    auto it = o.find(key);
    if (it == o.end()) fail(parent + key, "missing");
    return *it;
  }
  std::string str(const json& o, const std::string& parent, const char* key) const {
    const auto& v = get(o, parent, key);
    if (!v.is_string()) fail(parent + key, "expected a string");
    return v.get<std::string>();
  }
  std::string str_or(const json& o, const std::string& parent, const char* key, const std::string& dflt) const {
    if (!o.contains(key)) return dflt;
    return str(o, parent, key);
  }
  std::optional<std::string> opt_str(const json& o, const std::string& parent, const char* key) const {
    if (!o.contains(key) || o.at(key).is_null()) return std::nullopt;
    return str(o, parent, key);
  }
  int integer(const json& o, const std::string& parent, const char* key) const {
    const auto& v = get(o, parent, key);
    if (!v.is_number_integer()) fail(parent + key, "expected an integer");
    auto x = v.get<long long>();
    if (x < -1000000 || x > 1000000) fail(parent + key, "out of range");
    return static_cast<int>(x);
  }
  int int_or(const json& o, const std::string& parent, const char* key, int dflt) const {
    if (!o.contains(key)) return dflt;
    return integer(o, parent, key);
  }
  std::optional<int> opt_int(const json& o, const std::string& parent, const char* key) const {
    if (!o.contains(key) || o.at(key).is_null()) return std::nullopt;
    return integer(o, parent, key);
  }
  std::optional<double> opt_num(const json& o, const std::string& parent, const char* key) const {
    if (!o.contains(key) || o.at(key).is_null()) return std::nullopt;
    const auto& v = o.at(key);
    if (!v.is_number()) fail(parent + key, "expected a number or null");
    return v.get<double>();
  }
  bool boolean(const json& o, const std::string& parent, const char* key) const {
    const auto& v = get(o, parent, key);
    if (!v.is_boolean()) fail(parent + key, "expected true/false");
    return v.get<bool>();
  }
  uint16_t hex16(const json& o, const std::string& parent, const char* key, bool required) const {
    if (!o.contains(key)) {
      if (required) fail(parent + key, "missing");
      return 0;
    }
    const auto& v = o.at(key);
    if (v.is_number_unsigned() && v.get<unsigned long long>() <= 0xffff) return v.get<uint16_t>();
    if (!v.is_string()) fail(parent + key, "expected a hex string like \"0x10de\"");
    const auto s = v.get<std::string>();
    size_t pos = 0;
    unsigned long x = 0;
    try {
      x = std::stoul(s, &pos, 16);
    } catch (const std::exception&) {
      fail(parent + key, "not a hex number: '" + s + "'");
    }
    if (pos != s.size() || x > 0xffff) fail(parent + key, "not a 16-bit hex number: '" + s + "'");
    return static_cast<uint16_t>(x);
  }
  const json& array(const json& o, const std::string& parent, const char* key, bool required = true) const {
    static const json empty = json::array();
    if (!o.contains(key) && !required) return empty;
    const auto& v = get(o, parent, key);
    if (!v.is_array()) fail(parent + key, "expected an array");
    return v;
  }
  std::vector<std::string> strings(const json& o, const std::string& parent, const char* key,
                                   bool required = true) const {
    std::vector<std::string> out;
    for (const auto& e : array(o, parent, key, required)) {
      if (!e.is_string()) fail(parent + key, "expected an array of strings");
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  std::vector<std::vector<std::string>> string_matrix(const json& o, const std::string& parent, const char* key,
                                                      bool required = true) const {
    std::vector<std::vector<std::string>> out;
    for (const auto& row : array(o, parent, key, required)) {
      if (!row.is_array()) fail(parent + key, "expected an array of arrays");
      std::vector<std::string> r;
      for (const auto& e : row) {
        if (!e.is_string()) fail(parent + key, "expected path classes (strings)");
        r.push_back(e.get<std::string>());
      }
      out.push_back(std::move(r));
    }
    return out;
  }
};

// Output written before "name_reported" existed. Such JSON came from a probe, and a probe on the node reports the
// names it found, so a name counts as reported, except the placeholders older versions made up for the unnamed
// HCAs of a vendor NCCL topology file: source "nccl-topo" and exactly "nic<i>" or "efa<i>", i its place in "nics".
bool legacy_placeholder(const std::string& source, const std::string& name, size_t index) {
  if (source != "nccl-topo") return false;
  const std::string i = std::to_string(index);
  return name == "nic" + i || name == "efa" + i;
}

}  // namespace

std::string to_json(const Topology& t, int indent) {
  ordered_json j;
  j["source"] = t.source;
  j["cloud"] = opt(t.cloud);
  j["fingerprint"] = t.fingerprint;
  j["hostname"] = t.hostname;
  j["numa_nodes"] = t.numa_nodes;
  auto& gpus = j["gpus"] = ordered_json::array();
  for (const auto& g : t.gpus) {
    ordered_json o;
    o["index"] = g.index;
    o["pci_bus_id"] = g.pci_bus_id;
    o["vendor_id"] = hex4(g.vendor_id);
    o["device_id"] = hex4(g.device_id);
    o["model"] = g.model;
    o["memory_gib"] = opt(g.memory_gib);
    o["numa"] = g.numa;
    o["in_allocation"] = g.in_allocation;
    o["nearest_nics"] = g.nearest_nics;
    o["nic_path"] = g.nic_path;
    o["device_minor"] = g.device_minor;
    gpus.push_back(std::move(o));
  }
  auto& nics = j["nics"] = ordered_json::array();
  for (const auto& n : t.nics) {
    ordered_json o;
    o["name"] = n.name;
    o["port"] = n.port;
    o["state"] = opt(n.state);
    o["phys_state"] = opt(n.phys_state);
    o["link_layer"] = opt(n.link_layer);
    o["rate_gbps"] = opt(n.rate_gbps);
    o["netdev"] = n.netdev;
    o["pci_bus_id"] = n.pci_bus_id;
    o["vendor_id"] = hex4(n.vendor_id);
    o["numa"] = n.numa;
    o["role"] = n.role;
    o["gid_index"] = opt(n.gid_index);
    o["name_reported"] = n.name_reported;
    nics.push_back(std::move(o));
  }
  j["gpu_paths"] = t.gpu_paths;
  j["gpu_pci_paths"] = t.gpu_pci_paths;
  j["gpu_nic_paths"] = t.gpu_nic_paths;
  j["nvlink_domains"] = t.nvlink_domains;
  j["nvlink_gbps_per_gpu"] = opt(t.nvlink_gbps_per_gpu);
  if (t.nvlink_unknown) j["nvlink_unknown"] = true;
  if (t.nvlink_domain_span > 0) j["nvlink_domain_span"] = t.nvlink_domain_span;
  if (!t.nccl_topo_file.empty()) j["nccl_topo_file"] = t.nccl_topo_file;
  j["inferred"] = t.inferred;
  j["warnings"] = t.warnings;
  // Names and info strings come from files (hwloc XML, NCCL topology files) and may hold bytes that are not
  // UTF-8: replaced by U+FFFD rather than a json::type_error escaping (found by tests/fuzz/fuzz_nccl_topo).
  return j.dump(indent < 0 ? -1 : indent, ' ', false, json::error_handler_t::replace);
}

// nlohmann's parser is iterative and so is its destructor, but copying or dumping a value recurses once per level:
// `{"topology": {"x": [[[...]]]}}` 1 MiB deep overflowed the stack at `j = j.at("topology")` below (fuzz_topology_json
// and fuzz_topology_file with inputs up to 1 MiB). A topology is a few levels deep; 64 is the TOML files' cap too.
constexpr int kMaxJsonDepth = 64;

Topology from_json(const std::string& text, const std::string& origin) {
  // The callback sees each array or object as it opens, with the number of containers around it.
  const json::parser_callback_t shallow = [&origin](int depth, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth)
      throw ProbeError(origin + ": not valid JSON: nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    return true;
  };
  json j;
  try {
    j = json::parse(text, shallow);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number beyond double (fuzz_topology_json)
    throw ProbeError(origin + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw ProbeError(origin + ": expected a JSON object (paratune probe --json output)");
  // The tuning log and the cache wrap the topology in {"topology": {...}}.
  if (j.contains("topology") && j.at("topology").is_object() && !j.contains("gpus")) j = j.at("topology");
  Reader r{origin};
  Topology t;
  t.source = r.str(j, "", "source");
  t.cloud = r.opt_str(j, "", "cloud");
  t.fingerprint = r.str_or(j, "", "fingerprint", "");
  t.hostname = r.str_or(j, "", "hostname", "");
  t.numa_nodes = r.int_or(j, "", "numa_nodes", 0);
  const auto& gpus = r.array(j, "", "gpus");
  for (size_t i = 0; i < gpus.size(); ++i) {
    const auto& o = gpus[i];
    const std::string p = "gpus[" + std::to_string(i) + "].";
    if (!o.is_object()) r.fail(p.substr(0, p.size() - 1), "expected an object");
    Gpu g;
    g.index = r.integer(o, p, "index");
    g.pci_bus_id = r.str_or(o, p, "pci_bus_id", "");
    g.vendor_id = r.hex16(o, p, "vendor_id", false);
    g.device_id = r.hex16(o, p, "device_id", false);
    g.model = r.str(o, p, "model");
    g.memory_gib = r.opt_num(o, p, "memory_gib");
    g.numa = r.int_or(o, p, "numa", -1);
    g.in_allocation = o.contains("in_allocation") ? r.boolean(o, p, "in_allocation") : true;
    g.nearest_nics = r.strings(o, p, "nearest_nics", false);
    g.nic_path = r.str_or(o, p, "nic_path", "");
    g.device_minor = r.int_or(o, p, "device_minor", -1);
    if (!g.nic_path.empty()) {
      try {
        (void)path_class_from_string(g.nic_path);
      } catch (const std::invalid_argument& e) {
        r.fail(p + "nic_path", e.what());
      }
    }
    t.gpus.push_back(std::move(g));
  }
  const auto& nics = r.array(j, "", "nics");
  for (size_t i = 0; i < nics.size(); ++i) {
    const auto& o = nics[i];
    const std::string p = "nics[" + std::to_string(i) + "].";
    if (!o.is_object()) r.fail(p.substr(0, p.size() - 1), "expected an object");
    Nic n;
    n.name = r.str(o, p, "name");
    n.port = r.int_or(o, p, "port", 1);
    n.state = r.opt_str(o, p, "state");
    n.phys_state = r.opt_str(o, p, "phys_state");
    n.link_layer = r.opt_str(o, p, "link_layer");
    n.rate_gbps = r.opt_num(o, p, "rate_gbps");
    n.netdev = r.str_or(o, p, "netdev", "");
    n.pci_bus_id = r.str_or(o, p, "pci_bus_id", "");
    n.vendor_id = r.hex16(o, p, "vendor_id", false);
    n.numa = r.int_or(o, p, "numa", -1);
    n.role = r.str_or(o, p, "role", "unknown");
    n.gid_index = r.opt_int(o, p, "gid_index");
    n.name_reported = o.contains("name_reported") ? r.boolean(o, p, "name_reported")
                                                  : !legacy_placeholder(t.source, n.name, i);
    t.nics.push_back(std::move(n));
  }
  t.gpu_paths = r.string_matrix(j, "", "gpu_paths", false);
  t.gpu_pci_paths = r.string_matrix(j, "", "gpu_pci_paths", false);
  t.gpu_nic_paths = r.string_matrix(j, "", "gpu_nic_paths", false);
  if (!t.gpu_nic_paths.empty() && t.gpu_nic_paths.size() != t.gpus.size())
    r.fail("gpu_nic_paths", "expected one row per GPU");
  for (const auto& row : t.gpu_nic_paths) {
    if (row.size() != t.nics.size()) r.fail("gpu_nic_paths", "expected one column per NIC");
    for (const auto& c : row) {
      try {
        (void)path_class_from_string(c);
      } catch (const std::invalid_argument& e) {
        r.fail("gpu_nic_paths", e.what());
      }
    }
  }
  for (const auto* m : {&t.gpu_paths, &t.gpu_pci_paths}) {
    const char* key = m == &t.gpu_paths ? "gpu_paths" : "gpu_pci_paths";
    if (!m->empty() && m->size() != t.gpus.size()) r.fail(key, "expected one row per GPU");
    for (const auto& row : *m) {
      if (row.size() != t.gpus.size()) r.fail(key, "expected a square matrix (one column per GPU)");
      for (const auto& c : row) {
        try {
          (void)path_class_from_string(c);
        } catch (const std::invalid_argument& e) {
          r.fail(key, e.what());
        }
      }
    }
  }
  for (const auto& d : r.array(j, "", "nvlink_domains", false)) {
    if (!d.is_array()) r.fail("nvlink_domains", "expected an array of arrays of GPU indexes");
    std::vector<int> dom;
    for (const auto& e : d) {
      if (!e.is_number_integer()) r.fail("nvlink_domains", "expected GPU indexes (integers)");
      auto x = e.get<long long>();
      if (x < 0 || x >= static_cast<long long>(t.gpus.size())) r.fail("nvlink_domains", "GPU index out of range");
      dom.push_back(static_cast<int>(x));
    }
    t.nvlink_domains.push_back(std::move(dom));
  }
  t.nvlink_gbps_per_gpu = r.opt_num(j, "", "nvlink_gbps_per_gpu");
  if (j.contains("nvlink_unknown")) {
    if (!j["nvlink_unknown"].is_boolean()) r.fail("nvlink_unknown", "expected true or false");
    t.nvlink_unknown = j["nvlink_unknown"].get<bool>();
  }
  t.nvlink_domain_span = r.int_or(j, "", "nvlink_domain_span", 0);
  t.nccl_topo_file = r.str_or(j, "", "nccl_topo_file", "");
  if (t.nvlink_domain_span < 0 || t.nvlink_domain_span > 1000000) r.fail("nvlink_domain_span", "expected 0 ... 1000000");
  t.inferred = r.strings(j, "", "inferred", false);
  t.warnings = r.strings(j, "", "warnings", false);
  return t;
}

}  // namespace paratune::probe
