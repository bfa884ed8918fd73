#include <gtest/gtest.h>

#include "paratune/planner/job_env.h"
#include "slurm_nodes.h"

using namespace paratune;
using namespace paratune::plugin;

TEST(SlurmNodes, ExpandsARealList) {
  const auto n = expand_node_list("gpu[01-03,07],login1", 5);
  EXPECT_TRUE(n.problem.empty()) << n.problem;
  EXPECT_EQ(n.names, (std::vector<std::string>{"gpu01", "gpu02", "gpu03", "gpu07", "login1"}));
  EXPECT_EQ(n.compact, "gpu[01-03,07],login1");
}

TEST(SlurmNodes, MoreHostsThanTheStepHasIsWithheldWithoutExpanding) {
  // The finding: a 20 kB prefix plus [0-99999] took 9 GB and 54 s to expand in slurm_spank_exit.
  const auto n = expand_node_list("spoof[0-9999]", 1);  // (Slurm itself refuses ranges over 64 Ki hosts)
  EXPECT_TRUE(n.names.empty());
  EXPECT_TRUE(n.compact.empty());
  EXPECT_NE(n.problem.find("10000 hosts for a step of 1 nodes"), std::string::npos) << n.problem;
  // The finding's own value: a 20 kB prefix is no host name Slurm accepts; withheld all the same.
  const auto spoof = expand_node_list(std::string(20000, 'p') + "[0-99999]", 1);
  EXPECT_TRUE(spoof.names.empty());
  EXPECT_NE(spoof.problem.find("host name of 20000 bytes"), std::string::npos) << spoof.problem;
  // Positive control: a 255-byte name inside a list is still expanded.
  const std::string long_name(255, 'n');
  const auto fine = expand_node_list("a[1-2]," + long_name, 3);
  EXPECT_EQ(fine.names, (std::vector<std::string>{"a1", "a2", long_name})) << fine.problem;
}

TEST(SlurmNodes, AnOversizeListIsWithheld) {
  std::string many;
  for (int i = 0; i < 20000; ++i) many += "node" + std::to_string(i) + ",";
  const auto n = expand_node_list(many, 100000);
  EXPECT_TRUE(n.names.empty());
  EXPECT_NE(n.problem.find("bytes"), std::string::npos) << n.problem;
}

TEST(SlurmNodes, OnlyTheVariableSlurmSetsForTheStepKindIsRead) {
  planner::MapEnvironment env({{"SLURM_JOB_NODELIST", "evil[0-9]"}, {"SLURM_STEP_NODELIST", "n[1-2]"}});
  const auto step = step_nodes(env, false, 2);  // an srun step: srun sets SLURM_STEP_NODELIST
  EXPECT_EQ(step.names, (std::vector<std::string>{"n1", "n2"}));
  planner::MapEnvironment batch({{"SLURM_JOB_NODELIST", "b1"}, {"SLURM_STEP_NODELIST", "evil"}});
  EXPECT_EQ(step_nodes(batch, true, 1).names, (std::vector<std::string>{"b1"}));  // slurmd sets the job's
  planner::MapEnvironment none;
  EXPECT_FALSE(step_nodes(none, true, 1).problem.empty());
}
