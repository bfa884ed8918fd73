// "Nothing fits" names the obstacle (obstacle.h): when no layout is valid at all, the message says whether the
// framework refuses the layout the user asked for (and which framework runs it), which divisibility rule every layout
// breaks, or that the search limits excluded the valid ones — never a checklist, never a memory figure.
#include <gtest/gtest.h>

#include <string>

#include "paratune/advisor/advisor.h"

using namespace paratune::advisor;

namespace {

Scenario llama8b_on_8(Framework f) {
  Scenario s;
  s.model = model_preset("llama3-8b");  // 32 heads, 8 KV heads: tp 8 divides both
  s.training.framework = f;
  s.training.global_batch = 64;
  s.cluster.gpu = "h100-sxm5-80gb";
  s.cluster.nodes = 1;
  s.cluster.gpus_per_node = 8;
  s.cluster.nvlink_domain = 8;
  return s;
}

std::string nothing_fits(const Scenario& s, const SearchLimits& limits = {}) {
  try {
    advise(s, limits);
  } catch (const NothingFits& e) {
    return e.what();
  }
  return "(a plan)";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

// Plain DeepSpeed has no tensor parallelism (AutoTP aside; Megatron-DeepSpeed has it): tp = 8 is the framework's
// obstacle, and Megatron runs the same layout — which the control checks by advising it.
TEST(Obstacle, PlainDeepSpeedWithTensorParallelism) {
  Scenario s = llama8b_on_8(Framework::DeepSpeed);
  s.parallel.tp = 8;
  const std::string msg = nothing_fits(s);
  EXPECT_TRUE(has(msg, "nothing fits: no valid layout for these constraints: the framework: deepspeed cannot run tp=8"))
      << msg;
  EXPECT_TRUE(has(msg, "megatron")) << msg;
  EXPECT_FALSE(has(msg, "GiB")) << "memory is not the obstacle: " << msg;
  Scenario m = s;
  m.training.framework = Framework::Megatron;
  EXPECT_EQ(advise(m).layout.tp, 8) << "positive control: megatron does run it";
}

// torchtitan replicates with DDP only without model parallelism: zero_stage 0 with tp 2 is refused.
TEST(Obstacle, TorchtitanDdpWithTensorParallelism) {
  Scenario s = llama8b_on_8(Framework::Torchtitan);
  s.parallel.tp = 2;
  s.parallel.zero_stage = 0;
  const std::string msg = nothing_fits(s);
  EXPECT_TRUE(has(msg, "the framework: torchtitan cannot run tp=2")) << msg;
  EXPECT_TRUE(has(msg, "megatron runs it")) << msg;
  Scenario m = s;
  m.training.framework = Framework::Megatron;
  EXPECT_NO_THROW(advise(m)) << "positive control: megatron does run it";
}

// A global batch that no data-parallel degree the constraints allow divides: every framework refuses it, so the
// message names the rule and the layout, not a framework.
TEST(Obstacle, DivisibilityNamesTheRule) {
  Scenario s = llama8b_on_8(Framework::Megatron);
  s.training.global_batch = 12;
  s.parallel.tp = 1;
  s.parallel.pp = 1;
  s.parallel.cp = 1;  // dp = 8, which does not divide 12
  const std::string msg = nothing_fits(s);
  EXPECT_TRUE(has(msg, "tp=1 pp=1 cp=1 dp=8")) << msg;
  EXPECT_TRUE(has(msg, "must divide global_batch (12)")) << msg;
  EXPECT_FALSE(has(msg, "the framework:")) << msg;
  s.training.global_batch = 16;
  EXPECT_NO_THROW(advise(s)) << "positive control: a batch dp divides plans";
}

// Valid layouts exist but the limits (here a micro-batch floor above every replica's share) exclude them all.
TEST(Obstacle, LimitsExcludedEveryValidLayout) {
  const Scenario s = llama8b_on_8(Framework::Megatron);
  SearchLimits limits;
  limits.min_micro_batch = 128;  // more than the whole global batch (64)
  const std::string msg = nothing_fits(s, limits);
  EXPECT_TRUE(has(msg, "every valid layout is outside the search limits")) << msg;
  EXPECT_NO_THROW(advise(s)) << "positive control: without the limit it plans";
}
