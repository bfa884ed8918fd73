// Where the job's nodes sit in the network (Slurm's switch tree, topology/tree), and what that does to the
// bandwidth a parallel group gets between nodes. Pure: values in, values out.
#pragma once

#include <string>
#include <vector>

namespace paratune::advisor {

// The job's nodes in rank order, grouped by leaf switch: nodes_per_leaf[i] nodes under the i-th leaf, the first
// nodes_per_leaf[0] ranks' nodes under the first, and so on (the plan's node order makes it so).
struct Placement {
  std::vector<int> nodes_per_leaf;
  double oversubscription = 1.0;   // above each leaf: downlink / uplink bandwidth (1 = non-blocking)
  std::vector<std::string> leaf_names;  // for explanations, same order ("" where unknown)
};

// The share of a node's inter-node bandwidth that a ring collective over `group_nodes` nodes gets, when the
// group's consecutive members are `stride_nodes` nodes apart in rank order and every group of that kind runs at
// once (DP groups of all TP ranks, ...). Each ring hop from a node under one leaf to a node under another leaves
// its leaf through the uplinks, which carry (nodes under the leaf) / oversubscription nodes' worth of traffic;
// the slowest leaf sets the ring's pace. 1 when no hop leaves a leaf, or the uplinks carry all that leaves.
// Invalid input (no leaves, group_nodes < 2, stride < 1, oversubscription < 1) gives 1: nothing is known.
double placement_bandwidth_factor(const Placement& p, int group_nodes, int stride_nodes);

// Total nodes of a placement.
int placement_nodes(const Placement& p);

}  // namespace paratune::advisor
