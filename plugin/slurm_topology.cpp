#include "slurm_topology.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>
#include <slurm/slurm.h>

#include "paratune/common/child_call.h"
#include "job/topology_text.h"
#include "slurm_compat.h"

namespace paratune::plugin {

namespace {

struct TopoDeleter {
  void operator()(topo_info_response_msg_t* m) const { slurm_free_topo_info_msg(m); }
};
struct HostlistDeleter {
  void operator()(slurm_compat::HostlistHandle hl) const { slurm_hostlist_destroy(hl); }
};
struct FreeDeleter {
  void operator()(char* p) const { std::free(p); }
};

// Slurm's switch records: topo_array where the series fills it (22.05), else the text its topology plugin prints
// (24.11 leaves topo_array empty and keeps the records in the plugin's own data).
std::vector<job::TopologyRecord> topology_records(topo_info_response_msg_t* msg) {
  std::vector<job::TopologyRecord> out;
  if (msg->record_count > 0 && msg->topo_array) {
    for (uint32_t i = 0; i < msg->record_count && i < 1000000; ++i) {
      const topo_info_t& r = msg->topo_array[i];
      if (r.name) out.push_back({r.name, static_cast<int>(r.level), r.nodes ? r.nodes : ""});
    }
    return out;
  }
  char* text = nullptr;
  size_t size = 0;
  FILE* stream = open_memstream(&text, &size);
  if (!stream) throw std::runtime_error("open_memstream failed");
  slurm_compat::print_topology(stream, msg);
  std::fclose(stream);
  std::unique_ptr<char, FreeDeleter> owned(text);
  return text ? job::parse_topology_text(std::string_view(text, size)) : out;
}

// In the child: for each of `wanted`, the level-0 switch (or block) that lists it.
std::string ask_slurm(const std::set<std::string>& wanted) {
  topo_info_response_msg_t* raw = nullptr;
  // errno, not slurm_get_errno(): 24.11 removed that function (22.05's returned errno).
  if (slurm_load_topo(&raw) != SLURM_SUCCESS || !raw)
    throw std::runtime_error(std::string("slurm_load_topo: ") + slurm_strerror(errno));
  std::unique_ptr<topo_info_response_msg_t, TopoDeleter> msg(raw);
  nlohmann::json out = nlohmann::json::object();
  for (const auto& r : topology_records(msg.get())) {
    if (r.level != 0 || r.nodes.empty()) continue;
    std::unique_ptr<struct hostlist, HostlistDeleter> hl(slurm_hostlist_create(r.nodes.c_str()));
    if (!hl) continue;
    const int count = slurm_hostlist_count(hl.get());
    if (count < 1 || count > static_cast<int>(kMaxTopologyNodes)) continue;
    while (true) {
      std::unique_ptr<char, FreeDeleter> host(slurm_hostlist_shift(hl.get()));
      if (!host) break;
      if (wanted.count(host.get())) out[host.get()] = r.name;
    }
  }
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

LeafSwitches leaf_switches(const std::vector<std::string>& nodes, int timeout_ms) {
  LeafSwitches result;
  if (nodes.empty() || nodes.size() > kMaxTopologyNodes) {
    result.problem = "no node list to place";
    return result;
  }
  const std::set<std::string> wanted(nodes.begin(), nodes.end());
  try {
    const auto reply = common::call_in_child([&] { return ask_slurm(wanted); }, timeout_ms, "reading Slurm's topology",
                                          8u << 20);
    const auto j = nlohmann::json::parse(reply);
    for (auto& [node, leaf] : j.items())
      if (leaf.is_string()) result.leaf_of[node] = leaf.get<std::string>();
  } catch (const std::exception& e) {
    result.problem = e.what();
    return result;
  }
  if (result.leaf_of.empty()) result.problem = "Slurm's topology names no leaf switch of the job's nodes (neither topology/tree nor topology/block configured?)";
  else if (result.leaf_of.size() < wanted.size()) result.problem = "Slurm's topology places only some of the job's nodes";
  return result;
}

}  // namespace paratune::plugin
