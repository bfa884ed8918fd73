// The loss kernel (loss_fusion.h): Transformer Engine's fused cross entropy before TE 2.18 keeps only the bf16
// logits (its gradient written into them: transformer_engine/pytorch/triton/cross_entropy.py before PR #3193), TE
// 2.18 keeps an fp32 gradient beside them, the unfused loss an fp32 softmax. A stated fact, never a default:
// Megatron-LM main refuses TE's kernel (arguments.py, rule te_cross_entropy_rejected in
// tests/contracts/megatron--main.json). Arguments: tests/contracts/megatron--*.json (--cross-entropy-loss-fusion,
// --cross-entropy-fusion-impl choices native|te) and nemo--2.4.json (model.config.cross_entropy_loss_fusion /
// cross_entropy_fusion_impl).
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

bool mentions(const std::vector<std::string>& notes, const std::string& what) {
  for (const auto& n : notes)
    if (n.find(what) != std::string::npos) return true;
  return false;
}

// Llama 3 70B (vocabulary 128256, sequence 8192) on 8 DGX H100 nodes; `te` states TE's fused loss.
Scenario llama70b(const std::string& te_version, bool te = true) {
  Scenario s = test_scenarios::on_dgx_h100("llama3-70b", 8, 256);
  s.cluster.te_version = te_version;
  if (te) s.training.cross_entropy_fusion = LossFusion::Te;
  return s;
}

// One pipeline stage: the loss sits on every GPU, its logits split by TP 4.
Layout fsdp_layout() {
  Layout l;
  l.tp = 4; l.pp = 1; l.dp = 16; l.micro_batch = 1; l.zero_stage = 3;
  return l;
}

double logits_bytes(const Scenario& s, const Layout& l) {
  return Evaluator(s, Framework::Megatron).evaluate(l).mem.logits * kGiB;
}

}  // namespace

TEST(LossFusion, VersionsParseAsMajorMinor) {
  int major = 0, minor = 0;
  EXPECT_TRUE(parse_te_version("2.14", &major, &minor));
  EXPECT_EQ(major, 2);
  EXPECT_EQ(minor, 14);
  EXPECT_TRUE(parse_te_version("2.18.1", &major, &minor));
  EXPECT_EQ(minor, 18);
  EXPECT_TRUE(parse_te_version("2.5.0+f05f12c", &major, &minor)) << "NGC's transformer_engine.__version__";
  EXPECT_EQ(minor, 5);
  for (const char* bad : {"", "2", "2.", "2.14.", "2.x", "v2.14", "2.14rc1", " 2.14", "-1.2", "2.+14", "2. 14",
                          "2.-1", "2.14+", "2.14.1.2", "1234567.1"})
    EXPECT_FALSE(parse_te_version(bad, &major, &minor)) << bad;
}

// Never a default: the site stating its TE version changes nothing until the scenario states the kernel.
TEST(LossFusion, OnlyAStatedKernelIsPlanned) {
  EXPECT_EQ(planned_loss_fusion(llama70b("2.14", false)), LossFusion::Off);
  EXPECT_EQ(planned_loss_fusion(llama70b("2.14")), LossFusion::Te);
  Scenario native = llama70b("");
  native.training.cross_entropy_fusion = LossFusion::Native;
  EXPECT_EQ(planned_loss_fusion(native), LossFusion::Native);
}

// The logits term: tokens of one micro-batch x vocabulary / TP x bytes per entry (2 in place, 6 otherwise).
TEST(LossFusion, TeBefore218KeepsOnlyTheBf16Logits) {
  const Layout l = fsdp_layout();
  const double entries = 1.0 * 8192 * 128256 / 4;
  EXPECT_NEAR(logits_bytes(llama70b("2.14"), l), 2 * entries, 1.0);
  EXPECT_NEAR(logits_bytes(llama70b("2.18"), l), 6 * entries, 1.0) << "TE 2.18 keeps the gradient in fp32";
  EXPECT_NEAR(logits_bytes(llama70b(""), l), 6 * entries, 1.0) << "TE's version not stated: the cautious price";
  EXPECT_NEAR(logits_bytes(llama70b("2.14", false), l), 6 * entries, 1.0) << "control: the unfused fp32 softmax";
  Scenario native = llama70b("2.14");
  native.training.cross_entropy_fusion = LossFusion::Native;
  EXPECT_NEAR(logits_bytes(native, l), 6 * entries, 1.0) << "Megatron's native kernel keeps its fp32 exp_logits";
  EXPECT_LT(Evaluator(llama70b("2.14"), Framework::Megatron).evaluate(l).mem_gib,
            Evaluator(llama70b("2.14", false), Framework::Megatron).evaluate(l).mem_gib);
}

