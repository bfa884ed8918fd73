// Checkpoints across restarts (framework_checkpoint.h): the format is stated in the arguments, and a resumed run
// keeps the previous plan's format and sharding family, re-planning only what the format reshards (Megatron
// torch_dist: TP/PP/DP/CP/EP; Megatron-FSDP fsdp_dtensor and PyTorch DCP: DP; DeepSpeed's ZeRO checkpoint: nothing).
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include "paratune/advisor/advisor.h"
#include "paratune/advisor/framework_args.h"
#include "paratune/advisor/framework_checkpoint.h"

using namespace paratune::advisor;

namespace {

Scenario v100(int gpus, Framework f = Framework::Megatron) {
  Scenario s;
  s.model = model_preset("llama3-8b");
  s.training.framework = f;
  s.training.precision = Precision::Fp16;
  s.training.global_batch = 64;
  s.cluster.gpu = "v100-sxm3-32gb";
  s.cluster.nodes = 1;
  s.cluster.gpus_per_node = gpus;
  s.cluster.nvlink_domain = gpus;
  return s;
}

std::string args_of(const Scenario& s, const Plan& p) { return "\n" + framework_args(s, p).files.at(0).content; }

bool mentions(const std::vector<std::string>& notes, const std::string& what) {
  return std::any_of(notes.begin(), notes.end(), [&](const std::string& n) { return n.find(what) != std::string::npos; });
}

ResumeFrom from(const Plan& p, const char* origin = "run1/plan.json") { return {origin, p.framework, "", p.layout}; }

}  // namespace

TEST(Checkpoint, FormatIsStatedInTheArguments) {
  const Scenario s = v100(8);
  Plan p = advise(s);
  ASSERT_EQ(p.layout.zero_stage, 3);
  EXPECT_NE(args_of(s, p).find("\n--ckpt-format=fsdp_dtensor\n"), std::string::npos);
  EXPECT_TRUE(mentions(p.notes, "checkpoint: megatron fsdp_dtensor, ZeRO 3 (Megatron-FSDP)"));
  p.layout.zero_stage = 1;
  EXPECT_NE(args_of(s, p).find("\n--ckpt-format=torch_dist\n"), std::string::npos) << "Megatron's default, stated";
}

// The case: the same job on more GPUs, planned afresh, changes a degree its checkpoint format cannot
// reshard; resumed, it keeps them and re-plans DP only.
TEST(Checkpoint, ResumedRunKeepsWhatFsdpDtensorCannotReshard) {
  const Plan first = advise(v100(8));
  ASSERT_EQ(checkpoint_format(first.framework, first.layout).format, "fsdp_dtensor");
  const Plan fresh = advise(v100(32));
  const auto tp_pp_cp = [](const Plan& p) { return std::tuple{p.layout.tp, p.layout.pp, p.layout.cp}; };
  ASSERT_NE(tp_pp_cp(fresh), tp_pp_cp(first)) << "positive control: planned afresh, TP, PP or CP changes";

  Scenario s = v100(32);
  const auto notes = keep_checkpoint(s, from(first));
  const Plan resumed = advise(s);
  EXPECT_EQ(resumed.layout.tp, first.layout.tp);
  EXPECT_EQ(resumed.layout.pp, first.layout.pp);
  EXPECT_EQ(resumed.layout.cp, first.layout.cp);
  EXPECT_EQ(resumed.layout.zero_stage, 3);
  EXPECT_EQ(resumed.layout.dp, 32 / (first.layout.tp * first.layout.pp * first.layout.cp));
  EXPECT_NE(args_of(s, resumed).find("\n--ckpt-format=fsdp_dtensor\n"), std::string::npos);
  EXPECT_TRUE(mentions(notes, "kept megatron with checkpoint format fsdp_dtensor and ZeRO 3 (Megatron-FSDP), tp="))
      << notes.back();
  EXPECT_TRUE(mentions(notes, "reshards dp, so those are re-planned")) << notes.back();
}

TEST(Checkpoint, TorchDistReplansTpPpDp) {
  Plan first = advise(v100(8));
  first.layout.zero_stage = 1;  // a distributed-optimizer run: torch_dist
  Scenario s = v100(16);
  const auto notes = keep_checkpoint(s, from(first));
  EXPECT_FALSE(s.parallel.tp || s.parallel.pp || s.parallel.dp || s.parallel.cp) << "torch_dist reshards them";
  EXPECT_EQ(s.parallel.zero_stage, 1) << "the sharding family is kept";
  EXPECT_TRUE(mentions(notes, "reshards tp, pp, dp, cp, ep")) << notes.back();
  EXPECT_NE(args_of(s, advise(s)).find("\n--ckpt-format=torch_dist\n"), std::string::npos);
}

