// The search keeps a share of each GPU's memory free for the memory model's own error (advisor.h kMemoryMargin):
// no advised plan above 95 % of the GPU's memory by default, the policy's or the site's headroom counting towards
// it, and a plan that needed the last few percent without the margin gets a leaner one with it.
#include <gtest/gtest.h>

#include "paratune/advisor/advisor.h"
#include "paratune/advisor/catalog.h"

using namespace paratune::advisor;

namespace {

// Qwen3-235B-A22B on 32 DGX H100 nodes (256 GPUs, 8 x 400G NICs each), Megatron, BF16, GBS 2048: the MoE case
// whose fastest plan packs the 80 GB GPUs to the edge.
Scenario qwen3_235b_on_256_h100() {
  Scenario s;
  s.model = model_preset("qwen3-235b-a22b");
  s.training.global_batch = 2048;
  s.training.framework = Framework::Megatron;
  s.cluster.gpu = "h100-sxm5-80gb";
  s.cluster.nodes = 32;
  s.cluster.gpus_per_node = 8;
  s.cluster.nvlink_domain = 8;
  s.cluster.nic_count = 8;
  s.cluster.nic_gbps = 400;
  return s;
}

double capacity_gib(const Scenario& s) { return gpu_spec(s.cluster.gpu).memory_gib; }

bool has_note(const Plan& p, const std::string& part) {
  for (const auto& n : p.notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(MemoryMargin, NoPlanAboveNinetyFivePercent) {
  const Scenario s = qwen3_235b_on_256_h100();
  const double cap = capacity_gib(s);
  // Positive control: without the margin the fastest plan uses more than 95 % of the GPU.
  SearchLimits none;
  none.memory_margin = 0.0;
  const Plan edge = advise(s, none);
  ASSERT_GT(edge.prediction.memory_gib_per_gpu, 0.95 * cap) << "the control no longer reaches the edge";
  const Plan kept = advise(s);
  EXPECT_LE(kept.prediction.memory_gib_per_gpu, 0.95 * cap + 1e-9);
  for (const auto& alt : kept.alternatives) EXPECT_LE(alt.prediction.memory_gib_per_gpu, 0.95 * cap + 1e-9);
  EXPECT_TRUE(has_note(kept, "memory margin: plans were kept to")) << "the plan must say which margin applied";
}

TEST(MemoryMargin, HeadroomCountsTowardsIt) {
  const Scenario s = qwen3_235b_on_256_h100();
  const double cap = capacity_gib(s);
  // A headroom larger than the margin is all the search keeps free: the plan may use up to capacity less it.
  SearchLimits big;
  big.memory_headroom_gib = 0.10 * cap;
  const Plan p = advise(s, big);
  EXPECT_LE(p.prediction.memory_gib_per_gpu, cap + 1e-9);  // the model's total includes the headroom itself
  EXPECT_TRUE(has_note(p, "headroom"));
  // A margin the admin sets is kept: 20 % free.
  SearchLimits wide;
  wide.memory_margin = 0.20;
  const Plan q = advise(s, wide);
  EXPECT_LE(q.prediction.memory_gib_per_gpu, 0.80 * cap + 1e-9);
}
