// Calibration per (GPU, fabric, framework): two stacks that share a GPU but fall short of the model by different
// amounts each keep their own multiplier (pooled, one rescales the other: Megatron on H100 went from 9.8 % to
// 18.1 % error when FSDP jobs shared its fit); stacks with too few jobs fall back to a (GPU, fabric) entry; the
// file's framework key; and what `calibrate` reads from a log line (tokens/s, ISO-8601 times, gpu_spec overrides,
// skipped lines with their reasons).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "history.h"
#include "paratune/advisor/advisor.h"
#include "paratune/advisor/calibration_file.h"
#include "paratune/advisor/model.h"
#include "paratune/tuning/calibrate.h"
#include "paratune/tuning/scenario_json.h"

using namespace paratune::tuning;
using namespace paratune::tuning::testing;
using namespace paratune::advisor;

namespace {

struct Job {
  Scenario s;
  Layout l;
  double predicted = 0;  // shipped model, seconds per step
};

// A single-node H100/InfiniBand job of `fw`, planned by the advisor (single node: only compute_scale is fitted).
Job job(const std::string& model, Framework fw, int gbs) {
  Scenario s;
  s.model = model_preset(model);
  s.training.global_batch = gbs;
  s.training.framework = fw;
  s.cluster.gpu = "h100-sxm5-80gb";
  s.cluster.nodes = 1;
  s.cluster.gpus_per_node = 8;
  s.cluster.nvlink_domain = 8;
  s.cluster.nic_count = 8;
  s.cluster.nic_gbps = 400;
  s.cluster.fabric = Fabric::InfiniBand;
  s.cluster.gpu_nic_path = "PIX";
  SearchLimits lim;
  lim.top_n = 1;
  const Plan p = advise(s, lim);
  s.training.framework = p.framework;
  return {s, p.layout, Evaluator(s, p.framework).evaluate(p.layout).step_s};
}

// `n` log lines of `fw` whose achieved throughput is `ratio` x the shipped prediction (step = predicted / ratio).
std::string stack_lines(Framework fw, int n, double ratio, int* id) {
  static const char* models[] = {"llama3-8b", "mpt-7b", "llama2-7b", "gpt3-1.3b"};
  std::string out;
  for (int i = 0; i < n; ++i) {
    const Job j = job(models[i % 4], fw, 128 << (i / 4 % 2));
    const int n_id = (*id)++;
    out += log_line(std::to_string(n_id), 1735689600LL + 3600LL * n_id, "h100", {"node" + std::to_string(i)}, j.s,
                    j.l, j.predicted, j.predicted / ratio);
  }
  return out;
}

std::vector<Sample> samples_of(const std::string& log) {
  SkipTally skipped;
  auto s = usable_samples(read_tuning_log(log).entries, {}, &skipped);
  EXPECT_EQ(skipped_summary(skipped), "");
  return s;
}

// Mean over the samples of `fw` of shipped prediction / calibrated prediction: the achieved/predicted ratio the
// calibration has learned for that stack (1 = unchanged).
double learned_ratio(const std::vector<Sample>& samples, Framework fw, const Calibration& c) {
  double sum = 0;
  int n = 0;
  for (const auto& s : samples) {
    if (s.scenario().training.framework != fw) continue;
    sum += predict_step(s, {}) / predict_step(s, c);
    ++n;
  }
  return n ? sum / n : std::nan("");
}

const CalibrationEntry* entry_of(const Calibration& c, const std::string& framework) {
  for (const auto& e : c.entries)
    if (e.framework == framework) return &e;
  return nullptr;
}

}  // namespace

