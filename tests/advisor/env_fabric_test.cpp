// NCCL / libfabric settings per fabric: device names only from the node, nothing of InfiniBand on EFA, each cloud's
// documented settings where its facts say so, nothing fabric-specific where no fact says which fabric.
#include <gtest/gtest.h>

#include <algorithm>

#include "paratune/advisor/advisor.h"
#include "paratune/advisor/env.h"

using namespace paratune::advisor;

namespace {

std::string get(const std::vector<EnvSetting>& env, const std::string& n) {
  for (const auto& e : env)
    if (e.name == n) return e.value;
  return "<unset>";
}

bool any_prefix(const std::vector<EnvSetting>& env, const std::string& prefix) {
  for (const auto& e : env)
    if (e.name.rfind(prefix, 0) == 0) return true;
  return false;
}

bool note_with(const std::vector<std::string>& notes, const std::string& part) {
  for (const auto& n : notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

// 4 nodes of 8 H100 with 8 NICs named mlx5_0..7; `reported` false makes their names placeholders (nic0..7).
Scenario cluster(Fabric fabric, bool reported, const std::string& gpu = "h100-sxm5-80gb") {
  Scenario s;
  s.model = model_preset("llama3-70b");
  s.training.global_batch = 256;
  s.cluster.gpu = gpu;
  s.cluster.nodes = 4;
  s.cluster.gpus_per_node = 8;
  s.cluster.nvlink_domain = 8;
  s.cluster.nic_count = 8;
  s.cluster.nic_gbps = 400;
  s.cluster.fabric = fabric;
  s.cluster.gpu_nic_path = "PIX";
  for (int i = 0; i < 8; ++i) {
    NicFacts n;
    n.name = (reported ? "mlx5_" : "nic") + std::to_string(i);
    n.name_reported = reported;
    n.gbps = 400;
    s.cluster.nics.push_back(n);
  }
  return s;
}

// Pipeline stages across nodes: the layout for which NCCL_P2P_NET_CHUNKSIZE is set on InfiniBand.
Layout pipelined() {
  Layout l;
  l.tp = 8;
  l.pp = 4;
  l.dp = 1;
  return l;
}

}  // namespace

TEST(EnvFabric, ReportedNamesGiveTheHcaList) {  // the positive control of the tests below
  const Scenario s = cluster(Fabric::InfiniBand, true);
  const auto env = synthesize_env(s, Framework::Megatron, pipelined(), 40);
  EXPECT_EQ(get(env, "NCCL_IB_HCA"), "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1");
  EXPECT_EQ(get(env, "NCCL_P2P_NET_CHUNKSIZE"), "2097152");
  EXPECT_FALSE(note_with(network_notes(s), "NIC device names"));
}

TEST(EnvFabric, PlaceholderNamesNeverReachNcclIbHca) {
  Scenario s = cluster(Fabric::InfiniBand, false);
  auto env = synthesize_env(s, Framework::Megatron, pipelined(), 40);
  EXPECT_EQ(get(env, "NCCL_IB_HCA"), "<unset>");
  EXPECT_TRUE(note_with(network_notes(s), "NCCL's own selection is left alone"));
  // One placeholder among reported names is enough: a partial list would leave that NIC out of NCCL's rings.
  s = cluster(Fabric::InfiniBand, true);
  s.cluster.nics[3].name_reported = false;
  env = synthesize_env(s, Framework::Megatron, pipelined(), 40);
  EXPECT_EQ(get(env, "NCCL_IB_HCA"), "<unset>");
  // A down port's placeholder does not matter: it is not listed anyway.
  s.cluster.nics[3].active = false;
  EXPECT_EQ(get(synthesize_env(s, Framework::Megatron, pipelined(), 40), "NCCL_IB_HCA"),
            "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1");
}

TEST(EnvFabric, EfaGetsNoInfinibandSettings) {
  Scenario s = cluster(Fabric::Efa, true);
  s.cluster.rail_alignment_known = true;
  for (auto& n : s.cluster.nics) n.gid_index = 3;
  const auto env = synthesize_env(s, Framework::Megatron, pipelined(), 40);
  EXPECT_FALSE(any_prefix(env, "NCCL_IB_"));
  EXPECT_EQ(get(env, "NCCL_CROSS_NIC"), "<unset>");
  EXPECT_EQ(get(env, "FI_PROVIDER"), "efa");
  // AWS: not needed with libfabric >= 1.18 / aws-ofi-nccl >= 1.7, wrong on EFA without RDMA.
  EXPECT_EQ(get(env, "FI_EFA_USE_DEVICE_RDMA"), "<unset>");
  // aws-ofi-nccl sets its own per-platform chunk size where the variable is unset.
  EXPECT_EQ(get(env, "NCCL_P2P_NET_CHUNKSIZE"), "<unset>");
  EXPECT_EQ(get(env, "NCCL_NET_GDR_LEVEL"), "PXB");  // NCCL's own, for every net
}

TEST(EnvFabric, UnknownFabricGetsNothingFabricSpecific) {
  Scenario s = cluster(Fabric::InfiniBand, false);
  s.cluster.fabric_known = false;
  const auto env = synthesize_env(s, Framework::Megatron, pipelined(), 40);
  EXPECT_FALSE(any_prefix(env, "NCCL_IB_"));
  EXPECT_FALSE(any_prefix(env, "FI_"));
  EXPECT_EQ(get(env, "NCCL_P2P_NET_CHUNKSIZE"), "<unset>");
  EXPECT_EQ(get(env, "NCCL_NET"), "<unset>");
  const auto notes = network_notes(s);
  EXPECT_TRUE(note_with(notes, "does not say which fabric"));
  EXPECT_TRUE(note_with(notes, "NIC device names"));
}

TEST(EnvFabric, SlingshotLibfabricSettings) {
  const auto env = synthesize_env(cluster(Fabric::Slingshot, true), Framework::Megatron, pipelined(), 40);
  EXPECT_EQ(get(env, "FI_PROVIDER"), "cxi");
  EXPECT_EQ(get(env, "NCCL_NET"), "AWS Libfabric");
  EXPECT_FALSE(any_prefix(env, "NCCL_IB_"));
}

// Azure's HPC images: relaxed ordering on ND A100 v4 / ND H100 v5 (InfiniBand, Ampere/Hopper), the topology file on
// every ND/NC VM they ship one for.
TEST(EnvFabric, AzureSettingsFromAzureImages) {
  Scenario s = cluster(Fabric::InfiniBand, false);
  s.cluster.cloud = "azure";
  s.cluster.topology_nccl_file = "/opt/microsoft/ndv5/topo.xml";
  auto env = synthesize_env(s, Framework::Megatron, pipelined(), 40);
  EXPECT_EQ(get(env, "NCCL_IB_PCI_RELAXED_ORDERING"), "1");
  EXPECT_EQ(get(env, "NCCL_TOPO_FILE"), "/opt/microsoft/ndv5/topo.xml");
  EXPECT_EQ(get(env, "NCCL_IB_HCA"), "<unset>");
  // ND V100 v2: Azure sets the topology file only.
  Scenario v100 = cluster(Fabric::InfiniBand, false, "v100-sxm2-32gb");
  v100.training.precision = Precision::Fp16;
  v100.cluster.cloud = "azure";
  v100.cluster.topology_nccl_file = "/opt/microsoft/ndv2/topo.xml";
  env = synthesize_env(v100, Framework::Megatron, pipelined(), 20);
  EXPECT_EQ(get(env, "NCCL_IB_PCI_RELAXED_ORDERING"), "<unset>");
  EXPECT_EQ(get(env, "NCCL_TOPO_FILE"), "/opt/microsoft/ndv2/topo.xml");
  // A file the scenario or the site policy names wins, and is set once.
  s.cluster.nccl_topo_file = "/site/topo.xml";
  env = synthesize_env(s, Framework::Megatron, pipelined(), 40);
  EXPECT_EQ(get(env, "NCCL_TOPO_FILE"), "/site/topo.xml");
  EXPECT_EQ(std::count_if(env.begin(), env.end(), [](const EnvSetting& e) { return e.name == "NCCL_TOPO_FILE"; }), 1);
  // Not Azure: neither (a vendor file of another cloud, or a bare-metal dump, is not handed to NCCL).
  Scenario other = cluster(Fabric::InfiniBand, true);
  other.cluster.topology_nccl_file = "/etc/paratune/b300.xml";
  env = synthesize_env(other, Framework::Megatron, pipelined(), 40);
  EXPECT_EQ(get(env, "NCCL_IB_PCI_RELAXED_ORDERING"), "<unset>");
  EXPECT_EQ(get(env, "NCCL_TOPO_FILE"), "<unset>");
}

// The notes reach the plan.
TEST(EnvFabric, AdviseCarriesTheNote) {
  Scenario s = cluster(Fabric::InfiniBand, false);
  const Plan p = advise(s);
  EXPECT_TRUE(note_with(p.notes, "NCCL's own selection is left alone"));
  EXPECT_EQ(get(p.env, "NCCL_IB_HCA"), "<unset>");
  EXPECT_FALSE(note_with(advise(cluster(Fabric::InfiniBand, true)).notes, "NIC device names"));
}
