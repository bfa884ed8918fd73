// NeMo AutoModel is priced as the PyTorch-native stack torchtitan runs (FSDP2, eager modules, the same fitted stack
// parameters), with the one difference its pinned source shows in the MoE terms: the "torch" dispatcher combines
// with an all-reduce of the EP group's rows (moe/experts.py at v0.5.0), twice an all-gather's traffic.
#include <gtest/gtest.h>

#include "dgx_h100.h"
#include "paratune/advisor/model.h"

using namespace paratune::advisor;

namespace {

double step(Scenario s, Framework f, const Layout& l) {
  s.training.framework = f;
  return Evaluator(s, f).evaluate(l).step_s;
}

}  // namespace

TEST(AutomodelPricing, DenseLayoutsCostWhatTheyCostOnTorchtitan) {
  Scenario s = test_scenarios::on_dgx_h100("llama3-70b", 8, 512);
  s.training.compile = true;  // async TP on both (AutoModel's acts on compiled layers only)
  Layout l;
  l.tp = 8; l.pp = 2; l.dp = 4; l.virtual_stages = 2; l.zero_stage = 3; l.micro_batch = 1;
  l.recompute = Recompute::Full; l.sequence_parallel = true;
  const double tt = step(s, Framework::Torchtitan, l);
  EXPECT_GT(tt, 0);
  EXPECT_DOUBLE_EQ(step(s, Framework::Automodel, l), tt);
  // Control: the stacks priced differently are told apart (Megatron-Core's fused kernels, its own host time).
  EXPECT_NE(step(s, Framework::Megatron, l), tt);
  // Without compile AutoModel's arguments leave async TP off, and its price has no TP overlap.
  s.training.compile = false;
  EXPECT_GT(step(s, Framework::Automodel, l), step(s, Framework::Torchtitan, l));
}

TEST(AutomodelPricing, TheGatherDispatcherCombinesWithAnAllReduce) {
  const Scenario s = test_scenarios::on_dgx_h100("qwen3-30b-a3b", 2, 512);
  Layout l;
  l.dp = 16; l.ep = 8; l.zero_stage = 3; l.micro_batch = 1; l.recompute = Recompute::Selective;
  l.dispatcher = Dispatcher::AllGather;
  const Evaluator::Result am = Evaluator(s, Framework::Automodel).evaluate(l);
  const Evaluator::Result tt = Evaluator(s, Framework::Torchtitan).evaluate(l);  // the same stack, reduce-scatter
  EXPECT_GT(am.step_s, tt.step_s);
  l.ep = 1;  // nothing dispatched: no difference
  EXPECT_DOUBLE_EQ(Evaluator(s, Framework::Automodel).evaluate(l).step_s,
                   Evaluator(s, Framework::Torchtitan).evaluate(l).step_s);
}
