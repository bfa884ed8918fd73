// The job's nodes under Slurm's leaf switches, as the plan needs them: a rank order that keeps each leaf's nodes
// together (the hostfile / node-rank hint), the advisor's Placement, and which nodes form each parallel group.
// Pure: Slurm's answer (node -> leaf switch) comes from plugin/slurm_topology.cpp.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "paratune/advisor/placement.h"
#include "paratune/advisor/plan.h"

namespace paratune::planner {

struct FabricPlacement {
  std::vector<std::string> node_order;   // the job's nodes in rank order: leaf by leaf, Slurm's order within a leaf
  std::vector<std::string> leaf_of_node; // the leaf switch of node_order[i]
  advisor::Placement placement;          // nodes per leaf in that order (oversubscription set by the decision)
};

// From the job's nodes (Slurm's order) and each node's leaf switch. Leaves come in the order their first node
// appears. nullopt when a node has no leaf switch (Slurm's topology does not cover the job's nodes).
std::optional<FabricPlacement> placement_from_leaves(const std::vector<std::string>& nodes,
                                                     const std::map<std::string, std::string>& leaf_of);

// Which nodes form each parallel group, Megatron's rank order (tp fastest, then cp, dp, pp; node = rank / G):
// {"tp": [[nodes], ...], "cp": ..., "dp": ..., "pp": ...} with only the groups that span several nodes, each
// distinct node list once, at most `max_groups` per kind (then "<kind>_more": count).
nlohmann::json parallel_groups(const advisor::Layout& l, int gpus_per_node, const std::vector<std::string>& node_order,
                               size_t max_groups = 64);

}  // namespace paratune::planner
