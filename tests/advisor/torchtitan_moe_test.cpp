// torchtitan's expert-parallel dispatchers at the pinned versions (v0.2.2: [parallelism]
// expert_parallel_comm_backend = "standard" | "deepep", tests/contracts/torchtitan--v0.2.json, read by
// models/deepseek_v3 and models/llama4 infra/parallelize.py, which raise for expert TP; main b5bcd76c: the
// model_registry(moe_comm_backend=...) of deepseek_v3, qwen3, gpt_oss and kimi_k2_7, "deepep" or "hybridep").
#include <gtest/gtest.h>

#include <algorithm>

#include "dgx_h100.h"
#include "paratune/advisor/advisor.h"
#include "paratune/advisor/framework_args.h"

using namespace paratune::advisor;
using test_scenarios::on_dgx_h100;

namespace {

Scenario torchtitan_moe(const char* preset, const char* version, int ep, int etp = 1, int tp = 1) {
  Scenario s = on_dgx_h100(preset, 8, 512);
  s.training.framework = Framework::Torchtitan;
  s.training.framework_version = version;
  s.parallel.tp = tp;
  s.parallel.pp = 1;
  s.parallel.cp = 1;
  s.parallel.ep = ep;
  s.parallel.etp = etp;
  s.parallel.zero_stage = 3;
  s.parallel.micro_batch = 1;
  s.parallel.dispatcher = Dispatcher::Flex;
  return s;
}

std::string problem(const Scenario& s) { return layout_problem(s, layout_from_scenario(s), s.training.framework); }

std::string all_text(const FrameworkArgs& a) {
  std::string text;
  for (const auto& f : a.files) text += f.content;
  for (const auto& n : a.notes) text += n + "\n";
  return text;
}

FrameworkArgs args_for(const Scenario& s) {
  Plan p;
  p.framework = s.training.framework;
  p.layout = layout_from_scenario(s);
  return framework_args(s, p, Launch{"node-0", "29500", "1"});
}

}  // namespace

TEST(TorchtitanMoe, V02RunsDeepEpForDeepSeekV3) {
  const Scenario s = torchtitan_moe("deepseek-v3", "v0.2", 8);
  EXPECT_EQ(problem(s), "");
  EXPECT_NE(all_text(args_for(s)).find("expert_parallel_comm_backend = \"deepep\""), std::string::npos);
  Scenario standard = s;  // control: the plain all-to-all writes no backend (torchtitan's default, "standard")
  standard.parallel.dispatcher = Dispatcher::AllToAll;
  EXPECT_EQ(all_text(args_for(standard)).find("expert_parallel_comm_backend"), std::string::npos);
}

TEST(TorchtitanMoe, V02RefusesDeepEpWhereTheModelIgnoresIt) {
  const std::string why = problem(torchtitan_moe("qwen3-30b-a3b", "v0.2", 8));
  EXPECT_NE(why.find("read only by the deepseek_v3 and llama4 models"), std::string::npos) << why;
  // main builds the dispatcher in qwen3's model_registry: accepted there, and the plan says where to set it.
  const Scenario main = torchtitan_moe("qwen3-30b-a3b", "main", 8);
  EXPECT_EQ(problem(main), "");
  EXPECT_NE(all_text(args_for(main)).find("moe_comm_backend="), std::string::npos);
}

TEST(TorchtitanMoe, V02RefusesDeepEpWithExpertTensorParallelism) {
  const std::string why = problem(torchtitan_moe("deepseek-v3", "v0.2", 8, 2, 2));
  EXPECT_NE(why.find("DeepEP with Expert Tensor Parallelism (ETP) is not supported yet"), std::string::npos) << why;
  EXPECT_EQ(problem(torchtitan_moe("deepseek-v3", "v0.2", 8, 1, 2)), "");  // control: expert TP 1
}

TEST(TorchtitanMoe, NoAllGatherDispatcher) {
  Scenario s = torchtitan_moe("deepseek-v3", "v0.2", 8);
  s.parallel.dispatcher = Dispatcher::AllGather;
  EXPECT_NE(problem(s).find("torchtitan"), std::string::npos);
}

