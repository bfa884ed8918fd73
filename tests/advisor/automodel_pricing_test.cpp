// NeMo AutoModel is priced as the PyTorch-native stack torchtitan runs (FSDP2, eager modules, the same fitted stack
// parameters), with the one difference its pinned source shows in the MoE terms: the "torch" dispatcher combines
// with an fp32 all-reduce of the EP group's rows and sends the gather's gradient back with an all-reduce too
// (moe/experts.py at v0.5.0), and holds the fp32 outputs.
#include <gtest/gtest.h>

#include "dgx_h100.h"
#include "paratune/advisor/model.h"
#include "paratune/advisor/resolved.h"
// The MoE communication term itself (advisor/src/model/terms.h), to compare its traffic with the source's bytes.
#include "../../advisor/src/model/terms.h"

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
  // Without compile neither runs async TP (AutoModel's acts on compiled layers only; torchtitan's
  // config/configs.py: "Async TP requires 'model' in --compile.components"): the same price again, with the TP
  // traffic exposed.
  const double hidden_tp = Evaluator(s, Framework::Torchtitan).evaluate(l).br.tp_comm;
  s.training.compile = false;
  EXPECT_DOUBLE_EQ(step(s, Framework::Automodel, l), step(s, Framework::Torchtitan, l));
  EXPECT_GT(Evaluator(s, Framework::Torchtitan).evaluate(l).br.tp_comm, hidden_tp);
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

// The "torch" dispatcher's traffic per MoE layer and micro-batch against the all-gather dispatcher's (torchtitan's,
// a reduce-scatter combine), in bytes per gathered row element from the pinned source (moe/experts.py at v0.5.0):
// dispatch forward an all-gather of the 16-bit rows (:355); its backward an all-reduce of their 16-bit gradient
// (:77), a reduce-scatter's traffic plus an all-gather's; combine forward an all-reduce of the fp32 outputs (:399,
// y fp32 at :420 / :490); its backward the same fp32 all-reduce. torchtitan: four 16-bit gathers/scatters.
TEST(AutomodelPricing, TheGatherDispatchersTrafficIsTheSourcesBytes) {
  const double bf16 = 2, fp32 = 4, all_reduce = 2;  // an all-reduce moves a reduce-scatter's and an all-gather's
  const double automodel = bf16 + all_reduce * bf16 + 2 * all_reduce * fp32;
  const double torchtitan = 4 * bf16;
  for (Recompute r : {Recompute::None, Recompute::Full}) {
    Scenario s = test_scenarios::on_dgx_h100("qwen3-30b-a3b", 2, 512);
    Layout l;
    l.dp = 16; l.ep = 8; l.zero_stage = 3; l.micro_batch = 1; l.recompute = r;
    l.dispatcher = Dispatcher::AllGather;
    const auto raw = [&](Framework f) {
      s.training.framework = f;
      const Resolved R = resolve(s, f, shipped_params());
      return terms::moe_comm_layer(R, shipped_params(), l, terms::LayerCompute{}, 0).raw;
    };
    // Full recompute runs the forward's dispatch and combine again.
    const double again = r == Recompute::Full ? 1 : 0;
    const double want = (automodel + again * (bf16 + all_reduce * fp32)) / (torchtitan + again * 2 * bf16);
    EXPECT_NEAR(raw(Framework::Automodel) / raw(Framework::Torchtitan), want, 1e-9) << to_string(r);
  }
}

// Its fp32 output buffer and the all-reduced copy (experts.py:420 / :490, :399): 2 x 4 bytes x ep x tokens x hidden
// on top of what the same layout needs on torchtitan.
TEST(AutomodelPricing, TheGatherDispatchersFp32BuffersAreInTheMemory) {
  Scenario s = test_scenarios::on_dgx_h100("qwen3-30b-a3b", 2, 512);
  Layout l;
  l.dp = 16; l.ep = 8; l.zero_stage = 3; l.micro_batch = 2; l.recompute = Recompute::Full;
  l.dispatcher = Dispatcher::AllGather;
  const auto gib = [&](Framework f) {
    s.training.framework = f;
    return Evaluator(s, f).memory_gib(l);
  };
  const double want = 2 * 4.0 * l.ep * l.micro_batch * s.model.seq_len * s.model.hidden / (1024.0 * 1024 * 1024);
  EXPECT_NEAR(gib(Framework::Automodel) - gib(Framework::Torchtitan), want, 1e-9);
}
