// Slurm's topology text back into records. The lines are Slurm's own formats: 22.05's slurm_print_topo_record
// ("SwitchName=%s Level=%u LinkSpeed=%u " then "Nodes=%s " and "Switches=%s " where set, src/api/topo_info.c),
// and 24.11 topology/block's ("BlockName=%s BlockIndex=%u" then " Nodes=%s", _print_topo_record in
// src/plugins/topology/block/topology_block.c; slurm.topology_block sees "BlockName=nvl1 .*Nodes=ptnode" from the
// real 24.11 daemons).
#include <gtest/gtest.h>

#include "job/topology_text.h"

using paratune::job::parse_topology_text;

TEST(TopologyText, SwitchTreeLeavesAndSpine) {
  const auto r = parse_topology_text(
      "SwitchName=leaf0 Level=0 LinkSpeed=1 Nodes=mn[0-1] \n"
      "SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=mn[2-3] \n"
      "SwitchName=spine Level=1 LinkSpeed=1 Nodes=mn[0-3] Switches=leaf[0-1] \n");
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].name, "leaf0");
  EXPECT_EQ(r[0].level, 0);
  EXPECT_EQ(r[0].nodes, "mn[0-1]");
  EXPECT_EQ(r[1].nodes, "mn[2-3]");
  EXPECT_EQ(r[2].name, "spine");
  EXPECT_EQ(r[2].level, 1);
}

TEST(TopologyText, BlocksAreLeaves) {
  const auto r = parse_topology_text("BlockName=nvl1 BlockIndex=0 Nodes=ptnode\nBlockName=nvl2 BlockIndex=1\nBlockSizes=1\n");
  ASSERT_EQ(r.size(), 2u);  // BlockSizes= is no record
  EXPECT_EQ(r[0].name, "nvl1");
  EXPECT_EQ(r[0].level, 0);
  EXPECT_EQ(r[0].nodes, "ptnode");
  EXPECT_EQ(r[1].name, "nvl2");  // a block without nodes: no Nodes= printed
  EXPECT_EQ(r[1].nodes, "");
}

TEST(TopologyText, BadLinesAreSkippedNotTheRest) {
  const auto r = parse_topology_text(
      "No topology information available\n"
      "SwitchName=s1 Level=x LinkSpeed=1 Nodes=a\n"       // Level not a number
      "SwitchName=s2 Level=99999999999 Nodes=b\n"         // out of range
      "SwitchName= Level=0 Nodes=c\n"                     // no name
      "SwitchName=s3 Level=0 LinkSpeed=1 Switches=s4\n"   // a switch of switches: no nodes
      "SwitchName=ok Level=0 Nodes=d[1-2]");              // last line without a newline
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].name, "s3");
  EXPECT_EQ(r[0].nodes, "");
  EXPECT_EQ(r[1].name, "ok");
  EXPECT_EQ(r[1].nodes, "d[1-2]");
}

TEST(TopologyText, OverlongLineIsSkipped) {
  std::string text = "SwitchName=big Level=0 Nodes=" + std::string(paratune::job::kMaxTopologyLine, 'n') +
                     "\nSwitchName=small Level=0 Nodes=x\n";
  const auto r = parse_topology_text(text);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].name, "small");
}
