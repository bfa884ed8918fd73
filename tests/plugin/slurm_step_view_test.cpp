// A step's partition, node count and node list (plugin/slurm_step_view.h): hardening round 3, finding 1 — srun
// steps took them from the step's environment, which the step's client writes (slurm.fault_forged_step shows a
// forged launch on the real Slurm). Here the pure part: what the plugin makes of slurmctld's answer or its absence.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>

#include "slurm_step_view.h"

using namespace paratune::plugin;

TEST(StepView, AnOtherStepIsWhatSlurmctldSaysNotWhatItsEnvironmentSays) {
  const auto v = other_step_view(SlurmctldStep{"gpu", "node[1-2]", ""}, std::string("debug"), 64);
  EXPECT_TRUE(v.from_slurmctld);
  EXPECT_EQ(v.partition, "gpu");
  EXPECT_EQ(v.nodes, 2);  // the step's nodes as slurmctld lists them, not S_JOB_NNODES
  EXPECT_EQ(v.node_list.names, (std::vector<std::string>{"node1", "node2"}));
  EXPECT_EQ(v.node_list.compact, "node[1-2]");
}

TEST(StepView, WithoutAnAnswerNoNodeNamesAndThePartitionRecordedForTheJob) {
  const auto v = other_step_view(SlurmctldStep{"", "", "asking slurmctld did not finish within 3000 ms"},
                                 std::string("gpu"), 2);
  EXPECT_FALSE(v.from_slurmctld);
  EXPECT_EQ(v.partition, "gpu");
  EXPECT_EQ(v.nodes, 2);
  EXPECT_TRUE(v.node_list.names.empty());
  EXPECT_NE(v.node_list.problem.find("did not finish"), std::string::npos) << v.node_list.problem;
  EXPECT_NE(v.partition_source.find("recorded"), std::string::npos) << v.partition_source;
}

TEST(StepView, WithoutAnAnswerOrARecordThePolicysDefaults) {
  const auto v = other_step_view(SlurmctldStep{"", "", "no answer"}, std::nullopt, 0);
  EXPECT_EQ(v.partition, "");
  EXPECT_EQ(v.nodes, 1);
  EXPECT_NE(v.partition_source.find("[defaults]"), std::string::npos) << v.partition_source;
}

TEST(StepView, ANameSlurmWouldNotGiveIsNotTaken) {
  for (const std::string& bad : std::vector<std::string>{"gpu,debug", "a b", std::string(300, 'p'), "x\n"}) {
    const auto v = other_step_view(SlurmctldStep{bad, "n1", ""}, std::nullopt, 1);
    EXPECT_FALSE(v.from_slurmctld) << bad;
    EXPECT_EQ(v.partition, "") << bad;
  }
  EXPECT_TRUE(other_step_view(SlurmctldStep{"gpu-a100.x_1", "n1", ""}, std::nullopt, 1).from_slurmctld);  // control
}

TEST(StepView, NoStepRecordMeansNoNamesButThePartitionHolds) {
  const auto v = other_step_view(SlurmctldStep{"gpu", "", ""}, std::nullopt, 3);
  EXPECT_TRUE(v.from_slurmctld);
  EXPECT_EQ(v.partition, "gpu");
  EXPECT_EQ(v.nodes, 3);
  EXPECT_TRUE(v.node_list.names.empty());
}

TEST(StepView, TheBatchStepIsWhatSlurmdSet) {
  paratune::planner::MapEnvironment env(std::map<std::string, std::string>{
      {"SLURM_JOB_PARTITION", "gpu"}, {"SLURM_NNODES", "2"}, {"SLURM_JOB_NODELIST", "mn[0-1]"},
      {"SLURM_STEP_NODELIST", "forged[1-64]"}});
  const auto v = batch_step_view(env);
  EXPECT_EQ(v.partition, "gpu");
  EXPECT_EQ(v.nodes, 2);
  EXPECT_EQ(v.node_list.names, (std::vector<std::string>{"mn0", "mn1"}));
}

TEST(StepView, AskingWithoutASlurmctldIsAReasonWithinTheBound) {
  ::setenv("SLURM_CONF", "/nonexistent/paratune-test/slurm.conf", 1);
  const auto start = std::chrono::steady_clock::now();
  const auto answer = ask_slurmctld(12345, 0, 1000);
  EXPECT_FALSE(answer.problem.empty());
  EXPECT_TRUE(answer.partition.empty());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2500));
  EXPECT_EQ(ask_slurmctld(0, 0).problem, "Slurm did not give the job id");
}
