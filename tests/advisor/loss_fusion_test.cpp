// The loss kernel (loss_fusion.h): Transformer Engine's fused cross entropy before TE 2.18 keeps only the bf16
// logits (its gradient written into them: transformer_engine/pytorch/triton/cross_entropy.py before PR #3193), TE
// 2.18 keeps an fp32 gradient beside them, the unfused loss an fp32 softmax. Arguments: tests/contracts/
// megatron--*.json (--cross-entropy-loss-fusion, --cross-entropy-fusion-impl choices native|te) and nemo--2.4.json
// (model.config.cross_entropy_loss_fusion / cross_entropy_fusion_impl).
#include <gtest/gtest.h>

#include "dgx_h100.h"
#include "paratune/advisor/advisor.h"
#include "paratune/advisor/framework_args.h"
#include "paratune/advisor/framework_versions.h"
#include "paratune/advisor/loss_fusion.h"
#include "paratune/advisor/model.h"

using namespace paratune::advisor;

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

bool has_line(const std::string& file, const std::string& line) {
  return ("\n" + file).find("\n" + line + "\n") != std::string::npos;
}

bool mentions_te_loss(const std::vector<std::string>& notes) {
  for (const auto& n : notes)
    if (n.find("needs te for the fused loss") != std::string::npos) return true;
  return false;
}

// Llama 3 70B (vocabulary 128256, sequence 8192) on 8 DGX H100 nodes, one pipeline stage: the loss sits on every GPU.
Scenario llama70b(const std::string& te_version) {
  Scenario s = test_scenarios::on_dgx_h100("llama3-70b", 8, 256);
  s.cluster.te_version = te_version;
  return s;
}

Layout fsdp_layout() {
  Layout l;
  l.tp = 4; l.pp = 1; l.dp = 16; l.micro_batch = 1; l.zero_stage = 3;
  return l;
}

}  // namespace

TEST(LossFusion, VersionsParseAsMajorMinor) {
  int major = 0, minor = 0;
  EXPECT_TRUE(parse_te_version("2.14", &major, &minor));
  EXPECT_EQ(major, 2);
  EXPECT_EQ(minor, 14);
  EXPECT_TRUE(parse_te_version("2.18.1", &major, &minor));
  EXPECT_EQ(minor, 18);
  for (const char* bad : {"", "2", "2.", "2.14.", "2.x", "v2.14", "2.14rc1", " 2.14", "-1.2"})
    EXPECT_FALSE(parse_te_version(bad, &major, &minor)) << bad;
}

// Planned where the site states a TE that has the kernel; the framework's own loss where nothing says so.
TEST(LossFusion, PlannedForMegatronCoreWhereTheSiteStatesTe) {
  EXPECT_EQ(planned_loss_fusion(llama70b("2.14"), Framework::Megatron), LossFusion::Te);
  EXPECT_EQ(planned_loss_fusion(llama70b("2.14"), Framework::Nemo), LossFusion::Te);
  EXPECT_EQ(planned_loss_fusion(llama70b(""), Framework::Megatron), LossFusion::Off) << "TE's version not stated";
  EXPECT_EQ(planned_loss_fusion(llama70b("2.1"), Framework::Megatron), LossFusion::Off) << "before parallel_cross_entropy";
  EXPECT_EQ(planned_loss_fusion(llama70b("2.14"), Framework::Fsdp), LossFusion::Off) << "not a Megatron-Core setting";
  Scenario no_te = llama70b("2.14");
  no_te.cluster.kernels = std::vector<Kernel>{};
  EXPECT_EQ(planned_loss_fusion(no_te, Framework::Megatron), LossFusion::Off) << "the site says TE is missing";
  Scenario stated = llama70b("");
  stated.training.cross_entropy_fusion = LossFusion::Native;
  EXPECT_EQ(planned_loss_fusion(stated, Framework::Megatron), LossFusion::Native);
}

// The logits term: tokens of one micro-batch x vocabulary / TP x bytes per entry (2 in place, 6 otherwise).
TEST(LossFusion, TeBefore218KeepsOnlyTheBf16Logits) {
  const Layout l = fsdp_layout();
  const double entries = 1.0 * 8192 * 128256 / 4;
  const auto logits_gib = [&](const Scenario& s) { return Evaluator(s, Framework::Megatron).evaluate(l).mem.logits; };
  EXPECT_NEAR(logits_gib(llama70b("2.14")) * kGiB, 2 * entries, 1.0);
  EXPECT_NEAR(logits_gib(llama70b("2.18")) * kGiB, 6 * entries, 1.0) << "TE 2.18 keeps the gradient in fp32";
  EXPECT_NEAR(logits_gib(llama70b("")) * kGiB, 6 * entries, 1.0) << "control: the unfused loss's fp32 softmax";
  Scenario native = llama70b("2.14");
  native.training.cross_entropy_fusion = LossFusion::Native;
  EXPECT_NEAR(logits_gib(native) * kGiB, 6 * entries, 1.0) << "Megatron's native kernel keeps its fp32 exp_logits";
  EXPECT_LT(Evaluator(llama70b("2.14"), Framework::Megatron).evaluate(l).mem_gib,
            Evaluator(llama70b(""), Framework::Megatron).evaluate(l).mem_gib);
}

TEST(LossFusion, EmittedInEachFrameworksOwnTerms) {
  const Scenario s = llama70b("2.14");
  const Plan p = advise(s);
  const std::string mega = framework_args(s, p).files[0].content;
  EXPECT_TRUE(has_line(mega, "--cross-entropy-loss-fusion"));
  EXPECT_TRUE(has_line(mega, "--cross-entropy-fusion-impl=te"));
  EXPECT_TRUE(mentions_te_loss(framework_args(s, p).notes)) << "the plan says it needs TE for it";

  const Scenario plain = llama70b("");
  EXPECT_EQ(framework_args(plain, advise(plain)).files[0].content.find("cross-entropy"), std::string::npos)
      << "control: nothing stated, Megatron's default loss";

  Scenario nemo = llama70b("2.14");
  nemo.training.framework = Framework::Nemo;
  const std::string args = framework_args(nemo, advise(nemo)).files[0].content;
  EXPECT_TRUE(has_line(args, "model.config.cross_entropy_loss_fusion=true"));
  EXPECT_TRUE(has_line(args, "model.config.cross_entropy_fusion_impl=te"));
  nemo.training.cross_entropy_fusion = LossFusion::Off;
  EXPECT_TRUE(has_line(framework_args(nemo, advise(nemo)).files[0].content, "model.config.cross_entropy_loss_fusion=false"))
      << "stated off is said, since a NeMo recipe may fuse";
}

TEST(LossFusion, RefusedWhereTheFrameworkOrSiteCannotRunIt) {
  Scenario fsdp = llama70b("2.14");
  fsdp.training.framework = Framework::Fsdp;
  fsdp.training.cross_entropy_fusion = LossFusion::Te;
  EXPECT_NE(stack_problem(fsdp).find("cross_entropy_fusion is Megatron-Core's"), std::string::npos);
  Scenario no_te = llama70b("");
  no_te.training.cross_entropy_fusion = LossFusion::Te;
  EXPECT_EQ(stack_problem(no_te), "") << "control: TE's presence not denied";
  no_te.cluster.kernels = std::vector<Kernel>{};
  EXPECT_NE(stack_problem(no_te).find("needs Transformer Engine"), std::string::npos);
  Scenario old_te = llama70b("2.1");
  old_te.training.cross_entropy_fusion = LossFusion::Te;
  EXPECT_NE(stack_problem(old_te).find("2.2 or later"), std::string::npos);
}
