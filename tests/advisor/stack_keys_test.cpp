// The software stack as an input: [training] attention, fp8_recipe, compile, tp_comm_overlap — parsed, carried
// through the tuning log's JSON, and acting on the terms they name (directions from the cited evidence; the
// magnitudes are documented priors in ModelParams).
#include <gtest/gtest.h>

#include "paratune/advisor/catalog.h"
#include "paratune/advisor/model.h"
#include "paratune/advisor/scenario_toml.h"

using namespace paratune::advisor;

namespace {
Scenario h100(Framework f, int nodes = 1) {
  Scenario s;
  s.model = model_preset("llama3-8b");
  s.training.global_batch = 64;
  s.training.framework = f;
  s.cluster.gpu = "h100-sxm5-80gb";
  s.cluster.nodes = nodes;
  s.cluster.gpus_per_node = 8;
  s.cluster.nvlink_domain = 8;
  return s;
}
double step(const Scenario& s, const Layout& l) { return Evaluator(s, s.training.framework).evaluate(l).step_s; }
Layout dp8() {
  Layout l;
  l.dp = 8;
  l.micro_batch = 1;
  l.zero_stage = 3;
  return l;
}
}  // namespace

TEST(StackKeys, ParsedFromTheScenarioFile) {
  const auto s = parse_scenario_toml(
      "[model]\npreset = \"llama3-8b\"\n[training]\nglobal_batch = 64\nframework = \"torchtitan\"\nprecision = \"fp8\"\n"
      "attention = \"flash3\"\nfp8_recipe = \"rowwise\"\ncompile = true\ntp_comm_overlap = false\n"
      "[cluster]\ngpu = \"h100-sxm5-80gb\"\nnodes = 1\ngpus_per_node = 8\n",
      "s.toml");
  EXPECT_EQ(*s.training.attention, Attention::Flash3);
  EXPECT_EQ(*s.training.fp8_recipe, Fp8Recipe::Rowwise);
  EXPECT_TRUE(*s.training.compile);
  EXPECT_FALSE(*s.training.tp_comm_overlap);
  try {
    parse_scenario_toml("[model]\npreset = \"llama3-8b\"\n[training]\nglobal_batch = 64\nattention = \"sdpa\"\n"
                        "[cluster]\ngpu = \"h100-sxm5-80gb\"\nnodes = 1\ngpus_per_node = 8\n", "bad.toml");
    FAIL() << "an unknown attention kernel was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("bad.toml:5:"), std::string::npos) << e.what();
  }
}

TEST(StackKeys, AttentionKernelAgainstTheFrameworkDefault) {
  Scenario fsdp = h100(Framework::Fsdp);  // default FlashAttention-2 (SDPA)
  Scenario fa3 = fsdp;
  fa3.training.attention = Attention::Flash3;
  Scenario none = fsdp;
  none.training.attention = Attention::None;
  EXPECT_LT(step(fa3, dp8()), step(fsdp, dp8()));
  EXPECT_GT(step(none, dp8()), step(fsdp, dp8()));
  Scenario megatron = h100(Framework::Megatron);  // default cuDNN fused attention: asking for it changes nothing
  Scenario cudnn = megatron;
  cudnn.training.attention = Attention::Cudnn;
  Layout l = dp8();
  l.zero_stage = 1;
  EXPECT_DOUBLE_EQ(step(cudnn, l), step(megatron, l));
  Scenario a100 = fsdp;  // no FlashAttention-3 before Hopper
  a100.cluster.gpu = "a100-sxm4-80gb";
  Scenario a100_fa3 = a100;
  a100_fa3.training.attention = Attention::Flash3;
  EXPECT_DOUBLE_EQ(step(a100_fa3, dp8()), step(a100, dp8()));
}

TEST(StackKeys, Fp8RecipesAndCompile) {
  Scenario tensorwise = h100(Framework::Torchtitan);
  tensorwise.training.precision = Precision::Fp8;
  Scenario rowwise = tensorwise;
  rowwise.training.fp8_recipe = Fp8Recipe::Rowwise;
  Scenario mx = tensorwise;
  mx.training.fp8_recipe = Fp8Recipe::Mxfp8;  // no MXFP8 tensor cores on Hopper
  EXPECT_GT(step(rowwise, dp8()), step(tensorwise, dp8()));
  EXPECT_GT(step(mx, dp8()), step(rowwise, dp8()));
  Scenario compiled = tensorwise;
  compiled.training.compile = true;
  EXPECT_LT(step(compiled, dp8()), step(tensorwise, dp8()));
  Scenario megatron = h100(Framework::Megatron), megatron_compiled = megatron;
  megatron_compiled.training.compile = true;  // Megatron-Core fuses already: no effect
  Layout l = dp8();
  l.zero_stage = 1;
  EXPECT_DOUBLE_EQ(step(megatron_compiled, l), step(megatron, l));
}

TEST(StackKeys, TpCommOverlapOff) {
  Scenario on = h100(Framework::Megatron), off = on;
  off.training.tp_comm_overlap = false;
  Layout l;
  l.tp = 8;
  l.dp = 1;
  l.micro_batch = 1;
  l.sequence_parallel = true;
  EXPECT_GT(step(off, l), step(on, l));
  Layout no_tp = dp8();
  no_tp.zero_stage = 1;
  EXPECT_DOUBLE_EQ(step(off, no_tp), step(on, no_tp));  // control: nothing to overlap without TP
}
