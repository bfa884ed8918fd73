// NCCL/CUDA env synthesis and framework arguments.
#include <gtest/gtest.h>

#include <algorithm>

#include "dgx_h100.h"
#include "paratune/advisor/advisor.h"
#include "paratune/advisor/env.h"
#include "paratune/advisor/framework_args.h"

using namespace paratune::advisor;

namespace {
std::string get(const std::vector<EnvSetting>& env, const std::string& n) {
  for (const auto& e : env)
    if (e.name == n) return e.value;
  return "<unset>";
}
}  // namespace

TEST(Env, RoceRailsAndNoDebugVariables) {
  Scenario s;
  s.model = model_preset("llama3-8b");
  s.training.global_batch = 256;
  s.cluster.gpu = "a100-sxm4-80gb";
  s.cluster.nodes = 4;
  s.cluster.gpus_per_node = 8;
  s.cluster.nvlink_domain = 8;
  s.cluster.nic_count = 8;
  s.cluster.nic_gbps = 200;
  s.cluster.fabric = Fabric::RoCE;
  s.cluster.gpu_nic_path = "PHB";
  s.cluster.rail_alignment_known = true;  // stated by the scenario: NCCL_CROSS_NIC=0 follows
  for (int i = 0; i < 9; ++i) {
    NicFacts n;
    n.name = "mlx5_" + std::to_string(i);
    n.gbps = 200;
    n.netdev = "ens" + std::to_string(i);
    n.gid_index = 3;
    n.active = i != 4;  // one port down
    s.cluster.nics.push_back(n);
  }
  Layout l;
  l.tp = 2; l.dp = 16; l.sequence_parallel = true;
  const auto env = synthesize_env(s, Framework::Megatron, l, 40);
  // The down port is listed too: the list goes to every node, and NCCL skips a port that is not active on its own
  // node (net_ib.cc), so leaving it out would take that rail away from nodes where it is up.
  EXPECT_EQ(get(env, "NCCL_IB_HCA"),
            "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1,mlx5_8:1");
  EXPECT_EQ(get(env, "NCCL_IB_GID_INDEX"), "3");
  // NICs whose RoCE v2 GID sits at different indexes: one value would override NCCL's per-device choice for all.
  Scenario mixed = s;
  mixed.cluster.nics[6].gid_index = 5;
  EXPECT_EQ(get(synthesize_env(mixed, Framework::Megatron, l, 40), "NCCL_IB_GID_INDEX"), "<unset>");
  mixed.cluster.nics[6].gid_index = 3;
  mixed.cluster.nics[4].gid_index = 5;  // the down port's does not count
  EXPECT_EQ(get(synthesize_env(mixed, Framework::Megatron, l, 40), "NCCL_IB_GID_INDEX"), "3");
  EXPECT_EQ(get(env, "NCCL_NET_GDR_LEVEL"), "PHB");
  EXPECT_EQ(get(env, "CUDA_DEVICE_MAX_CONNECTIONS"), "1");
  EXPECT_EQ(get(env, "NCCL_CROSS_NIC"), "0");
  EXPECT_EQ(get(env, "NCCL_SOCKET_IFNAME"), "=ens0");
  for (const auto& e : env) {
    EXPECT_NE(e.name, "NCCL_DEBUG");
    EXPECT_NE(e.name, "NCCL_ALGO");
    EXPECT_NE(e.name, "NCCL_PROTO");
    EXPECT_FALSE(e.reason.empty());
  }
  // Rail alignment only assumed (the default): NCCL's own cross-NIC default stays (issue 13, item 8).
  Scenario assumed = s;
  assumed.cluster.rail_alignment_known = false;
  EXPECT_EQ(get(synthesize_env(assumed, Framework::Megatron, l, 40), "NCCL_CROSS_NIC"), "<unset>");
  // FSDP full shard: CUDA_DEVICE_MAX_CONNECTIONS is left alone.
  Layout f;
  f.dp = 32; f.zero_stage = 3;
  EXPECT_EQ(get(synthesize_env(s, Framework::Fsdp, f, 40), "CUDA_DEVICE_MAX_CONNECTIONS"), "<unset>");
}

