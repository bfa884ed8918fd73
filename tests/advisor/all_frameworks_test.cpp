// --all-frameworks (and a framework list that replaces the scenario's): a framework the scenario itself rules out
// at every layout is not searched and the plan says why; a setting that only some layouts need (tp_comm_overlap,
// which acts at tp > 1) rules no framework out, only those layouts. Facts: DeepSpeed and PyTorch FSDP have no FP8
// setting (versions.cpp stack_problem); TE's userbuffers carry Megatron-Core's TP overlap; torchtitan's async TP
// needs compile ("Async TP requires 'model' in --compile.components").
#include <gtest/gtest.h>

#include "dgx_h100.h"
#include "paratune/advisor/advisor.h"
#include "paratune/advisor/framework_versions.h"

using namespace paratune::advisor;

namespace {

bool mentions(const std::vector<std::string>& notes, const std::string& what) {
  for (const auto& n : notes)
    if (n.find(what) != std::string::npos) return true;
  return false;
}

SearchLimits all_frameworks() {
  SearchLimits l;
  l.all_frameworks = true;
  return l;
}

}  // namespace

TEST(AllFrameworks, TpOverlapRulesOutLayoutsNotFrameworks) {
  // torchtitan with async TP (compiled), on a site without Transformer Engine: Megatron's tp 1 layouts need no TE.
  Scenario s = test_scenarios::on_dgx_h100("llama3-8b", 1, 64);
  s.training.framework = Framework::Torchtitan;
  s.training.compile = true;
  s.training.tp_comm_overlap = true;
  s.cluster.kernels = std::vector<Kernel>{Kernel::FlashAttention3};
  const Plan p = advise(s, all_frameworks());
  EXPECT_FALSE(mentions(p.notes, "megatron not searched")) << "tp_comm_overlap acts at tp > 1 only";
  SearchLimits megatron_only = all_frameworks();
  megatron_only.frameworks = {Framework::Megatron};
  const Plan m = advise(s, megatron_only);
  EXPECT_EQ(m.framework, Framework::Megatron);
  EXPECT_EQ(m.layout.tp, 1) << "control: the layouts that would need TE's TP overlap are the ones dropped";
  EXPECT_LE(p.prediction.step_time_s, m.prediction.step_time_s * (1 + 1e-9)) << "the comparison includes megatron";

  // A Megatron job with TP overlap and no compile: torchtitan's layouts without TP are still searched.
  Scenario t = test_scenarios::on_dgx_h100("llama3-8b", 1, 64);
  t.training.tp_comm_overlap = true;
  const Plan q = advise(t, all_frameworks());
  EXPECT_FALSE(mentions(q.notes, "torchtitan not searched")) << "async TP needs compile only at tp > 1";
}

TEST(AllFrameworks, Fp8RulesOutTheFrameworksWithoutAnFp8Setting) {
  Scenario s = test_scenarios::on_dgx_h100("llama3-8b", 1, 64);
  s.training.precision = Precision::Fp8;
  const Plan p = advise(s, all_frameworks());
  EXPECT_TRUE(mentions(p.notes, "deepspeed not searched: deepspeed")) << "no FP8 setting: not priced as if it had";
  EXPECT_TRUE(mentions(p.notes, "fsdp not searched: fsdp"));
  EXPECT_FALSE(mentions(p.notes, "torchtitan not searched")) << "control: torchtitan trains FP8 (torchao)";
  // The same through a framework list that replaces the scenario's framework (no --all-frameworks).
  SearchLimits ds;
  ds.frameworks = {Framework::DeepSpeed, Framework::Torchtitan};
  const Plan d = advise(s, ds);
  EXPECT_EQ(d.framework, Framework::Torchtitan);
  EXPECT_TRUE(mentions(d.notes, "deepspeed not searched: "));
  // Control: in bf16 nothing is ruled out.
  s.training.precision = Precision::Bf16;
  EXPECT_FALSE(mentions(advise(s, all_frameworks()).notes, "not searched"));
}

// An MoE model in fp16 under Megatron-LM core_v0.14 / core_v0.15: arguments.py asserts bf16 for the experts' grouped
// GEMM and refuses expert parallelism with fp16 (validate_args at both tags; main has neither assert).
TEST(AllFrameworks, Fp16MoeIsRefusedWhereMegatronAssertsIt) {
  Scenario s = test_scenarios::on_dgx_h100("mixtral-8x7b", 4, 256);
  s.training.precision = Precision::Fp16;
  for (const char* version : {"core_v0.15", "core_v0.14"}) {
    s.training.framework_version = version;
    EXPECT_NE(stack_problem(s).find("refuses expert parallelism with fp16"), std::string::npos) << version;
  }
  s.training.framework_version = "main";
  EXPECT_EQ(stack_problem(s), "");
  s.training.framework_version = "core_v0.15";
  s.training.precision = Precision::Bf16;  // control: bf16 MoE is fine
  EXPECT_EQ(stack_problem(s), "");
  s.cluster.gpu = "v100-sxm2-32gb";  // no BF16 there: the way out is another framework
  s.training.precision = Precision::Fp16;
  EXPECT_NE(stack_problem(s).find("use framework=deepspeed or fsdp"), std::string::npos) << stack_problem(s);
  Scenario dense = test_scenarios::on_dgx_h100("llama3-8b", 1, 64);  // control: a dense model in fp16 is fine
  dense.training.precision = Precision::Fp16;
  EXPECT_EQ(stack_problem(dense), "");
}

// FP16 under torchtitan or AutoModel (neither trains it): on a GPU without BF16 (the plan's FP16 fallback) the
// message names the frameworks that train FP16 instead of "use bf16", which the GPU cannot.
TEST(AllFrameworks, Fp16WithoutBf16NamesTheFrameworksThatTrainIt) {
  Scenario s = test_scenarios::on_dgx_h100("llama3-8b", 1, 64);
  s.training.precision = Precision::Fp16;
  for (Framework f : {Framework::Torchtitan, Framework::Automodel}) {
    s.training.framework = f;
    s.cluster.gpu = "v100-sxm2-32gb";
    EXPECT_NE(stack_problem(s).find("has no BF16 tensor cores: use framework=megatron"), std::string::npos)
        << to_string(f) << ": " << stack_problem(s);
    s.cluster.gpu = "h100-sxm5-80gb";  // control: where BF16 exists, bf16 is the way out
    EXPECT_NE(stack_problem(s).find("use bf16"), std::string::npos) << to_string(f) << ": " << stack_problem(s);
  }
}