TEST(Checkpoint, FrameworkAndUserDegreesYieldToTheCheckpoint) {
  const Plan first = advise(v100(8));
  Scenario s = v100(16, Framework::Fsdp);
  s.parallel.tp = 8;
  const auto notes = keep_checkpoint(s, from(first));
  EXPECT_EQ(s.training.framework, Framework::Megatron);
  EXPECT_EQ(s.parallel.tp, first.layout.tp);
  EXPECT_TRUE(mentions(notes, "framework megatron kept (asked fsdp)"));
  EXPECT_TRUE(mentions(notes, "tp=8 asked, but the checkpoint format cannot reshard tp: kept tp="));
}

TEST(Checkpoint, DeepSpeedKeepsTheWholeLayoutAndSaysWhenItCannot) {
  Scenario ds = v100(8, Framework::DeepSpeed);
  ds.model.seq_len = 2048;  // plain DeepSpeed has no TP: a shorter sequence fits 8 V100s
  const Plan first = advise(ds);
  EXPECT_TRUE(checkpoint_format(Framework::DeepSpeed, first.layout).reshards.empty());
  Scenario same = ds;
  keep_checkpoint(same, from(first));
  EXPECT_EQ(advise(same).layout.dp, first.layout.dp);
  Scenario other = v100(4, Framework::DeepSpeed);
  try {
    keep_checkpoint(other, from(first));
    FAIL() << "a DeepSpeed ZeRO checkpoint was resumed on another data-parallel size";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("resume from run1/plan.json: its deepspeed_zero checkpoint keeps"),
              std::string::npos)
        << e.what();
  }
}

// A Megatron-DeepSpeed checkpoint (Megatron's layout around DeepSpeed's) and a plain DeepSpeed one (the user's model)
// load only in their own stack: resumed without the version, the checkpoint's is kept and said; the same version
// asked changes nothing (control).
TEST(Checkpoint, DeepSpeedKeepsTheStackItsCheckpointWasWrittenBy) {
  Scenario s = v100(8, Framework::DeepSpeed);
  Plan first;
  first.framework = Framework::DeepSpeed;
  first.layout.tp = 2;
  first.layout.dp = 4;
  first.layout.zero_stage = 1;
  const ResumeFrom written{"run1/plan.json", Framework::DeepSpeed, "megatron-deepspeed", first.layout};
  const auto notes = keep_checkpoint(s, written);
  EXPECT_EQ(s.training.framework_version, "megatron-deepspeed");
  EXPECT_TRUE(mentions(notes, "framework_version megatron-deepspeed kept (asked 0.16)")) << notes.front();

  Scenario asked = v100(8, Framework::DeepSpeed);
  asked.training.framework_version = "megatron-deepspeed";
  EXPECT_FALSE(mentions(keep_checkpoint(asked, written), "framework_version")) << "control: the same stack";

  Scenario plain = v100(8, Framework::DeepSpeed);
  plain.training.framework_version = "megatron-deepspeed";
  first.layout.tp = 1;
  first.layout.dp = 8;
  keep_checkpoint(plain, ResumeFrom{"run1/plan.json", Framework::DeepSpeed, "0.16", first.layout});
  EXPECT_EQ(plain.training.framework_version, "0.16") << "a plain DeepSpeed checkpoint is not Megatron-DeepSpeed's";
}

// "framework=megatron-deepspeed" names the stack: DeepSpeed at that version, not plain DeepSpeed under the name.
TEST(Checkpoint, TheMegatronDeepSpeedNameSetsItsVersion) {
  TrainingSpec t;
  set_framework(t, "megatron-deepspeed");
  EXPECT_EQ(t.framework, Framework::DeepSpeed);
  EXPECT_EQ(t.framework_version, "megatron-deepspeed");
  TrainingSpec plain;
  set_framework(plain, "deepspeed");
  EXPECT_EQ(plain.framework_version, "") << "control";
  TrainingSpec stated;
  stated.framework_version = "0.19";
  set_framework(stated, "megatron-deepspeed");
  EXPECT_EQ(stated.framework_version, "0.19") << "a stated version is the user's";
}
