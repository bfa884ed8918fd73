#include <gtest/gtest.h>

#include "paratune/planner/allocation.h"

using namespace paratune::planner;
using Vars = std::map<std::string, std::string>;

TEST(Allocation, BatchStepVariables) {
  MapEnvironment env(Vars{{"SLURM_NNODES", "4"}, {"SLURM_GPUS_ON_NODE", "2"}, {"CUDA_VISIBLE_DEVICES", "0,1"},
                      {"SLURM_JOB_GPUS", "2,3"}, {"SLURM_JOB_PARTITION", "gpu"}, {"SLURM_SUBMIT_DIR", "/home/u"}});
  auto a = allocation_from_env(env, /*batch_step=*/true);
  EXPECT_EQ(a.nodes, 4);
  EXPECT_EQ(a.gpus_on_node, 2);
  EXPECT_EQ(a.gpu_indexes, (std::vector<int>{2, 3}));  // GRES indexes win over CUDA_VISIBLE_DEVICES
  EXPECT_EQ(a.partition, "gpu");
  EXPECT_EQ(a.submit_dir, "/home/u");
}

TEST(Allocation, StepGpusWinAndRangesExpand) {
  MapEnvironment env(Vars{{"SLURM_STEP_GPUS", "0-2,5"}, {"SLURM_JOB_GPUS", "0,1,2,3,4,5"}});
  auto a = allocation_from_env(env, /*batch_step=*/false);
  EXPECT_EQ(a.gpu_indexes, (std::vector<int>{0, 1, 2, 5}));
  EXPECT_EQ(a.gpus_on_node, 4);  // no SLURM_GPUS_ON_NODE: count of the list
  EXPECT_EQ(a.nodes, 1);
}

TEST(Allocation, NoGpus) {
  MapEnvironment env(Vars{{"SLURM_NNODES", "1"}});
  auto a = allocation_from_env(env, false);
  EXPECT_EQ(a.gpus_on_node, 0);
  EXPECT_TRUE(a.gpu_indexes.empty());
}

TEST(Allocation, MalformedValuesNameTheVariable) {
  for (auto [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"SLURM_NNODES", "four"}, {"SLURM_JOB_NUM_NODES", "four"}, {"SLURM_GPUS_ON_NODE", "-1"},
           {"CUDA_VISIBLE_DEVICES", "0,x"}, {"SLURM_JOB_GPUS", "3-1"}, {"SLURM_STEP_GPUS", "0-999999"}}) {
    MapEnvironment env(Vars{{name, value}});
    try {
      allocation_from_env(env, /*batch_step=*/name != "SLURM_STEP_GPUS");
      FAIL() << name;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
}

// Only what Slurm sets for the kind of step is read (slurm.fault_spoof has the real-Slurm side): a user can export
// SLURM_JOB_NUM_NODES into a job step (srun only warns) and SLURM_JOB_GPUS into a step without GPUs, and
// SLURM_STEP_GPUS into a batch step; none of them may change the plan.
TEST(Allocation, VariablesAUserCanSpoofAreNotRead) {
  MapEnvironment step(Vars{{"SLURM_NNODES", "1"}, {"SLURM_JOB_NUM_NODES", "64"}, {"SLURM_JOB_GPUS", "0,1,2,3,4,5,6,7"}});
  auto a = allocation_from_env(step, /*batch_step=*/false);
  EXPECT_EQ(a.nodes, 1);
  EXPECT_TRUE(a.gpu_indexes.empty());
  EXPECT_EQ(a.gpus_on_node, 0);

  MapEnvironment batch(Vars{{"SLURM_NNODES", "2"}, {"SLURM_STEP_GPUS", "0,1,2,3,4,5,6,7"}});
  auto b = allocation_from_env(batch, /*batch_step=*/true);
  EXPECT_EQ(b.nodes, 2);
  EXPECT_TRUE(b.gpu_indexes.empty());
}

// Hardening round 3: outside the batch step the environment is the client's (any program can launch a step with an
// environment of its own), so the partition and the node count are not read from it at all — a forged or malformed
// value neither changes the plan nor throws (the plugin asks slurmctld: slurm.fault_forged_step).
TEST(Allocation, OtherStepsTakeNeitherPartitionNorNodeCountFromTheEnvironment) {
  MapEnvironment forged(Vars{{"SLURM_NNODES", "64"}, {"SLURM_JOB_NUM_NODES", "64"}, {"SLURM_JOB_PARTITION", "gpu"},
                             {"SLURM_STEP_GPUS", "0,1"}});
  auto a = allocation_from_env(forged, /*batch_step=*/false);
  EXPECT_EQ(a.nodes, 1);
  EXPECT_EQ(a.partition, "");
  EXPECT_EQ(a.gpu_indexes, (std::vector<int>{0, 1}));  // control: what slurmstepd sets is still read
  MapEnvironment malformed(Vars{{"SLURM_NNODES", "four"}, {"SLURM_STEP_GPUS", "0"}});
  EXPECT_NO_THROW(allocation_from_env(malformed, /*batch_step=*/false));
  EXPECT_THROW(allocation_from_env(malformed, /*batch_step=*/true), std::invalid_argument);  // control
}

TEST(Allocation, JobNumNodesIsTheFallbackWhenSlurmNnodesIsAbsent) {
  MapEnvironment env(Vars{{"SLURM_JOB_NUM_NODES", "3"}});
  EXPECT_EQ(allocation_from_env(env, true).nodes, 3);
}