TEST(FrameworkArgs, MegatronUnevenInterleavedPlan) {
  Scenario s;
  s.model = model_preset("llama3.1-405b");
  s.training.global_batch = 2048;
  s.cluster.gpu = "h100-sxm5-80gb";
  s.cluster.nodes = 128;
  s.cluster.gpus_per_node = 8;
  s.cluster.nvlink_domain = 8;
  s.cluster.nic_count = 8;
  s.cluster.nic_gbps = 400;
  Plan p;
  p.framework = Framework::Megatron;
  p.layout.tp = 8; p.layout.pp = 8; p.layout.dp = 8; p.layout.cp = 2; p.layout.virtual_stages = 8;
  p.layout.micro_batch = 1; p.layout.zero_stage = 1; p.layout.recompute = Recompute::Selective;
  p.layout.sequence_parallel = true;
  const FrameworkArgs a = framework_args(s, p);
  ASSERT_EQ(a.files.size(), 1u);
  const std::string& m = a.files[0].content;
  EXPECT_EQ(a.files[0].name, "megatron.args");
  EXPECT_EQ(a.version, "core_v0.15");
  EXPECT_NE(m.find("--tensor-model-parallel-size=8\n--pipeline-model-parallel-size=8\n--context-parallel-size=2"),
            std::string::npos);
  EXPECT_NE(m.find("--num-virtual-stages-per-pipeline-rank=8"), std::string::npos) << m;
  // 126 layers + embedding + loss = 128 = 8 stages x 8 chunks x 2 layers
  EXPECT_NE(m.find("--account-for-embedding-in-pipeline-split\n--account-for-loss-in-pipeline-split"), std::string::npos);
  EXPECT_NE(m.find("--use-distributed-optimizer"), std::string::npos);
  EXPECT_EQ(m.find("--use-flash-attn"), std::string::npos) << "read by nothing in Megatron-Core (issue 13, item 2)";
  EXPECT_NE(a.torchrun.find("--nnodes=128\n--nproc_per_node=8"), std::string::npos) << a.torchrun;
  EXPECT_NO_THROW(predict(s, p.layout));
}

// A site policy that forces or forbids CUDA_DEVICE_MAX_CONNECTIONS for every job decides which layouts can start:
// Megatron asserts it is not 1 under Megatron-FSDP and is 1 with tp or cp > 1 before Blackwell (arguments.py,
// core_v0.15.3: lines 715 and 959), Megatron-DeepSpeed raises without 1 under sequence parallelism. The search
// plans none that would stop; without the rule the same scenario plans them (control).
TEST(Env, TheSitesCudaDeviceMaxConnectionsDecidesWhatCanStart) {
  const Scenario s = test_scenarios::on_dgx_h100("llama3-8b", 1, 256);
  Layout fsdp;
  fsdp.dp = 8; fsdp.zero_stage = 3;
  Layout tp;
  tp.tp = 4; tp.dp = 2; tp.zero_stage = 1; tp.sequence_parallel = true;
  const std::optional<std::string> one = "1", removed = "", eight = "8", none;
  EXPECT_NE(cuda_connections_problem(s, fsdp, Framework::Megatron, one), "");
  EXPECT_EQ(cuda_connections_problem(s, tp, Framework::Megatron, one), "");
  EXPECT_NE(cuda_connections_problem(s, tp, Framework::Megatron, removed), "");
  EXPECT_NE(cuda_connections_problem(s, tp, Framework::Megatron, eight), "");
  EXPECT_EQ(cuda_connections_problem(s, fsdp, Framework::Megatron, removed), "");
  EXPECT_EQ(cuda_connections_problem(s, tp, Framework::Megatron, none), "") << "the policy says nothing";
  Scenario b200 = s;
  b200.cluster.gpu = "b200-sxm-180gb";
  EXPECT_EQ(cuda_connections_problem(b200, tp, Framework::Megatron, removed), "") << "no such assert on Blackwell";
  Scenario mds = s;
  mds.training.framework = Framework::DeepSpeed;
  mds.training.framework_version = "megatron-deepspeed";
  EXPECT_NE(cuda_connections_problem(mds, tp, Framework::DeepSpeed, removed), "");

  // The plan and its alternatives: every layout the search ranked.
  const auto ranked = [&](const SearchLimits& lim) {
    const Plan p = advise(s, lim);
    std::vector<Layout> out = {p.layout};
    for (const auto& c : p.alternatives) out.push_back(c.layout);
    return out;
  };
  SearchLimits forced;
  forced.top_n = 31;
  forced.cuda_device_max_connections = "1";
  for (const Layout& l : ranked(forced)) EXPECT_LT(l.zero_stage, 3) << "Megatron-FSDP under a forced 1";
  SearchLimits forbidden = forced;
  forbidden.cuda_device_max_connections = "";
  for (const Layout& l : ranked(forbidden))
    EXPECT_TRUE((l.tp == 1 && l.cp == 1) || l.zero_stage >= 3) << "tp/cp > 1 without the 1";
  SearchLimits free;
  free.top_n = 31;
  const auto all = ranked(free);
  EXPECT_TRUE(std::any_of(all.begin(), all.end(), [](const Layout& l) { return l.zero_stage >= 3; }));
  EXPECT_TRUE(std::any_of(all.begin(), all.end(), [](const Layout& l) {
    return (l.tp > 1 || l.cp > 1) && l.zero_stage < 3;
  })) << "control: both kinds are planned without the rule";
}
