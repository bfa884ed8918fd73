#include "paratune/advisor/placement.h"

#include <algorithm>
#include <numeric>

namespace paratune::advisor {

int placement_nodes(const Placement& p) {
  long n = 0;
  for (int k : p.nodes_per_leaf) n += std::max(0, k);
  return static_cast<int>(std::min<long>(n, 1 << 24));
}

namespace {

// Leaf index of every node in rank order.
std::vector<int> leaf_of_nodes(const Placement& p) {
  std::vector<int> leaf;
  for (size_t l = 0; l < p.nodes_per_leaf.size(); ++l)
    for (int i = 0; i < p.nodes_per_leaf[l] && leaf.size() < (1u << 24); ++i) leaf.push_back(static_cast<int>(l));
  return leaf;
}

}  // namespace

double placement_bandwidth_factor(const Placement& p, int group_nodes, int stride_nodes) {
  if (p.nodes_per_leaf.size() < 2 || group_nodes < 2 || stride_nodes < 1 || !(p.oversubscription >= 1)) return 1.0;
  const std::vector<int> leaf = leaf_of_nodes(p);
  const long n = static_cast<long>(leaf.size());
  const long block = long(group_nodes) * stride_nodes;  // nodes covered by `stride` interleaved groups
  if (block > n) return 1.0;
  // Hops leaving (out) and entering (in) each leaf, counted in nodes' worth of bandwidth.
  std::vector<long> out(p.nodes_per_leaf.size(), 0), in(p.nodes_per_leaf.size(), 0);
  for (long base = 0; base + block <= n; base += block)
    for (long first = base; first < base + stride_nodes; ++first)
      for (long j = 0; j < group_nodes; ++j) {
        const long a = first + j * stride_nodes, b = first + ((j + 1) % group_nodes) * stride_nodes;
        if (leaf[a] == leaf[b]) continue;
        ++out[leaf[a]];
        ++in[leaf[b]];
      }
  double factor = 1.0;
  for (size_t l = 0; l < out.size(); ++l) {
    const long demand = std::max(out[l], in[l]);
    if (demand == 0) continue;
    const double capacity = p.nodes_per_leaf[l] / p.oversubscription;
    factor = std::min(factor, capacity / double(demand));
  }
  return std::clamp(factor, 1e-3, 1.0);
}

}  // namespace paratune::advisor
