// The leaf switch (or block) of each of the job's nodes, from Slurm's own switch tree or blocks (topology/tree or
// topology/block: topology.conf), read with libslurm's slurm_load_topo (an RPC to slurmctld, the same answer as
// `scontrol show topology`; on 24.11 through the text its plugin prints, job/topology_text.h). The RPC runs
// in a forked child bounded in time (job/child_call.h): slurmctld may be slow or away, slurmstepd must not wait.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace paratune::plugin {

struct LeafSwitches {
  std::map<std::string, std::string> leaf_of;  // node -> its leaf (level-0) switch, for the job's nodes
  std::string problem;                         // why there is no answer ("" when there is one)
};

// At most kMaxTopologyNodes nodes; an answer that names none of them (topology/none: no switches) is a problem.
inline constexpr size_t kMaxTopologyNodes = 65536;
LeafSwitches leaf_switches(const std::vector<std::string>& nodes, int timeout_ms);

}  // namespace paratune::plugin
