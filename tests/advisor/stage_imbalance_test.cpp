// The pipeline's stage imbalance in the breakdown (docs/model.md §5): the steady state m · max_i T_i is reported as
// the per-layer terms at the ranks' mean stage time plus pp_imbalance = m · (max_i T_i − mean_i T_i), so a user (and
// the recipe check) sees what the slowest rank carries beyond an even share. The model is Nemotron-22B as NVIDIA's
// NeMo 24.07 performance summary gives it (40 layers, hidden 6144, 48 heads, FFN 24576, vocabulary 256,000,
// sequence 4096; data/calibration/published/measurements.csv row NEMO2407-9), on 8 DGX H100 nodes.
#include <gtest/gtest.h>

#include "dgx_h100.h"
#include "paratune/advisor/model.h"

using namespace paratune::advisor;

namespace {

// NVIDIA's recipe layout without interleaving: tp 2, pp 4, dp 8, micro-batch 2; 10 layers a rank unless given.
Layout recipe(int first = 10, int last = 10) {
  Layout l;
  l.tp = 2; l.pp = 4; l.dp = 8; l.micro_batch = 2;
  l.sequence_parallel = true;
  l.zero_stage = 1;
  l.recompute = Recompute::None;
  l.first_stage_layers = first;
  l.last_stage_layers = last;
  return l;
}

}  // namespace

// Ten layers on every rank: the first also runs the embedding, the last the 256k-vocabulary LM head and loss, so
// max - mean = (10 L + head) - (40 L + emb + head) / 4 = (3 head - emb) / 4 per micro-batch.
TEST(StageImbalance, IsTheSlowestRanksExcessOverAnEvenShare) {
  const Evaluator ev(test_scenarios::nemotron_22b_on_dgx_h100(256000), Framework::Megatron);
  const auto r = ev.evaluate(recipe());
  ASSERT_GT(r.head_s, r.emb_s);
  EXPECT_NEAR(r.br.pp_imbalance, r.microbatches * (3 * r.head_s - r.emb_s) / 4, 1e-6 * r.step_s);
  // The LM head (V h = 1.57 G parameters) weighs about 3.5 of these layers (12 h^2 = 453 M): a large share.
  EXPECT_GT(r.br.pp_imbalance / r.step_s, 0.15);
}

TEST(StageImbalance, GrowsWithTheVocabularyAndVanishesWithoutAPipeline) {
  const auto big = Evaluator(test_scenarios::nemotron_22b_on_dgx_h100(256000), Framework::Megatron).evaluate(recipe());
  const auto small = Evaluator(test_scenarios::nemotron_22b_on_dgx_h100(32000), Framework::Megatron).evaluate(recipe());
  EXPECT_GT(big.br.pp_imbalance, 3 * small.br.pp_imbalance);
  EXPECT_GT(small.br.pp_imbalance, 0);
  Layout flat = recipe(0, 0);
  flat.pp = 1;
  flat.dp = 32;
  const auto none = Evaluator(test_scenarios::nemotron_22b_on_dgx_h100(256000), Framework::Megatron).evaluate(flat);
  EXPECT_EQ(none.br.pp_imbalance, 0);  // control: one stage has nothing to be uneven with
}

// Taking three layers off the last rank (11 + 11 + 11 + 7) spreads the head's weight: less imbalance, a faster step.
TEST(StageImbalance, ALighterLastRankHasLess) {
  const Evaluator ev(test_scenarios::nemotron_22b_on_dgx_h100(256000), Framework::Megatron);
  const auto even = ev.evaluate(recipe(10, 10));
  const auto lighter = ev.evaluate(recipe(11, 7));
  EXPECT_LT(lighter.br.pp_imbalance, 0.5 * even.br.pp_imbalance);
  EXPECT_LT(lighter.step_s, even.step_s);
}