// Mixture of experts: the same kernel computes the main loss and each MTP module's (gpt_model.py
// compute_language_model_loss for mtp_logits): DeepSeek-V3 (vocabulary 129280, sequence 4096, one MTP layer).
TEST(LossFusion, MoeLossesTakeTheSameKernel) {
  Scenario s = test_scenarios::on_dgx_h100("deepseek-v3", 64, 1024);
  ASSERT_EQ(s.model.mtp_layers, 1);
  s.cluster.te_version = "2.14";
  Layout l;
  l.tp = 2; l.pp = 1; l.dp = 256; l.ep = 64; l.micro_batch = 1; l.zero_stage = 1;
  l.dispatcher = Dispatcher::AllToAll;
  const double entries = 1.0 * s.model.seq_len * s.model.vocab / 2 * (1 + 1);
  EXPECT_NEAR(logits_bytes(s, l), 6 * entries, 1.0) << "control: nothing stated";
  s.training.cross_entropy_fusion = LossFusion::Te;
  EXPECT_NEAR(logits_bytes(s, l), 2 * entries, 1.0);
}

TEST(LossFusion, EmittedInEachFrameworksOwnTerms) {
  const Scenario s = llama70b("2.14");
  const Plan p = advise(s);
  const FrameworkArgs a = framework_args(s, p);
  EXPECT_TRUE(has_line(a.files[0].content, "--cross-entropy-loss-fusion"));
  EXPECT_TRUE(has_line(a.files[0].content, "--cross-entropy-fusion-impl=te"));
  EXPECT_TRUE(mentions(a.notes, "needs te for the fused loss (--cross-entropy-fusion-impl te) (installed: "
                                "Transformer Engine 2.14)"));

  const Scenario plain = llama70b("2.14", false);
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
  EXPECT_NE(stack_problem(fsdp).find("cross_entropy_fusion is Megatron-Core's"), std::string::npos);
  Scenario no_te = llama70b("");
  EXPECT_EQ(stack_problem(no_te), "") << "control: TE's presence not denied";
  no_te.cluster.kernels = std::vector<Kernel>{};
  EXPECT_NE(stack_problem(no_te).find("needs Transformer Engine"), std::string::npos);
  Scenario old_te = llama70b("2.1");
  EXPECT_NE(stack_problem(old_te).find("2.2 or later"), std::string::npos);
  Scenario main = llama70b("2.14");
  main.training.framework_version = "main";
  EXPECT_NE(stack_problem(main).find("disabled due to stability issues"), std::string::npos);
  main.training.cross_entropy_fusion = LossFusion::Native;
  EXPECT_EQ(stack_problem(main), "") << "control: main runs Megatron's native kernel";
}

// --all-frameworks: a framework the stated loss kernel rules out never enters the comparison, and the plan says so
// (it once vanished from the ranking without a word); without the stated kernel the same frameworks are searched.
TEST(LossFusion, AllFrameworksSayWhichFrameworksTheKernelRulesOut) {
  SearchLimits all;
  all.all_frameworks = true;
  all.top_n = 1000;
  const Plan stated = advise(llama70b("2.14"), all);
  for (const char* f : {"deepspeed", "fsdp", "torchtitan"})
    EXPECT_TRUE(mentions(stated.notes, std::string(f) + " not searched: " + f)) << f;
  EXPECT_TRUE(mentions(stated.notes, "cross_entropy_fusion is Megatron-Core's"));
  EXPECT_FALSE(mentions(stated.notes, "megatron not searched")) << "the scenario's own framework runs the kernel";

  // Control: the same framework, alone in the search, is searched without the stated kernel and refused with it.
  SearchLimits fsdp_only = all;
  fsdp_only.frameworks = {Framework::Fsdp};
  EXPECT_EQ(advise(llama70b("2.14", false), fsdp_only).framework, Framework::Fsdp);
  try {
    advise(llama70b("2.14"), fsdp_only);
    ADD_FAILURE() << "fsdp planned a loss kernel it does not have";
  } catch (const NothingFits& e) {
    EXPECT_NE(std::string(e.what()).find("fsdp not searched: "), std::string::npos) << e.what();
  }
}
