// The sharding scope is a choice a scenario can fix ([parallel] shard_group): predict prices the hybrid-sharded
// layout a run used (FSDP's HYBRID_SHARD or FSDP2's replicate x shard mesh, torchtitan's dp_replicate x dp_shard), advise keeps it, and a scope no
// framework can run is refused with the reason.
#include <gtest/gtest.h>

#include <string>

#include "paratune/advisor/advisor.h"
#include "paratune/advisor/framework_args.h"
#include "paratune/advisor/scenario_toml.h"

using namespace paratune::advisor;

namespace {

// Llama 3 8B with FSDP on 4 nodes of 8 H100 (one 400G NIC a GPU), full sharding (ZeRO-3).
Scenario fsdp_on_32_h100() {
  return parse_scenario_toml(
      "[model]\npreset = \"llama3-8b\"\n[training]\nframework = \"fsdp\"\nglobal_batch = 256\n"
      "[cluster]\ngpu = \"h100-sxm5-80gb\"\nnodes = 4\ngpus_per_node = 8\nnvlink_domain = 8\nnic_count = 8\n"
      "nic_gbps = 400\n[parallel]\nzero_stage = 3\nshard_group = 8\n",
      "hsdp.toml");
}

}  // namespace

TEST(ShardScope, TheScenarioFixesIt) {
  const Scenario s = fsdp_on_32_h100();
  ASSERT_EQ(s.parallel.shard_group, 8);
  EXPECT_EQ(layout_from_scenario(s).shard_group, 8);
  const Plan p = advise(s);
  EXPECT_EQ(p.layout.shard_group, 8);
  for (const auto& a : p.alternatives) EXPECT_EQ(a.layout.shard_group, 8);
  // FSDP2 (fully_shard) expresses HSDP as a 2-D device mesh: 4 replicas of 8-way shards.
  EXPECT_NE(framework_args(s, p).files.at(0).content.find("\"mesh_shape\": [4, 8], \"mesh_dim_names\": [\"replicate\""),
            std::string::npos)
      << framework_args(s, p).files.at(0).content;
  Scenario full = s;
  full.parallel.shard_group = 0;
  const Plan q = advise(full);
  EXPECT_EQ(q.layout.shard_group, 0) << "positive control: 0 is full sharding over all data-parallel ranks";
  EXPECT_NE(framework_args(full, q).files.at(0).content.find("\"mesh_shape\": [1, 32]"), std::string::npos)
      << framework_args(full, q).files.at(0).content;
}

// Sharding inside the node keeps the parameter gathers and gradient reduce-scatters on NVLink; only the
// replicas' gradient all-reduce of each 1/8 shard crosses the NICs: the exposed data-parallel communication of the
// hybrid layout is not above full sharding's over 32 ranks.
TEST(ShardScope, PredictPricesTheScope) {
  const Scenario s = fsdp_on_32_h100();
  Scenario full = s;
  full.parallel.shard_group = 0;
  const Prediction hybrid = predict(s), over_all = predict(full);
  EXPECT_LE(hybrid.breakdown.dp_comm_exposed, over_all.breakdown.dp_comm_exposed);
  EXPECT_GT(hybrid.memory_gib_per_gpu, over_all.memory_gib_per_gpu) << "a state sharded 8 ways, not 32";
}

TEST(ShardScope, RefusedWhereNoFrameworkRunsIt) {
  Scenario s = fsdp_on_32_h100();
  s.training.framework = Framework::Megatron;
  EXPECT_NE(layout_problem(s, layout_from_scenario(s), Framework::Megatron).find("fsdp, torchtitan and automodel only"),
            std::string::npos);
  try {
    advise(s);
    ADD_FAILURE() << "megatron cannot run a hybrid-sharding scope";
  } catch (const NothingFits& e) {
    EXPECT_NE(std::string(e.what()).find("fsdp, torchtitan and automodel only"), std::string::npos) << e.what();
  }
  std::string z1 = "(parsed)";
  try {
    Scenario bad = fsdp_on_32_h100();
    bad.parallel.zero_stage = 1;
    validate(bad);
  } catch (const std::exception& e) {
    z1 = e.what();
  }
  EXPECT_NE(z1.find("parallel.shard_group"), std::string::npos) << "a scope needs ZeRO 2 or 3: " << z1;
}
