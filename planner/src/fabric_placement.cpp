#include "paratune/planner/fabric_placement.h"

#include <algorithm>
#include <set>

namespace paratune::planner {

using nlohmann::json;

std::optional<FabricPlacement> placement_from_leaves(const std::vector<std::string>& nodes,
                                                     const std::map<std::string, std::string>& leaf_of) {
  std::vector<std::string> leaves;
  std::map<std::string, std::vector<std::string>> members;
  for (const auto& n : nodes) {
    const auto it = leaf_of.find(n);
    if (it == leaf_of.end()) return std::nullopt;
    if (!members.count(it->second)) leaves.push_back(it->second);
    members[it->second].push_back(n);
  }
  FabricPlacement out;
  for (const auto& leaf : leaves) {
    for (const auto& n : members[leaf]) {
      out.node_order.push_back(n);
      out.leaf_of_node.push_back(leaf);
    }
    out.placement.nodes_per_leaf.push_back(static_cast<int>(members[leaf].size()));
    out.placement.leaf_names.push_back(leaf);
  }
  return out;
}

json parallel_groups(const advisor::Layout& l, int gpus_per_node, const std::vector<std::string>& node_order,
                     size_t max_groups) {
  json out = json::object();
  const long tp = std::max(1, l.tp), cp = std::max(1, l.cp), dp = std::max(1, l.dp), pp = std::max(1, l.pp);
  const long G = std::max(1, gpus_per_node), world = tp * cp * dp * pp;
  if (world != G * static_cast<long>(node_order.size()) || world > (1L << 22)) return out;
  const long sizes[4] = {tp, cp, dp, pp};
  const char* names[4] = {"tp", "cp", "dp", "pp"};
  long stride = 1;
  for (int d = 0; d < 4; ++d) {
    std::set<std::vector<std::string>> seen;
    json groups = json::array();
    size_t more = 0;
    // Every group of kind d: ranks first + k*stride (k < size), for `first` whose d-th index is 0.
    for (long first = 0; first < world && sizes[d] > 1; ++first) {
      if ((first / stride) % sizes[d] != 0) continue;
      std::vector<std::string> nodes;
      for (long k = 0; k < sizes[d]; ++k) {
        const auto& n = node_order[(first + k * stride) / G];
        if (nodes.empty() || nodes.back() != n) nodes.push_back(n);
      }
      if (nodes.size() < 2 || !seen.insert(nodes).second) continue;
      if (groups.size() < max_groups) groups.push_back(nodes);
      else ++more;
    }
    if (!groups.empty()) out[names[d]] = groups;
    if (more > 0) out[std::string(names[d]) + "_more"] = more;
    stride *= sizes[d];
  }
  return out;
}

}  // namespace paratune::planner
