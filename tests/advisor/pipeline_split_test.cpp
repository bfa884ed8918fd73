// Pipeline stage splits and the ZeRO-1 parameter gather: equal layer counts (Megatron's default and its account-for-embedding/loss rule) and
// nanotron's cost-balanced assignment. The balanced expectations come from running nanotron's own loop
// (src/nanotron/models/base.py build_model, costs from models/llama.py get_block_compute_costs, at commit 2411b02)
// on each model's published dimensions, not from this code.
#include <gtest/gtest.h>

#include <numeric>

#include "dgx_h100.h"
#include "paratune/advisor/advisor.h"
#include "paratune/advisor/catalog.h"
#include "paratune/advisor/framework_args.h"
#include "paratune/advisor/model.h"
#include "paratune/advisor/scenario_toml.h"

using namespace paratune::advisor;

namespace {
// Llama 3.2 1B (the Ultra-Scale Playbook sweep's model): 16 layers, hidden 2048, 32 heads (8 KV), FFN 8192,
// vocabulary 128,256 (its Hugging Face config.json).
ModelSpec llama32_1b() {
  ModelSpec m = model_preset("llama3-8b");
  m.name = "llama3.2-1b";
  m.layers = 16;
  m.hidden = 2048;
  m.heads = 32;
  m.kv_heads = 8;
  m.ffn_hidden = 8192;
  m.seq_len = 4096;
  return m;
}
// Llama 3 8B, 256 sequences a step, on DGX H100 nodes (8 x 400 Gb/s NICs).
Scenario llama3_8b_on_h100(int nodes) { return test_scenarios::on_dgx_h100("llama3-8b", nodes, 256); }
}  // namespace

TEST(PipelineSplit, NanotronBalancesTheLmHeadOfASmallModel) {
  const ModelSpec m = llama32_1b();
  // The LM head (V h = 263 M) weighs 3.9 layers (4 h^2 + 3 f h = 67 M): nanotron takes layers off the last rank.
  EXPECT_EQ(pipeline_stages(m, PipelineSplit::Balanced, 2).layers, (std::vector<int>{10, 6}));
  EXPECT_EQ(pipeline_stages(m, PipelineSplit::Balanced, 4).layers, (std::vector<int>{5, 5, 5, 1}));
  const StageSplit eight = pipeline_stages(m, PipelineSplit::Balanced, 8);
  EXPECT_EQ(eight.layers, (std::vector<int>{3, 2, 3, 2, 3, 2, 1, 0}));
  EXPECT_EQ(eight.head_rank, 6);  // the last rank keeps only the fp32 cast and the loss
  // Llama 3 8B, whose head weighs less than 1.2 layers.
  const ModelSpec l8 = model_preset("llama3-8b");
  EXPECT_EQ(pipeline_stages(l8, PipelineSplit::Balanced, 4).layers, (std::vector<int>{9, 9, 8, 6}));
  EXPECT_EQ(pipeline_stages(l8, PipelineSplit::Balanced, 8).layers, (std::vector<int>{5, 4, 4, 5, 4, 4, 4, 2}));
  for (int pp : {2, 4, 8}) {
    const auto v = pipeline_stages(m, PipelineSplit::Balanced, pp).layers;
    EXPECT_EQ(std::accumulate(v.begin(), v.end(), 0), m.layers) << "pp " << pp;
  }
}

TEST(PipelineSplit, EqualLayerCounts) {
  const ModelSpec m = llama32_1b();
  EXPECT_EQ(pipeline_stages(m, PipelineSplit::Layers, 4).layers, (std::vector<int>{4, 4, 4, 4}));
  EXPECT_EQ(pipeline_stages(m, PipelineSplit::Layers, 4).head_rank, 3);
  // Llama 3.1 405B on 8 stages: 126 + 2 = 128 divides by 8 (Megatron --account-for-embedding/loss-in-pipeline-split).
  EXPECT_EQ(pipeline_stages(model_preset("llama3.1-405b"), PipelineSplit::Layers, 8).layers,
            (std::vector<int>{15, 16, 16, 16, 16, 16, 16, 15}));
}

// The balanced split changes the prediction where it changes the bottleneck stage: with the head on a rank of its
// own the last stage is no longer the slowest (Playbook sweep, 1 node, dp2 pp4: measured as fast as pp2).
TEST(PipelineSplit, BalancedStagesShortenTheBottleneck) {
  Scenario s;
  s.model = llama32_1b();
  s.training.global_batch = 256;
  s.training.framework = Framework::Torchtitan;
  s.cluster.gpu = "h100-sxm5-80gb";
  s.cluster.gpus_per_node = 8;
  s.cluster.nvlink_domain = 8;
  Layout l;
  l.pp = 4;
  l.dp = 2;
  l.micro_batch = 1;
  l.zero_stage = 1;
  const double layers_step = Evaluator(s, s.training.framework).evaluate(l).step_s;
  s.training.pipeline_split = PipelineSplit::Balanced;
  const double balanced_step = Evaluator(s, s.training.framework).evaluate(l).step_s;
  EXPECT_LT(balanced_step, 0.9 * layers_step);
  l.pp = 1;
  l.dp = 8;  // positive control: without a pipeline the split changes nothing
  const double flat = Evaluator(s, s.training.framework).evaluate(l).step_s;
  s.training.pipeline_split = PipelineSplit::Layers;
  EXPECT_DOUBLE_EQ(Evaluator(s, s.training.framework).evaluate(l).step_s, flat);
}

