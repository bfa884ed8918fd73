// The tuning log and plan files carry MoE scenarios and expert layouts (scenario_json.cpp): a round trip keeps every
// MoE, MLA and MTP field and ep/etp/dispatcher, so `paratune calibrate` predicts an MoE job again as it was planned;
// dense scenarios and layouts are written as before (no new keys).
#include <gtest/gtest.h>

#include "paratune/advisor/advisor.h"
#include "paratune/tuning/scenario_json.h"

using namespace paratune::advisor;
using namespace paratune::tuning;

TEST(MoeJson, ScenarioAndLayoutRoundTrip) {
  Scenario s;
  s.model = model_preset("deepseek-v3");
  s.model.moe_capacity_factor = 1.5;
  s.training.global_batch = 4096;
  s.training.moe_force_balance = true;
  s.training.moe_a2a_overlap = false;
  s.cluster.gpu = "h100-sxm5-80gb";
  s.cluster.nodes = 64;
  s.cluster.gpus_per_node = 8;
  const Scenario r = scenario_from_json(scenario_to_json(s));
  EXPECT_EQ(r.model.moe_experts, 256);
  EXPECT_EQ(r.model.moe_top_k, 8);
  EXPECT_EQ(r.model.moe_ffn_hidden, 2048);
  EXPECT_EQ(r.model.moe_shared_experts, 1);
  EXPECT_EQ(r.model.moe_dense_layers, 3);
  EXPECT_DOUBLE_EQ(r.model.moe_capacity_factor, 1.5);
  EXPECT_EQ(r.model.moe_router, MoeRouter::AuxLossFree);
  EXPECT_EQ(r.model.q_lora_rank, 1536);
  EXPECT_EQ(r.model.kv_lora_rank, 512);
  EXPECT_EQ(r.model.qk_head_dim, 128);
  EXPECT_EQ(r.model.qk_rope_head_dim, 64);
  EXPECT_EQ(r.model.v_head_dim, 128);
  EXPECT_EQ(r.model.mtp_layers, 1);
  EXPECT_EQ(r.training.moe_force_balance, std::optional<bool>(true));
  EXPECT_EQ(r.training.moe_a2a_overlap, std::optional<bool>(false));
  EXPECT_DOUBLE_EQ(total_params(r.model), total_params(s.model));

  Layout l;
  l.tp = 2; l.pp = 8; l.dp = 32; l.ep = 64; l.etp = 1; l.dispatcher = Dispatcher::Flex;
  const Layout b = layout_from_json(layout_to_json(l));
  EXPECT_EQ(b.ep, 64);
  EXPECT_EQ(b.etp, 1);
  EXPECT_EQ(b.dispatcher, Dispatcher::Flex);
}

TEST(MoeJson, DenseRecordsKeepTheirKeys) {
  Scenario s;
  s.model = model_preset("llama3-8b");
  s.training.global_batch = 256;
  s.cluster.gpu = "h100-sxm5-80gb";
  const auto j = scenario_to_json(s);
  EXPECT_FALSE(j["model"].contains("moe_experts"));
  EXPECT_FALSE(j["model"].contains("head_dim"));
  EXPECT_FALSE(layout_to_json(Layout{}).contains("ep"));
  // Positive control: an MoE layout does carry them.
  Layout l;
  l.ep = 8;
  EXPECT_TRUE(layout_to_json(l).contains("ep"));
  // An older record without the keys reads back as dense with no expert parallelism.
  const Layout old = layout_from_json(nlohmann::json{{"tp", 2}});
  EXPECT_EQ(old.ep, 1);
  EXPECT_EQ(old.dispatcher, Dispatcher::AllToAll);
}

// The memory features of a layout survive the plan's JSON (plan.json, the tuning log's "plan"), so that a logged
// job predicts again as it was planned; a layout without them keeps the old keys only.
TEST(MoeJson, MemoryFeaturesRoundTrip) {
  Layout l;
  l.optimizer_moments = StateDtype::Bf16;
  l.main_params = StateDtype::Fp16;
  l.recompute = Recompute::Selective;
  l.recompute_modules = recompute_module::kCoreAttn | recompute_module::kMlp;
  l.offload_layers = 6;
  const auto j = layout_to_json(l);
  EXPECT_EQ(j["optimizer_moments"], "bf16");
  EXPECT_EQ(j["main_params"], "fp16");
  EXPECT_EQ(j["recompute_modules"], "core_attn,mlp");  // Megatron's names, in its order
  EXPECT_EQ(j["offload_layers"], 6);
  const Layout b = layout_from_json(j);
  EXPECT_EQ(b.optimizer_moments, StateDtype::Bf16);
  EXPECT_EQ(b.main_params, StateDtype::Fp16);
  EXPECT_EQ(b.recompute_modules, l.recompute_modules);
  EXPECT_EQ(b.offload_layers, 6);
  for (const char* key : {"optimizer_moments", "main_params", "recompute_modules", "offload_layers"})
    EXPECT_FALSE(layout_to_json(Layout{}).contains(key)) << key;
  EXPECT_THROW(layout_from_json(nlohmann::json{{"optimizer_moments", "int4"}}), std::invalid_argument);
}