TEST(StackCalibration, TwoStacksOnOneGpuKeepTheirOwnRatios) {
  int id = 1;
  const auto samples = samples_of(stack_lines(Framework::Megatron, 8, 1.0, &id) + stack_lines(Framework::Fsdp, 8, 0.6, &id));
  ASSERT_EQ(samples.size(), 16u);

  const CalibrationResult fit = calibrate(samples);
  ASSERT_EQ(fit.calibration.entries.size(), 2u);
  const CalibrationEntry* meg = entry_of(fit.calibration, "megatron");
  const CalibrationEntry* fsdp = entry_of(fit.calibration, "fsdp");
  ASSERT_TRUE(meg && fsdp);
  EXPECT_EQ(meg->gpu, "h100-sxm5-80gb");
  EXPECT_EQ(meg->fabric, "infiniband");
  EXPECT_EQ(meg->samples, 8);
  EXPECT_EQ(fsdp->samples, 8);
  // Megatron's jobs ran exactly as predicted: its entry changes nothing, whatever the FSDP jobs did.
  EXPECT_NEAR(meg->compute_scale, 1.0, 0.01);
  EXPECT_NEAR(learned_ratio(samples, Framework::Megatron, fit.calibration), 1.0, 0.01);
  // FSDP ran at 0.6x: its entry learns that. The fit's pull towards 1 (prior_weight 0.02) leaves a log residual of
  // 0.51 x 0.02 / (a^2 + 0.02) for a step whose compute share is a: under 0.04 for a >= 0.5.
  EXPECT_LT(fsdp->compute_scale, 0.75);
  EXPECT_NEAR(learned_ratio(samples, Framework::Fsdp, fit.calibration), 0.6, 0.04);

  // Positive control: the earlier grouping, one entry per (GPU, fabric), pulls Megatron's prediction down.
  CalibrateOptions pooled;
  pooled.per_framework = false;
  const CalibrationResult mixed = calibrate(samples, pooled);
  ASSERT_EQ(mixed.calibration.entries.size(), 1u);
  EXPECT_EQ(mixed.calibration.entries[0].framework, "");
  // pooled, the fit lands between the stacks' 1.0 and 0.6 (in log), so Megatron's jobs are predicted slower
  EXPECT_LT(mixed.calibration.entries[0].compute_scale, 0.95);  // well away from Megatron's true 1.0
  EXPECT_LT(learned_ratio(samples, Framework::Megatron, mixed.calibration), 0.95);
}

TEST(StackCalibration, StacksWithTooFewJobsShareAFallbackEntry) {
  int id = 1;
  const auto samples = samples_of(stack_lines(Framework::Megatron, 8, 1.0, &id) +
                                  stack_lines(Framework::Fsdp, 3, 0.8, &id) +
                                  stack_lines(Framework::DeepSpeed, 3, 0.8, &id));
  ASSERT_EQ(samples.size(), 14u);
  const CalibrationResult fit = calibrate(samples);  // kMinSamplesPerGroup = 5: 3 + 3 pooled, 8 alone
  ASSERT_EQ(fit.calibration.entries.size(), 2u);
  const CalibrationEntry* any = entry_of(fit.calibration, "");
  ASSERT_TRUE(any && entry_of(fit.calibration, "megatron"));
  EXPECT_EQ(any->samples, 6);  // the megatron jobs have their own entry and stay out of the fallback
  ASSERT_EQ(fit.groups.size(), 2u);
  for (const auto& g : fit.groups)
    if (g.framework.empty()) {
      EXPECT_EQ(g.stacks, "deepspeed, fsdp");
    }
  EXPECT_NEAR(learned_ratio(samples, Framework::Megatron, fit.calibration), 1.0, 0.01);
  EXPECT_NEAR(learned_ratio(samples, Framework::Fsdp, fit.calibration), 0.8, 0.04);
  EXPECT_NEAR(learned_ratio(samples, Framework::DeepSpeed, fit.calibration), 0.8, 0.04);
  // A stack never seen gets the fallback too; Megatron its own.
  EXPECT_EQ(find_entry(fit.calibration, "h100-sxm5-80gb", Fabric::InfiniBand, Framework::Torchtitan), any);
  EXPECT_EQ(find_entry(fit.calibration, "h100-sxm5-80gb", Fabric::InfiniBand, Framework::Megatron)->framework,
            "megatron");

  // Below the minimum even pooled: shipped parameters for those stacks.
  CalibrateOptions strict;
  strict.min_samples = 7;
  const CalibrationResult few = calibrate(samples, strict);
  ASSERT_EQ(few.calibration.entries.size(), 1u);
  EXPECT_EQ(few.calibration.entries[0].framework, "megatron");
}

