// nanotron's ZeRO-1 gradient hook (step_terms.cpp zero1_hook_host_s): per 25 MiB bucket of 16-bit gradients, one
// flatten per data-parallel rank on the host (nanotron distributed.py reduce_scatter_coalesced), ~20 us each, in the
// last micro-batch's backward; what the host's slack behind the GPU's backward cannot hide, the GPU waits for.
#include <gtest/gtest.h>

#include "dgx_h100.h"
#include "paratune/advisor/model.h"
#include "paratune/advisor/resolved.h"

#include "../../advisor/src/model/terms.h"

using namespace paratune::advisor;

namespace {

// 1e9 parameters a GPU: 2e9 bytes of bf16 gradients in ceil(2e9 / 26,214,400) = 77 buckets.
constexpr double kParams = 1e9, kBuckets = 77, kOpS = 20e-6;

Layout zero1(int dp) {
  Layout l;
  l.tp = 1; l.pp = 1; l.dp = dp; l.micro_batch = 1; l.zero_stage = 1;
  return l;
}

double hook(Framework f, const Layout& l, double stage_bwd_s, int layers = 32) {
  const ModelParams p;  // the priors: cpu_layer_us 2500 for the PyTorch-native stacks
  const Resolved R = resolve(test_scenarios::on_dgx_h100("llama3-8b", 16, 1024), f, p);
  return terms::zero1_hook_host_s(R, p, l, kParams, stage_bwd_s, layers);
}

}  // namespace

TEST(Zero1Hook, OneFlattenPerRankPerBucket) {
  EXPECT_NEAR(hook(Framework::Torchtitan, zero1(128), 0), kBuckets * 128 * kOpS, 1e-12);
  EXPECT_NEAR(hook(Framework::Torchtitan, zero1(16), 0), kBuckets * 16 * kOpS, 1e-12) << "scales with the ranks";
}

// The host's slack: the GPU's backward beyond the host's own issue time (32 layers x 2500 us x 2/3).
TEST(Zero1Hook, TheHostsSlackBehindTheBackwardHidesIt) {
  const double host_bwd = 32 * 2500e-6 * 2 / 3;
  EXPECT_NEAR(hook(Framework::Torchtitan, zero1(128), 0.1), kBuckets * 128 * kOpS - (0.1 - host_bwd), 1e-12);
  EXPECT_EQ(hook(Framework::Torchtitan, zero1(128), 1.0), 0) << "a long backward hides it all";
}

TEST(Zero1Hook, OnlyThePyTorchNativeZero1HasIt) {
  EXPECT_EQ(hook(Framework::Megatron, zero1(128), 0), 0) << "Megatron's distributed optimizer: bucketed, no hook";
  Layout z0 = zero1(128);
  z0.zero_stage = 0;
  EXPECT_EQ(hook(Framework::Torchtitan, z0, 0), 0) << "DDP's all-reduce: no per-rank flattening";
  EXPECT_EQ(hook(Framework::Torchtitan, zero1(1), 0), 0) << "one rank: nothing to scatter";
  EXPECT_GT(hook(Framework::Fsdp, zero1(128), 0), 0) << "control: the other PyTorch-native stack takes it too";
}
