// The search's own bounds (hardening): a huge global batch walks divisors, not every integer; the search has a
// time budget and says when it was cut short; "nothing fits" never prints an overflowed node count.

#include <gtest/gtest.h>

#include "paratune/advisor/advisor.h"
#include "paratune/advisor/catalog.h"

using namespace paratune::advisor;

namespace {
Scenario gpt_on_8_h100(int global_batch) {
  Scenario s;
  s.model = model_preset("gpt3-1.3b");
  s.training.global_batch = global_batch;
  s.cluster.gpu = "h100-sxm5-80gb";
  s.cluster.nodes = 1;
  s.cluster.gpus_per_node = 8;
  s.cluster.nvlink_domain = 8;
  return s;
}
}  // namespace

TEST(SearchBounds, AHugeGlobalBatchWalksDivisorsOnly) {
  // The finding: global_batch = 2^30 took 38 s of CPU, the micro-batch loop visiting every integer up to gbs/dp.
  // 2^30 has 31 divisors: the micro-batch candidates per split are at most 31, whatever the batch.
  Scenario s = gpt_on_8_h100(1 << 30);
  s.parallel.micro_batch = 4;
  const Plan p = advise(s);
  EXPECT_EQ(p.layout.micro_batch, 4);
  EXPECT_GT(p.candidates_evaluated, 0);
  EXPECT_LT(p.candidates_evaluated, 2000);  // splits x ZeRO x recompute, one micro-batch each
  s.parallel.micro_batch.reset();
  const Plan free_mb = advise(s);
  EXPECT_LT(free_mb.candidates_evaluated, 40000);  // 31 micro-batch sizes at most per layout
}

TEST(SearchBounds, TheTimeBudgetStopsTheSearchAndSaysSo) {
  Scenario s = gpt_on_8_h100(1024);
  SearchLimits unlimited;
  unlimited.time_budget_s = 0;
  const Plan full = advise(s, unlimited);
  ASSERT_GT(full.candidates_evaluated, 1024) << "the control needs a search longer than one budget check";
  SearchLimits tight;
  tight.time_budget_s = 1e-9;  // spent before the first check (after 1,024 candidates)
  const Plan cut = advise(s, tight);
  EXPECT_EQ(cut.candidates_evaluated, 1024);
  bool said = false;
  for (const auto& n : cut.notes) said |= n.find("time budget") != std::string::npos;
  EXPECT_TRUE(said);
  for (const auto& n : full.notes) EXPECT_EQ(n.find("time budget"), std::string::npos) << n;  // control
}

TEST(SearchBounds, NothingFitsNeverPrintsANegativeNodeCount) {
  // The finding: int(need_nodes) overflowed ("about -2147483648 nodes") for a model far beyond the cluster.
  Scenario s = gpt_on_8_h100(8);
  s.model = model_preset("llama3-405b");
  s.model.layers = 1 << 30;
  s.model.hidden *= 4;  // about 2e11 GiB of weights and optimizer: over 2^31 nodes of 80 GiB
  s.model.ffn_hidden *= 4;
  s.cluster.gpus_per_node = 1;
  s.cluster.nvlink_domain = 1;
  try {
    advise(s);
    FAIL() << "a 2^30-layer 405B model fitted on one GPU";
  } catch (const NothingFits& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find("about -"), std::string::npos) << msg;
    EXPECT_NE(msg.find("What would fit: about 1000000000 nodes"), std::string::npos) << msg;  // the cap
  }
}
