// torchtitan's own pipeline stage split (torchtitan/distributed/pipeline_parallel.py at the pinned v0.2.2 and main):
// the expected stage lists below are what that code returns — run it with
// tests/contracts/argv/torchtitan_split--main.py (copied from the source by
// scripts/contracts/extract_torchtitan_split.py); the argv-path test (contracts.argv_path) runs the same code on every
// emitted torchtitan plan.
#include <gtest/gtest.h>

#include "dgx_h100.h"
#include "paratune/advisor/advisor.h"
#include "paratune/advisor/torchtitan_stages.h"

using namespace paratune::advisor;
using test_scenarios::on_dgx_h100;

TEST(TorchtitanStages, SplitsAsTorchtitanDoes) {
  // generate_split(8, 80, 1, 1): 82 effective layers, 10 a stage, the first two stages one more, each end one less.
  EXPECT_EQ(torchtitan_stage_layers(80, 8, 1, 1, nullptr), (std::vector<int>{10, 11, 10, 10, 10, 10, 10, 9}));
  // generate_split(4, 32, 1, 1): 34 effective layers.
  EXPECT_EQ(torchtitan_stage_layers(32, 4, 1, 1, nullptr), (std::vector<int>{8, 9, 8, 7}));
  // Stage i runs on rank i mod pp: 80 layers, pp 4, Interleaved1F1B's default 2 stages a rank.
  EXPECT_EQ(torchtitan_rank_layers(80, 4, 2, {}, nullptr), (std::vector<int>{20, 21, 20, 19}));
  EXPECT_EQ(torchtitan_stage_layers(61, 1, 1, 1, nullptr), std::vector<int>{61});  // one stage holds everything
}

TEST(TorchtitanStages, RefusesWhatTorchtitanRefuses) {
  std::string why;
  // 8 layers over 4 stages with the embedding worth 4 layers: 13 effective, 3 a stage, and the weight is larger.
  EXPECT_TRUE(torchtitan_stage_layers(8, 4, 4, 1, &why).empty());
  EXPECT_NE(why.find("input_weight (4) exceeds minimum layers per stage (3)"), std::string::npos) << why;
  EXPECT_FALSE(torchtitan_stage_layers(8, 4, 3, 1, nullptr).empty());  // control: a weight of 3 is accepted
  // Stages cannot outnumber the effective layers.
  EXPECT_TRUE(torchtitan_stage_layers(4, 8, 1, 1, &why).empty());
  EXPECT_NE(why.find("cannot be greater than effective layers (6)"), std::string::npos) << why;
}

TEST(TorchtitanStages, LayersPerStageGivesTheStageCount) {
  std::string why;
  // Interleaved with 4 stages a rank over pp 4 and 80 layers: ceil(82 / n) is 17 at n = 5 and 14 at n = 6, never 16.
  EXPECT_EQ(torchtitan_layers_per_stage(80, 4, 4, 1, 1, &why), -1);
  EXPECT_NE(why.find("= 16 stages"), std::string::npos) << why;
  // 126 layers, pp 8, 4 a rank: ceil(128 / 4) = 32 stages.
  EXPECT_EQ(torchtitan_layers_per_stage(126, 8, 4, 1, 1, nullptr), 4);
  // 1F1B (1 a rank) and Interleaved1F1B with 2 a rank are the schedules' defaults: nothing to set.
  EXPECT_EQ(torchtitan_layers_per_stage(80, 4, 1, 1, 1, nullptr), 0);
  EXPECT_EQ(torchtitan_layers_per_stage(80, 4, 2, 1, 1, nullptr), 0);
}

TEST(TorchtitanStages, FindsTheWeightsOfASplit) {
  auto split = torchtitan_split_for(32, 4, 1, 8, 7);  // the defaults' own split
  ASSERT_TRUE(split);
  EXPECT_EQ(split->split.first_less, 1);
  EXPECT_EQ(split->split.last_less, 1);
  // 8 on the last rank too: the output layer unweighted (1 and 0: 33 effective layers, 9 - 1, 8, 8, 8).
  split = torchtitan_split_for(32, 4, 1, 8, 8);
  ASSERT_TRUE(split);
  EXPECT_EQ(split->split.first_less, 1);
  EXPECT_EQ(split->split.last_less, 0);
  EXPECT_FALSE(torchtitan_split_for(32, 4, 1, 12, 2));  // a first rank of 12 is beyond any weight
}

namespace {

Scenario torchtitan_llama8b_pp4() {
  Scenario s = on_dgx_h100("llama3-8b", 2, 256);
  s.training.framework = Framework::Torchtitan;
  s.parallel.tp = 1;
  s.parallel.pp = 4;
  s.parallel.cp = 1;
  s.parallel.zero_stage = 3;
  s.parallel.micro_batch = 1;
  s.parallel.recompute = Recompute::None;
  return s;
}

}  // namespace

TEST(TorchtitanStages, PredictPricesTorchtitansOwnSplit) {
  // 32 layers over pp 4: torchtitan gives ranks 8, 9, 8, 7 layers, so predict must price 8 first and 7 last (and
  // 9 on a middle rank), exactly as the same layout with that split fixed.
  const Scenario free_split = torchtitan_llama8b_pp4();
  Scenario fixed = free_split;
  fixed.parallel.first_stage_layers = 8;
  fixed.parallel.last_stage_layers = 7;
  EXPECT_DOUBLE_EQ(predict(free_split).step_time_s, predict(fixed).step_time_s);
  // Control: 8 on every rank (weights 1 and 0) is another layout, priced differently.
  Scenario even = free_split;
  even.parallel.first_stage_layers = 8;
  even.parallel.last_stage_layers = 8;
  EXPECT_NE(predict(even).step_time_s, predict(free_split).step_time_s);
}

TEST(TorchtitanStages, RefusesASplitTorchtitanCannotBuild) {
  Scenario s = torchtitan_llama8b_pp4();
  s.parallel.first_stage_layers = 12;
  s.parallel.last_stage_layers = 2;
  try {
    predict(s);
    FAIL() << "a 12 | .. | 2 split was accepted for torchtitan";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("pipeline_parallel_first/last_stage_less_layers"), std::string::npos)
        << e.what();
  }
}

TEST(TorchtitanStages, AdviseNotesTheWeights) {
  Scenario s = torchtitan_llama8b_pp4();
  s.parallel = {};
  s.parallel.pp = 4;
  const Plan p = advise(s);
  ASSERT_EQ(p.layout.pp, 4);
  const std::vector<int> ranks = torchtitan_rank_layers(32, 4, p.layout.virtual_stages, {}, nullptr);
  bool noted = false;
  for (const std::string& n : p.notes) noted |= n.find("as torchtitan splits them") != std::string::npos;
  EXPECT_TRUE(noted);
  // The plan's first and last ranks are torchtitan's (with its default weights, unless moving them is faster
  // beyond the tie-break): never the even split torchtitan does not build.
  EXPECT_TRUE(
      torchtitan_split_for(32, 4, p.layout.virtual_stages, p.layout.first_stage_layers, p.layout.last_stage_layers));
  EXPECT_FALSE(ranks.empty());
}
