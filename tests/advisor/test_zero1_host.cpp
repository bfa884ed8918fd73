// nanotron's ZeRO-1 (ZeroDistributedOptimizer.step, then nanotron.distributed.all_gather_coalesced and its
// reduce_scatter_coalesced gradient hook) walks a (data-parallel rank x parameter tensor) grid from Python every step:
// the host cost the model adds is ranks x tensors x the per-op cost, with 6 tensors per Llama layer in nanotron
// (qkv_proj, o_proj, gate_up_proj, down_proj, input_layernorm, post_attention_layernorm) and 3 more on a stage
// (token embedding, final norm, lm_head). Expected values are that grid's size, not the model's output.
#include <gtest/gtest.h>

#include "dgx_h100.h"
#include "paratune/advisor/model.h"

namespace paratune::advisor {
namespace {

// The nanotron stack as the calibration rows run it: torchtitan's eager kernels, parameters gathered after the step.
Scenario nanotron_on_dgx_h100(int nodes) {
  Scenario s = test_scenarios::on_dgx_h100("llama3-8b", nodes, 256);
  s.training.framework = Framework::Torchtitan;
  s.training.overlap_param_gather = false;
  return s;
}

Layout zero1(int tp, int dp, int micro_batch) {
  Layout l;
  l.tp = tp;
  l.dp = dp;
  l.micro_batch = micro_batch;
  l.zero_stage = 1;
  return l;
}

// The data-parallel term with the per-op cost at `op_us` minus the same with it at 0: the host term alone.
double host_term(const Scenario& s, Framework f, const Layout& l, double op_us) {
  ModelParams with = shipped_params(), without = shipped_params();
  with.zero1_tensor_op_us = op_us;
  without.zero1_tensor_op_us = 0;
  return Evaluator(s, f, with).evaluate(l).br.dp_comm_exposed - Evaluator(s, f, without).evaluate(l).br.dp_comm_exposed;
}

TEST(Zero1Host, RanksTimesTensorsTimesOpCost) {
  const Scenario s = nanotron_on_dgx_h100(32);  // 256 GPUs: TP 4 x DP 64
  const int layers = s.model.layers;          // llama3-8b: 32
  const double grid = 64.0 * (6 * layers + 3);
  EXPECT_NEAR(host_term(s, Framework::Torchtitan, zero1(4, 64, 4), 10), grid * 10e-6, 1e-9);
  // Half the data-parallel ranks (TP 8 x DP 32): half the grid.
  EXPECT_NEAR(host_term(s, Framework::Torchtitan, zero1(8, 32, 8), 10), grid / 2 * 10e-6, 1e-9);
}

// Positive control first (the term is there for nanotron's ZeRO-1), then its absences: plain DP (ZeRO 0) has no
// sharded gather, Megatron's distributed optimizer gathers flat buckets behind the next forward, one DP rank
// gathers nothing.
TEST(Zero1Host, OnlyForAPythonGatherAfterTheStep) {
  const Scenario s = nanotron_on_dgx_h100(32);
  ASSERT_GT(host_term(s, Framework::Torchtitan, zero1(4, 64, 4), 10), 0.01);
  Layout plain = zero1(4, 64, 4);
  plain.zero_stage = 0;
  EXPECT_EQ(host_term(s, Framework::Torchtitan, plain, 10), 0);
  Scenario megatron = s;
  megatron.training.framework = Framework::Megatron;
  megatron.training.overlap_param_gather.reset();
  EXPECT_EQ(host_term(megatron, Framework::Megatron, zero1(4, 64, 4), 10), 0);
  const Scenario one_node = nanotron_on_dgx_h100(1);
  EXPECT_EQ(host_term(one_node, Framework::Torchtitan, zero1(8, 1, 1), 10), 0);
}

}  // namespace
}  // namespace paratune::advisor