TEST(TorchtitanMoe, DispatchesBf16EvenInFp8Runs) {
  // DeepEP's FP8 dispatch is Megatron-Core's; torchtitan's DeepEP path sends BF16 rows (use_fp8_dispatch False):
  // FP8 training leaves its all-to-all time where BF16 has it, where Megatron's drops (control).
  auto ep_comm = [](Framework f, Precision p) {
    Scenario s = torchtitan_moe("deepseek-v3", f == Framework::Torchtitan ? "main" : "core_v0.15", 8);
    s.training.framework = f;
    s.training.precision = p;
    if (p == Precision::Fp8 && f == Framework::Torchtitan) s.training.fp8_recipe = Fp8Recipe::Tensorwise;
    if (f != Framework::Torchtitan) s.parallel.zero_stage = 1;
    return predict(s).breakdown.ep_comm;
  };
  EXPECT_DOUBLE_EQ(ep_comm(Framework::Torchtitan, Precision::Fp8), ep_comm(Framework::Torchtitan, Precision::Bf16));
  EXPECT_LT(ep_comm(Framework::Megatron, Precision::Fp8), ep_comm(Framework::Megatron, Precision::Bf16));
}

TEST(TorchtitanMoe, SearchPlansDeepEpWhenAsked) {
  // The dispatcher fixed to flex, the rest left to the search: a torchtitan DeepEP plan (refused before v0.2.2's
  // backend key was known).
  Scenario s = on_dgx_h100("deepseek-v3", 32, 1024);
  s.training.framework = Framework::Torchtitan;
  s.training.framework_version = "v0.2";
  s.parallel.dispatcher = Dispatcher::Flex;
  const Plan p = advise(s);
  EXPECT_EQ(p.framework, Framework::Torchtitan);
  EXPECT_EQ(p.layout.dispatcher, Dispatcher::Flex);
  EXPECT_GT(p.layout.ep, 1);
  EXPECT_EQ(p.layout.etp, 1);
}

// torchtitan folds ep x etp into the sharded data-parallel ranks (parallel_dims.py at v0.2.2 and main:
// dp_shard * cp * tp / (etp * ep)): with ZeRO 0 (replication only, dp_shard 1) an ep of 8 cannot be built.
TEST(TorchtitanMoe, ExpertsNeedShardedDataParallelRanks) {
  for (const char* version : {"v0.2", "main"}) {
    Scenario s = torchtitan_moe("qwen3-30b-a3b", version, 8);
    s.parallel.dispatcher = Dispatcher::AllToAll;
    s.parallel.zero_stage = 0;
    EXPECT_NE(problem(s).find("expert mesh needs ep * etp (8) to divide"), std::string::npos) << version << ": "
                                                                                              << problem(s);
    s.parallel.zero_stage = 3;  // control: sharded, the same layout builds
    EXPECT_EQ(problem(s), "") << version;
  }
}

// ZeRO-3 with a pipeline: torchtitan's default keeps gathered parameters from forward to backward when pp > 1
// (reshard_after_forward = not pp_enabled); the plan prices resharding, so the arguments ask for "always".
TEST(TorchtitanMoe, PipelinedZero3ReshardsAfterForward) {
  Scenario s = on_dgx_h100("llama3-8b", 4, 256);
  s.training.framework = Framework::Torchtitan;
  s.parallel.tp = 1; s.parallel.pp = 2; s.parallel.cp = 1; s.parallel.zero_stage = 3; s.parallel.micro_batch = 1;
  s.training.framework_version = "v0.2";
  EXPECT_NE(all_text(args_for(s)).find("fsdp_reshard_after_forward = \"always\""), std::string::npos);
  s.training.framework_version = "main";
  EXPECT_NE(all_text(args_for(s)).find("--parallelism.fsdp_reshard_after_forward=always"), std::string::npos);
  s.parallel.pp = 1;  // control: without a pipeline torchtitan's default already reshards
  EXPECT_EQ(all_text(args_for(s)).find("fsdp_reshard_after_forward"), std::string::npos);
}

// The MoE presets torchtitan v0.2.2 ships get their [model] name and flavor (models/<name>/__init__.py there); a
// preset it does not ship is said so.
TEST(TorchtitanMoe, ShippedMoePresetsNameTheirModel) {
  const std::pair<const char*, const char*> shipped[] = {{"qwen3-30b-a3b", "name = \"qwen3\"\nflavor = \"30B-A3B\""},
                                                         {"deepseek-v3", "name = \"deepseek_v3\"\nflavor = \"671B\""}};
  for (const auto& [preset, model] : shipped) {
    Scenario s = torchtitan_moe(preset, "v0.2", 8);
    s.parallel.dispatcher = Dispatcher::AllToAll;
    EXPECT_NE(all_text(args_for(s)).find(model), std::string::npos) << preset << ": " << all_text(args_for(s));
  }
  Scenario m = torchtitan_moe("mixtral-8x7b", "v0.2", 8);  // control: not a torchtitan model
  m.parallel.dispatcher = Dispatcher::AllToAll;
  EXPECT_NE(all_text(args_for(m)).find("is not a torchtitan model preset"), std::string::npos);
}
