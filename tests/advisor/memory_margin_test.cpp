// The search keeps a share of each GPU's memory free for the memory model's own error (advisor.h kMemoryMargin):
// no advised plan above 95 % of the GPU's memory by default, the policy's or the site's headroom counting towards
// it, and a plan that needed the last few percent without the margin gets a leaner one with it.
#include <gtest/gtest.h>

#include <vector>

#include "paratune/advisor/advisor.h"
#include "dgx_h100.h"
#include "paratune/advisor/catalog.h"

using namespace paratune::advisor;

namespace {

using test_scenarios::on_dgx_h100;

// Qwen3-235B-A22B on 32 DGX H100 nodes (256 GPUs, 8 x 400G NICs each), Megatron, BF16, GBS 2048.
Scenario qwen3_235b_on_256_h100() { return on_dgx_h100("qwen3-235b-a22b", 32, 2048); }

// Large jobs whose fastest layouts sit near the memory edge: dense and MoE, pipeline and not.
std::vector<Scenario> edge_candidates() {
  return {qwen3_235b_on_256_h100(), on_dgx_h100("mixtral-8x22b", 8, 1024), on_dgx_h100("llama3-70b", 8, 512),
          on_dgx_h100("llama3-405b", 64, 2048), on_dgx_h100("gpt3-175b", 16, 1536), on_dgx_h100("deepseek-v3", 128, 4096)};
}

double capacity_gib(const Scenario& s) { return gpu_spec(s.cluster.gpu).memory_gib; }

bool has_note(const Plan& p, const std::string& part) {
  for (const auto& n : p.notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(MemoryMargin, NoPlanAboveNinetyFivePercent) {
  int reached_edge = 0;
  for (const Scenario& s : edge_candidates()) {
    const double cap = capacity_gib(s);
    SearchLimits none;
    none.memory_margin = 0.0;
    const Plan edge = advise(s, none);
    reached_edge += edge.prediction.memory_gib_per_gpu > 0.95 * cap;
    const Plan kept = advise(s);
    EXPECT_LE(kept.prediction.memory_gib_per_gpu, 0.95 * cap + 1e-9) << s.model.name;
    for (const auto& alt : kept.alternatives)
      EXPECT_LE(alt.prediction.memory_gib_per_gpu, 0.95 * cap + 1e-9) << s.model.name;
    EXPECT_TRUE(has_note(kept, "memory margin: plans were kept to")) << "the plan must say which margin applied";
  }
  // Positive control: without the margin the fastest plan of some of them uses more than 95 % of the GPU.
  EXPECT_GT(reached_edge, 0) << "no candidate reaches the edge without the margin: the test checks nothing";
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