TEST(StackCalibration, FileCarriesTheFrameworkAndOldFilesStillParse) {
  const std::string old_file =
      "version = 1\n[[entry]]\ngpu = \"h100-sxm5-80gb\"\nfabric = \"infiniband\"\ncompute_scale = 0.8\n";
  const Calibration old = parse_calibration(old_file, "old.toml");
  ASSERT_EQ(old.entries.size(), 1u);
  EXPECT_EQ(old.entries[0].framework, "");  // no key: any framework
  for (Framework fw : {Framework::Megatron, Framework::Fsdp})
    EXPECT_EQ(find_entry(old, "h100-sxm5-80gb", Fabric::InfiniBand, fw), &old.entries[0]);

  Calibration c = old;
  CalibrationEntry fsdp = old.entries[0];
  fsdp.framework = "fsdp";
  fsdp.compute_scale = 0.6;
  fsdp.fabric = "";  // a framework match beats a fabric match: the stack matters more than the fabric
  c.entries.push_back(fsdp);
  const Calibration back = parse_calibration(to_toml(c), "cal.toml");
  ASSERT_EQ(back.entries.size(), 2u);
  EXPECT_EQ(back.entries[0].framework, "");
  EXPECT_EQ(back.entries[1].framework, "fsdp");
  EXPECT_NE(to_toml(c).find("framework = \"any\""), std::string::npos);
  EXPECT_DOUBLE_EQ(find_entry(back, "h100-sxm5-80gb", Fabric::InfiniBand, Framework::Fsdp)->compute_scale, 0.6);
  EXPECT_DOUBLE_EQ(find_entry(back, "h100-sxm5-80gb", Fabric::InfiniBand, Framework::Megatron)->compute_scale, 0.8);
  EXPECT_DOUBLE_EQ(find_entry(back, "h100-sxm5-80gb", Fabric::InfiniBand)->compute_scale, 0.8);  // stack unknown

  Scenario s;
  s.cluster.gpu = "h100-sxm5-80gb";
  s.training.framework = Framework::Fsdp;
  const int hopper = int(GpuArch::Hopper);
  EXPECT_NEAR(calibrated_params(back, s).gemm_eff[hopper], shipped_params().gemm_eff[hopper] * 0.6, 1e-12);
  s.training.framework = Framework::Megatron;
  EXPECT_NEAR(calibrated_params(back, s).gemm_eff[hopper], std::min(1.0, shipped_params().gemm_eff[hopper] * 0.8),
              1e-12);

  auto error = [](const std::string& text) {
    try {
      parse_calibration(text, "cal.toml");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error("[[entry]]\ngpu = \"h100-sxm5-80gb\"\nframework = \"jax\"\n").find("cal.toml:3:13: entry[0].framework:"),
            std::string::npos);
  const std::string two = "[[entry]]\ngpu = \"h100-sxm5-80gb\"\nframework = \"fsdp\"\n";
  EXPECT_NE(error(two + two).find("a second entry for h100-sxm5-80gb / any / fsdp"), std::string::npos);
  EXPECT_EQ(error(two + "[[entry]]\ngpu = \"h100-sxm5-80gb\"\nframework = \"megatron\"\n"), "");  // control
}

// The baseline of the fit is the job's own prediction: with the scenario's gpu_spec overrides. A site that caps its
// H100s at half the peak, and says so in its scenarios, runs exactly as that scenario predicts: nothing to learn.
TEST(StackCalibration, GpuSpecOverridesAreTheJobsBaseline) {
  std::string log, stripped;
  for (int i = 0; i < 6; ++i) {
    Job j = job(i % 2 ? "llama3-8b" : "mpt-7b", Framework::Megatron, 128);
    j.s.cluster.peak_tflops = 0.5 * gpu_spec("h100-sxm5-80gb").bf16_tflops;
    const double predicted = Evaluator(j.s, j.s.training.framework).evaluate(j.l).step_s;
    ASSERT_GT(predicted, 1.2 * j.predicted);  // the override matters for this job
    const std::string line = log_line(std::to_string(i), 1735689600LL + i, "h100", {"n"}, j.s, j.l, predicted, predicted);
    log += line;
    auto js = nlohmann::json::parse(line);
    ASSERT_TRUE(js["scenario"]["cluster"].contains("gpu_spec"));
    EXPECT_DOUBLE_EQ(js["scenario"]["cluster"]["gpu_spec"]["peak_tflops"].get<double>(), j.s.cluster.peak_tflops);
    js["scenario"]["cluster"].erase("gpu_spec");
    stripped += js.dump() + "\n";
  }
  const auto samples = samples_of(log);
  ASSERT_EQ(samples.size(), 6u);
  for (const auto& s : samples) EXPECT_NEAR(predict_step(s, {}) / s.achieved_step_s, 1.0, 1e-9);
  EXPECT_NEAR(calibrate(samples).calibration.entries.at(0).compute_scale, 1.0, 0.01);
  // Positive control: without the overrides the same jobs look slow, and the fit learns the cap.
  EXPECT_LT(calibrate(samples_of(stripped)).calibration.entries.at(0).compute_scale, 0.8);
}

TEST(StackCalibration, ReadsTokensPerSecondAndIsoTimesAndCountsSkippedLines) {
  const Job j = job("llama3-8b", Framework::Megatron, 128);
  const double tokens = 128.0 * j.s.model.seq_len;
  // Step times the GPUs can run: the prediction and twice it (t1, t2); one a sixth of it, which is not (above peak).
  const double t1 = j.predicted, t2 = 2 * j.predicted;
  nlohmann::json base = nlohmann::json::parse(log_line("1", 0, "h100", {"n1"}, j.s, j.l, j.predicted, t1));
  base.erase("ratio");
  base.erase("suspect");
  std::string log;
  auto add = [&](nlohmann::json line) { log += line.dump() + "\n"; };
  {  // tokens/s with tokens per step: t1 s per step
    nlohmann::json l = base;
    l["time"] = "2025-01-01T02:00:00+02:00";
    l["achieved"] = {{"tokens_per_s", tokens / t1}, {"tokens_per_step", tokens}};
    add(l);
  }
  {  // tokens/s alone: tokens per step from the scenario (global batch x sequence length): t2 s
    nlohmann::json l = base;
    l["time"] = "2025-01-01T00:00:30.25Z";
    l["achieved"] = {{"tokens_per_s", tokens / t2}};
    add(l);
  }
  {  // six times faster than predicted: more FLOP/s than eight H100s have
    nlohmann::json l = base;
    l["achieved"] = {{"median_step_time_s", j.predicted / 6}};
    add(l);
  }
  {  // no achieved figures
    nlohmann::json l = base;
    l.erase("achieved");
    add(l);
    add(l);
  }
  {  // a GPU the catalog does not know
    nlohmann::json l = base;
    l["scenario"]["cluster"]["gpu"] = "mystery-gpu";
    add(l);
  }
  log += "not json\n";
  const TuningLog parsed = read_tuning_log(log);
  ASSERT_EQ(parsed.entries.size(), 6u);
  EXPECT_EQ(parsed.entries[0].time, 1735689600LL);       // 02:00 at +02:00 is midnight UTC
  EXPECT_EQ(parsed.entries[1].time, 1735689600LL + 30);  // the fraction is dropped
  ASSERT_TRUE(parsed.entries[0].achieved_step_s && parsed.entries[1].achieved_step_s);
  EXPECT_NEAR(*parsed.entries[0].achieved_step_s, t1, 1e-9 * t1);
  EXPECT_NEAR(*parsed.entries[1].achieved_step_s, t2, 1e-9 * t2);

  SkipTally skipped;
  const auto samples = usable_samples(parsed.entries, {}, &skipped);
  EXPECT_EQ(samples.size(), 2u);
  EXPECT_EQ(skipped_summary(skipped), "skipped 2: no achieved figures; 1: outside the physical range; 1: unknown GPU");
  skipped["unreadable line"] = parsed.lines - parsed.entries.size();  // what `paratune calibrate` adds
  EXPECT_EQ(skipped_summary(skipped),
            "skipped 2: no achieved figures; 1: outside the physical range; 1: unknown GPU; 1: unreadable line");
}