TEST(PipelineSplit, ParsedFromTheScenarioFile) {
  const char* base = "[model]\npreset = \"llama3-8b\"\n[training]\nglobal_batch = 64\npipeline_split = \"%s\"\n"
                     "[cluster]\ngpu = \"h100-sxm5-80gb\"\nnodes = 1\ngpus_per_node = 8\n";
  char text[512];
  std::snprintf(text, sizeof text, base, "balanced");
  EXPECT_EQ(*parse_scenario_toml(text, "s.toml").training.pipeline_split, PipelineSplit::Balanced);
  std::snprintf(text, sizeof text, base, "zigzag");
  try {
    parse_scenario_toml(text, "bad.toml");
    FAIL() << "an unknown pipeline split was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("bad.toml:5:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("layers, balanced"), std::string::npos) << e.what();
  }
}

// ZeRO-1's all-gather of the updated parameters: behind the next forward (Megatron --overlap-param-gather), or after
// the optimizer step with nothing to hide behind (DeepSpeed ZeRO-1/2, nanotron's ZeroDistributedOptimizer.step).
// Exposed, it costs at least the whole gather; ZeRO-0 has none to expose (the control).
TEST(ParamGather, AfterTheStepIsExposed) {
  Scenario s = llama3_8b_on_h100(16);
  Layout l;
  l.tp = 4;
  l.dp = 32;
  l.micro_batch = 1;
  l.zero_stage = 1;
  l.sequence_parallel = true;
  auto dp_exposed = [&](std::optional<bool> overlap) {
    s.training.overlap_param_gather = overlap;
    return Evaluator(s, Framework::Megatron).evaluate(l).br.dp_comm_exposed;
  };
  const double hidden = dp_exposed(std::nullopt), after_step = dp_exposed(false);
  EXPECT_DOUBLE_EQ(dp_exposed(true), hidden);  // the default is the overlapped gather
  // 8B / tp 4 = 2e9 parameters, 4 GB in bf16, gathered by each of the 4 DP groups (one per TP rank, 2 GPUs per
  // node) over 16 nodes: 15/16 of 4 GB enters every node once per group, 15 GB through 8 x 400 Gb/s = 400 GB/s,
  // so the gather alone takes no less than 37.5 ms at line rate.
  EXPECT_GE(after_step, 0.0375) << "hidden: " << hidden;
  EXPECT_GT(after_step, hidden);
  l.zero_stage = 0;
  EXPECT_DOUBLE_EQ(dp_exposed(false), dp_exposed(true));
}

// The framework's own default and its arguments follow the same switch: DeepSpeed has only the exposed gather;
// Megatron's --overlap-param-gather is emitted unless the scenario turns the overlap off.
TEST(ParamGather, DefaultsAndMegatronArguments) {
  Scenario s = llama3_8b_on_h100(4);
  Plan p;
  p.framework = Framework::Megatron;
  p.layout.tp = 1; p.layout.dp = 32; p.layout.micro_batch = 1; p.layout.zero_stage = 1;
  auto dp_exposed = [&](Framework f) { return Evaluator(s, f).evaluate(p.layout).br.dp_comm_exposed; };
  const double megatron = dp_exposed(Framework::Megatron), deepspeed = dp_exposed(Framework::DeepSpeed);
  EXPECT_GT(deepspeed, megatron);
  s.training.overlap_param_gather = true;  // DeepSpeed told otherwise: the model follows the scenario
  EXPECT_DOUBLE_EQ(dp_exposed(Framework::DeepSpeed), megatron);
  const auto args = [&] { return framework_args(s, p).files.at(0).content; };
  EXPECT_NE(args().find("--overlap-param-gather"), std::string::npos) << args();
  s.training.overlap_param_gather = false;
  EXPECT_EQ(args().find("--overlap-param-gather"), std::string::npos) << args();
  EXPECT_NE(args().find("--overlap-grad-reduce"), std::string::npos) << args();  // the control: still overlapped
}

namespace {

// DeepSeek-V3 on H100 (Megatron, FP8, 1024 GPUs: 128 nodes of 8, 8 x 400G NICs).
paratune::advisor::Scenario dsv3_on_1024_h100() {
  using namespace paratune::advisor;
  Scenario s;
  s.model = model_preset("deepseek-v3");
  s.training.global_batch = 4096;
  s.training.precision = Precision::Fp8;
  s.training.framework = Framework::Megatron;
  s.cluster.gpu = "h100-sxm5-80gb";
  s.cluster.nodes = 128;
  s.cluster.gpus_per_node = 8;
  s.cluster.nic_count = 8;
  s.cluster.nic_gbps = 400;
  return s;
}

// ... with a pipeline of p ranks and v chunks, its stages planned.
paratune::advisor::Layout dsv3_planned(int pp, int v, int* layers_total) {
  using namespace paratune::advisor;
  const Scenario s = dsv3_on_1024_h100();
  Layout l;
  l.tp = 2; l.pp = pp; l.virtual_stages = v; l.ep = 64; l.dp = 1024 / (2 * pp); l.micro_batch = 1;
  l.zero_stage = 1; l.sequence_parallel = true; l.recompute = Recompute::Selective; l.dispatcher = Dispatcher::Flex;
  *layers_total = s.model.layers;
  return Evaluator(s, Framework::Megatron).with_planned_stages(l);
}

}  // namespace

