#include <gtest/gtest.h>

#include "paratune/planner/scenario_builder.h"
#include "test_topologies.h"

using namespace paratune;
using namespace paratune::planner;

TEST(ClusterFromTopology, WholeNode) {
  auto topo = fixtures::dgx_a100_like();
  Allocation alloc;
  alloc.nodes = 4;
  alloc.gpus_on_node = 8;
  std::vector<std::string> notes;
  auto c = cluster_from_topology(topo, alloc, notes);
  EXPECT_EQ(c.gpu, "a100-sxm4-80gb");
  EXPECT_EQ(c.nodes, 4);
  EXPECT_EQ(c.gpus_per_node, 8);
  EXPECT_EQ(c.nvlink_domain, 8);
  EXPECT_EQ(c.nic_count, 8);  // the storage NIC does not count
  EXPECT_DOUBLE_EQ(c.nic_gbps, 200);
  EXPECT_EQ(c.fabric, advisor::Fabric::InfiniBand);
  EXPECT_EQ(c.gpu_nic_path, "PIX");
  EXPECT_EQ(c.nics.size(), 8u);
  EXPECT_EQ(c.nics[3].gpu_path, "PIX");
}

// The job's memory on the node (Slurm's S_JOB_ALLOC_MEM, MB) is the host memory the plan may pin for offloaded
// activations; Slurm's MB are MiB. Control: no limit, nothing stated (the reference system's applies).
TEST(ClusterFromTopology, TheJobsMemoryIsItsHostMemory) {
  auto topo = fixtures::dgx_a100_like();
  Allocation alloc;
  alloc.gpus_on_node = 8;
  alloc.memory_mb = 1536000;
  std::vector<std::string> notes;
  auto c = cluster_from_topology(topo, alloc, notes);
  EXPECT_DOUBLE_EQ(c.host_memory_gib, 1500.0);
  bool said = false;
  for (const auto& n : notes) said |= n.find("host memory: the job's 1536000 MB") != std::string::npos;
  EXPECT_TRUE(said);
  alloc.memory_mb = 0;
  notes.clear();
  EXPECT_DOUBLE_EQ(cluster_from_topology(topo, alloc, notes).host_memory_gib, 0.0);
  for (const auto& n : notes) EXPECT_EQ(n.find("host memory"), std::string::npos) << n;
}

TEST(ClusterFromTopology, PartialAllocationShrinksTheNvlinkDomain) {
  auto topo = fixtures::dgx_a100_like();
  for (auto& g : topo.gpus) g.in_allocation = g.index < 4;
  Allocation alloc;
  alloc.gpus_on_node = 4;
  std::vector<std::string> notes;
  auto c = cluster_from_topology(topo, alloc, notes);
  EXPECT_EQ(c.gpus_per_node, 4);
  EXPECT_EQ(c.nvlink_domain, 4);
}

TEST(ClusterFromTopology, DownNicIsNotCountedAndUnknownRateIsNoted) {
  auto topo = fixtures::dgx_a100_like();
  topo.nics[0].state = "down";
  for (auto& n : topo.nics) n.rate_gbps.reset();
  Allocation alloc;
  std::vector<std::string> notes;
  auto c = cluster_from_topology(topo, alloc, notes);
  EXPECT_EQ(c.nic_count, 7);
  EXPECT_DOUBLE_EQ(c.nic_gbps, 100);
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes[0].find("assumed 100 Gb/s"), std::string::npos);
}

TEST(ClusterFromTopology, RefusesWhatItCannotPlanFor) {
  Allocation alloc;
  std::vector<std::string> notes;
  probe::Topology empty;
  EXPECT_THROW(cluster_from_topology(empty, alloc, notes), std::runtime_error);
  auto mixed = fixtures::dgx_a100_like();
  mixed.gpus[5].model = "h100-sxm5-80gb";
  EXPECT_THROW(cluster_from_topology(mixed, alloc, notes), std::runtime_error);
  auto none_allocated = fixtures::dgx_a100_like();
  for (auto& g : none_allocated.gpus) g.in_allocation = false;
  EXPECT_THROW(cluster_from_topology(none_allocated, alloc, notes), std::runtime_error);
}

TEST(BuildScenario, PresetAndOverrides) {
  auto spec = parse_option_spec("llama3-70b,gbs=512,seq=4096,framework=deepspeed,precision=fp16,tp=4");
  Allocation alloc;
  alloc.nodes = 2;
  std::vector<std::string> notes;
  auto s = build_scenario(spec, PluginConfig{}, alloc, fixtures::dgx_a100_like(), "", notes);
  EXPECT_EQ(s.model.layers, 80);   // Llama 3 70B: 80 layers, hidden 8192 (Meta's model card)
  EXPECT_EQ(s.model.hidden, 8192);
  EXPECT_EQ(s.model.seq_len, 4096);
  EXPECT_EQ(s.training.global_batch, 512);
  EXPECT_EQ(s.training.framework, advisor::Framework::DeepSpeed);
  EXPECT_EQ(s.training.precision, advisor::Precision::Fp16);
  EXPECT_EQ(s.parallel.tp, 4);
  EXPECT_EQ(s.total_gpus(), 16);
}

TEST(BuildScenario, BareOptionUsesTheConfiguredDefaultModelAndABatchOfAbout4MiTokens) {
  PluginConfig cfg;
  cfg.default_model = "llama3-8b";
  Allocation alloc;
  std::vector<std::string> notes;
  auto s = build_scenario(parse_option_spec(""), cfg, alloc, fixtures::dgx_a100_like(), "", notes);
  EXPECT_EQ(s.model.layers, 32);  // Llama 3 8B
  EXPECT_EQ(s.training.global_batch * s.model.seq_len, 4 * 1024 * 1024);
}

TEST(DefaultGlobalBatch, AtLeastOneSequencePerGpuAndDivisible) {
  EXPECT_EQ(default_global_batch(2048, 8), 2048);
  EXPECT_EQ(default_global_batch(8192, 8), 512);
  EXPECT_EQ(default_global_batch(131072, 64), 64);
  EXPECT_EQ(default_global_batch(8192, 24) % 24, 0);
}

TEST(BuildScenario, GpusWithoutBf16GetFp16WhenTheUserDidNotSay) {
  auto topo = fixtures::dgx_a100_like();
  for (auto& g : topo.gpus) g.model = "v100-sxm2-32gb";
  Allocation alloc;
  std::vector<std::string> notes;
  auto s = build_scenario(parse_option_spec("llama3-8b"), PluginConfig{}, alloc, topo, "", notes);
  EXPECT_EQ(s.training.precision, advisor::Precision::Fp16);
  auto a100 = build_scenario(parse_option_spec("llama3-8b"), PluginConfig{}, alloc, fixtures::dgx_a100_like(), "", notes);
  EXPECT_EQ(a100.training.precision, advisor::Precision::Bf16);
}
