// Slurm's switch tree and blocks as `scontrol show topology` prints them, read back into records. Needed because
// Slurm 24.11 keeps the topology inside its plugin's own data (topo_info_response_msg_t.topo_info) and leaves
// record_count/topo_array empty: the only series-independent view a client gets is the text the plugin prints
// through slurm_print_topo_info_msg (plugin/slurm_compat.h). Pure: text in, records out.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace paratune::job {

struct TopologyRecord {
  std::string name;   // SwitchName= or BlockName=
  int level = 0;      // a switch's Level= (0 = leaf); blocks are all 0: one block is one leaf for placement
  std::string nodes;  // Nodes= as Slurm prints it (a host list expression), "" for switches of switches
};

// One record per line that starts with SwitchName= or BlockName=; other lines (BlockSizes=, messages) are skipped.
// A line longer than kMaxTopologyLine or a Level= that is not a small integer skips that line, not the rest.
inline constexpr size_t kMaxTopologyLine = 1 << 20;
std::vector<TopologyRecord> parse_topology_text(std::string_view text);

}  // namespace paratune::job