// NVIDIA's own DeepSeek-V3 layouts (Megatron-Bridge recipes/deepseek/h100/deepseek_v3.py,
// _get_deepseek_v3_pipeline_layout): pp 4 -> 16|16|16|13+MTP+loss, pp 8 -> 8|8x6|5+MTP+loss, pp 16 -> 4|4x14|1+MTP+loss
// (the embedding costs the first rank nothing worth a layer; MTP and the loss about three). The planned split lands
// within a layer of them.
TEST(PlannedStages, DeepSeekV3AsNvidiasRecipes) {
  struct Recipe { int pp, first, last; };
  for (const Recipe& r : {Recipe{4, 16, 13}, Recipe{8, 8, 5}, Recipe{16, 4, 1}}) {
    int L = 0;
    const auto l = dsv3_planned(r.pp, 1, &L);
    EXPECT_NEAR(l.first_stage_layers, r.first, 1) << "pp " << r.pp;
    EXPECT_NEAR(l.last_stage_layers, r.last, 1) << "pp " << r.pp;
    EXPECT_LE(l.first_stage_layers + l.last_stage_layers, L - (r.pp - 2)) << "pp " << r.pp;
  }
}

// A planned split is never slower than the framework's own, and a model without a heavy head keeps equal counts.
TEST(PlannedStages, NeverSlowerThanTheDefaultSplit) {
  using namespace paratune::advisor;
  for (const char* preset : {"llama3-70b", "gpt3-175b", "deepseek-v3", "qwen3-235b-a22b"}) {
    Scenario s;
    s.model = model_preset(preset);
    s.training.global_batch = 1024;
    s.training.framework = Framework::Megatron;
    s.cluster.gpu = "h100-sxm5-80gb";
    s.cluster.nodes = 32;
    s.cluster.gpus_per_node = 8;
    s.cluster.nic_count = 8;
    s.cluster.nic_gbps = 400;
    const Evaluator ev(s, Framework::Megatron);
    for (int pp : {2, 4, 8}) {
      Layout l;
      l.tp = 8; l.pp = pp; l.dp = 256 / (8 * pp); l.micro_batch = 1; l.zero_stage = 1;
      l.sequence_parallel = true; l.recompute = Recompute::Selective;
      if (s.model.is_moe()) { l.ep = 8; l.etp = 1; }
      const Layout planned = ev.with_planned_stages(l);
      ASSERT_GT(planned.first_stage_layers, 0) << preset << " pp " << pp;
      EXPECT_LE(ev.evaluate(planned).step_s, ev.evaluate(l).step_s * (1 + 1e-9)) << preset << " pp " << pp;
    }
  }
}

// advise balances the stages of Megatron and NeMo and the arguments carry the split: DeepSeek-V3 with pp 8 on H100
// gets NVIDIA's own layout for it (Megatron-Bridge _get_deepseek_v3_pipeline_layout: the embedding and 8 layers,
// 8 on each of the six middle ranks, 5 with MTP and the loss), and the plan's notes say so.
TEST(PlannedStages, AdviseEmitsTheBalancedLayout) {
  Scenario s = dsv3_on_1024_h100();
  s.parallel.pp = 8;
  s.parallel.virtual_stages = 1;
  const Plan p = advise(s);
  ASSERT_EQ(p.layout.first_stage_layers, 8);
  ASSERT_EQ(p.layout.last_stage_layers, 5);
  const std::string args = framework_args(s, p).files.at(0).content;
  const std::string t8(8, 't');
  std::string want = "--pipeline-model-parallel-layout=E" + t8;
  for (int i = 0; i < 6; ++i) want += "|" + t8;
  want += "|tttttmL\n";
  EXPECT_NE(args.find(want), std::string::npos) << args;
  EXPECT_EQ(args.find("--account-for-embedding-in-pipeline-split"), std::string::npos);
  bool noted = false;
  for (const auto& n : p.notes) noted |= n.find("pipeline stages balanced by cost: 8 layers") != std::string::npos;
  EXPECT_TRUE(noted);
  // A layout the scenario fixes is kept as given, and predict prices it.
  Scenario fixed = s;
  fixed.parallel.first_stage_layers = 9;
  fixed.parallel.last_stage_layers = 4;
  const Plan q = advise(fixed);
  EXPECT_EQ(q.layout.first_stage_layers, 9);
  EXPECT_EQ(q.layout.last_stage_layers, 4);
}
