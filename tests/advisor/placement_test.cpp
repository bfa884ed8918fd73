// Allocation-aware planning: the ring-hop bandwidth factor of placement.h on hand-counted cases, the scenario field
// [cluster.placement], and the model term it feeds (group_busbw_gbps).
#include <gtest/gtest.h>

#include "paratune/advisor/advisor.h"
#include "paratune/advisor/catalog.h"
#include "paratune/advisor/placement.h"
#include "paratune/advisor/scenario_toml.h"

using namespace paratune::advisor;

namespace {
Placement leaves(std::vector<int> per_leaf, double oversub) {
  Placement p;
  p.nodes_per_leaf = std::move(per_leaf);
  p.oversubscription = oversub;
  return p;
}
}  // namespace

// Hops counted by hand. [2,2], one ring over 4 nodes: 1->2 leaves leaf 0, 3->0 leaves leaf 1; each leaf's uplinks
// carry 2/oversubscription nodes' worth.
TEST(Placement, RingOverTwoLeaves) {
  EXPECT_DOUBLE_EQ(placement_bandwidth_factor(leaves({2, 2}, 4), 4, 1), 0.5);   // demand 1, capacity 0.5
  EXPECT_DOUBLE_EQ(placement_bandwidth_factor(leaves({2, 2}, 2), 4, 1), 1.0);   // demand 1, capacity 1
  EXPECT_DOUBLE_EQ(placement_bandwidth_factor(leaves({2, 2}, 1), 4, 1), 1.0);   // non-blocking
}

// Groups that stay under their leaf never use the uplinks, whatever the oversubscription.
TEST(Placement, GroupsInsideOneLeaf) {
  EXPECT_DOUBLE_EQ(placement_bandwidth_factor(leaves({2, 2}, 8), 2, 1), 1.0);   // {0,1}, {2,3}
  EXPECT_DOUBLE_EQ(placement_bandwidth_factor(leaves({4}, 8), 4, 1), 1.0);      // one leaf
}

// Strided groups cross on every hop: {0,2} and {1,3} on [2,2] send 2 nodes' worth out of each leaf.
TEST(Placement, StridedGroupsCrossEveryHop) {
  EXPECT_DOUBLE_EQ(placement_bandwidth_factor(leaves({2, 2}, 2), 2, 2), 0.5);   // demand 2, capacity 1
  EXPECT_DOUBLE_EQ(placement_bandwidth_factor(leaves({1, 1, 1, 1}, 2), 4, 1), 0.5);  // demand 1, capacity 0.5
  // Uneven leaves: [3,1], ring of 4: the lone node's leaf has capacity 1/2 for 1 hop out.
  EXPECT_DOUBLE_EQ(placement_bandwidth_factor(leaves({3, 1}, 2), 4, 1), 0.5);
}

TEST(Placement, NothingKnownIsNeutral) {
  EXPECT_DOUBLE_EQ(placement_bandwidth_factor(leaves({}, 4), 4, 1), 1.0);
  EXPECT_DOUBLE_EQ(placement_bandwidth_factor(leaves({2, 2}, 4), 1, 1), 1.0);   // not a group
  EXPECT_DOUBLE_EQ(placement_bandwidth_factor(leaves({2, 2}, 0.5), 4, 1), 1.0); // invalid ratio
  EXPECT_DOUBLE_EQ(placement_bandwidth_factor(leaves({2, 2}, 4), 8, 1), 1.0);   // larger than the job
}

// The model: a data-parallel layout over 4 nodes is slower across two 4:1 leaves than under one switch, and the
// same across two non-blocking leaves (positive control that the field alone changes nothing).
TEST(Placement, ModelSlowsRingsThatLeaveTheLeaf) {
  Scenario s;
  s.model = model_preset("llama3-8b");
  s.training.global_batch = 512;
  s.cluster.gpu = "h100-sxm5-80gb";
  s.cluster.nodes = 4;
  s.cluster.gpus_per_node = 8;
  s.cluster.nvlink_domain = 8;
  s.cluster.nic_count = 8;
  s.cluster.nic_gbps = 100;
  Layout l;
  l.tp = 1;
  l.pp = 1;
  l.dp = 32;
  l.micro_batch = 1;
  l.zero_stage = 1;
  const double flat = predict(s, l).step_time_s;
  s.cluster.placement = leaves({2, 2}, 1);
  EXPECT_DOUBLE_EQ(predict(s, l).step_time_s, flat);
  s.cluster.placement = leaves({2, 2}, 4);
  EXPECT_GT(predict(s, l).step_time_s, flat);
}

TEST(Placement, ScenarioToml) {
  const std::string text = R"([model]
preset = "llama3-8b"
[training]
global_batch = 512
[cluster]
gpu = "h100-sxm5-80gb"
nodes = 4
gpus_per_node = 8
nic_count = 8
nic_gbps = 400
[cluster.placement]
nodes_per_leaf = [2, 2]
oversubscription = 2
)";
  const Scenario s = parse_scenario_toml(text, "p.toml");
  ASSERT_TRUE(s.cluster.placement);
  EXPECT_EQ(s.cluster.placement->nodes_per_leaf, (std::vector<int>{2, 2}));
  EXPECT_DOUBLE_EQ(s.cluster.placement->oversubscription, 2);
  std::string bad = text;
  bad.replace(bad.find("[2, 2]"), 6, "[2, 3]");
  try {
    validate(parse_scenario_toml(bad, "p.toml"));
    FAIL() << "placement of 5 nodes for a 4-node cluster accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("cluster.placement.nodes_per_leaf"), std::string::npos) << e.what();
  }
  std::string bad_ratio = text;
  bad_ratio.replace(bad_ratio.find("oversubscription = 2"), 20, "oversubscription = 0.5");
  EXPECT_THROW(parse_scenario_toml(bad_ratio, "p.toml"), std::invalid_argument);
}
