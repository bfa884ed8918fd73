// Catalog, enums, validation and a first end-to-end predict/advise.
#include <gtest/gtest.h>

#include "paratune/advisor/advisor.h"
#include "paratune/advisor/catalog.h"
#include "paratune/advisor/model.h"

using namespace paratune::advisor;

namespace {
Scenario llama70b_64nodes() {
  Scenario s;
  s.model = model_preset("llama3-70b");
  s.training.global_batch = 1024;
  s.cluster.gpu = "h100-sxm5-80gb";
  s.cluster.nodes = 64;
  s.cluster.gpus_per_node = 8;
  s.cluster.nvlink_domain = 8;
  s.cluster.nic_count = 8;
  s.cluster.nic_gbps = 400;
  return s;
}
}  // namespace

TEST(Enums, RoundTrip) {
  for (auto f : {Framework::Megatron, Framework::DeepSpeed, Framework::Fsdp, Framework::Torchtitan, Framework::Nemo,
                 Framework::Automodel})
    EXPECT_EQ(framework_from_string(to_string(f)), f);
  for (auto p : {Precision::Bf16, Precision::Fp16, Precision::Fp8}) EXPECT_EQ(precision_from_string(to_string(p)), p);
  for (auto r : {Recompute::None, Recompute::Selective, Recompute::Full})
    EXPECT_EQ(recompute_from_string(to_string(r)), r);
  for (auto f : {Fabric::InfiniBand, Fabric::RoCE, Fabric::Efa, Fabric::Slingshot, Fabric::OmniPath, Fabric::Ethernet})
    EXPECT_EQ(fabric_from_string(to_string(f)), f);
  try {
    framework_from_string("jax");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "'jax' is not a framework; valid: megatron, deepspeed, fsdp, torchtitan, nemo, "
                           "automodel");
  }
}

TEST(Catalog, PresetsAreRealConfigs) {
  const ModelSpec l3 = model_preset("llama3-70b");
  EXPECT_EQ(l3.layers, 80);
  EXPECT_EQ(l3.hidden, 8192);
  EXPECT_EQ(l3.kv_heads, 8);
  EXPECT_EQ(l3.vocab, 128256);
  // Llama 3 70B: 70.55e9 parameters (Meta model card: 70B); our count omits biases (there are none).
  EXPECT_NEAR(total_params(l3) / 1e9, 70.55, 0.1);
  EXPECT_NEAR(total_params(model_preset("llama3.1-405b")) / 1e9, 405.8, 0.5);
  EXPECT_NEAR(total_params(model_preset("llama2-7b")) / 1e9, 6.74, 0.01);
  EXPECT_NEAR(total_params(model_preset("gpt3-175b")) / 1e9, 174.6, 0.5);
  EXPECT_NEAR(total_params(model_preset("mistral-7b")) / 1e9, 7.24, 0.01);
  for (const auto& k : {"gpt3-1.3b", "gpt3-2.7b", "gpt3-6.7b", "gpt3-13b", "llama2-13b", "llama2-70b", "llama3-8b",
                        "llama3.1-8b", "llama3.1-70b", "mpt-1b", "mpt-3b", "mpt-7b", "mpt-13b", "mpt-30b", "mpt-70b"})
    EXPECT_TRUE(is_model_preset(k)) << k;
  EXPECT_THROW(model_preset("gpt5"), std::invalid_argument);
}

TEST(Catalog, GpuKeys) {
  for (const auto& k : {"v100-sxm2-32gb", "a100-sxm4-40gb", "a100-sxm4-80gb", "a100-pcie-80gb", "h100-sxm5-80gb",
                        "h100-pcie-80gb", "h200-sxm-141gb", "b200-sxm-180gb", "mi250x", "mi300x", "l40s", "t4",
                        "v100-sxm3-32gb", "v100-sxm2-16gb", "p100-sxm2-16gb", "t4-16gb", "l40s-48gb"})
    EXPECT_TRUE(is_gpu_key(k)) << k;
  EXPECT_DOUBLE_EQ(gpu_spec("a100-sxm4-80gb").bf16_tflops, 312);  // A100 data sheet
  EXPECT_NEAR(gpu_spec("h100-sxm5-80gb").bf16_tflops, 989.4, 0.1);
  EXPECT_NEAR(gpu_spec("h100-sxm5-80gb").fp8_tflops, 1978.9, 0.1);
  EXPECT_EQ(gpu_spec("a100-sxm4-40gb").fp8_tflops, 0);
  // GB200/GB300: the peaks dgxc-benchmarking computes MFU against (2,450 BF16, 4,900 FP8), HBM3e 8 TB/s.
  EXPECT_DOUBLE_EQ(gpu_spec("gb200").bf16_tflops, 2450);
  EXPECT_DOUBLE_EQ(gpu_spec("gb300").fp8_tflops, 4900);
  EXPECT_GT(gpu_spec("gb300").memory_gib, gpu_spec("gb200").memory_gib);
  // HGX/DGX B300, the key the probe reports for device 0x3182 (ModernFixtures.B300CxEightRails): DGX B300 data
  // sheet 72 PFLOPS FP8 (sparse) for 8 GPUs -> 4,500 dense each, BF16 half of it; 288 GB as on GB300.
  ASSERT_TRUE(is_gpu_key("b300-sxm-288gb"));
  EXPECT_DOUBLE_EQ(gpu_spec("b300-sxm-288gb").fp8_tflops, 72000.0 / 8 / 2);
  EXPECT_DOUBLE_EQ(gpu_spec("b300-sxm-288gb").bf16_tflops, 2250);
  EXPECT_EQ(gpu_spec("b300-sxm-288gb").arch, GpuArch::Blackwell);
  EXPECT_DOUBLE_EQ(gpu_spec("b300-sxm-288gb").memory_gib, gpu_spec("gb300").memory_gib);
  EXPECT_THROW(gpu_spec("rtx-9090"), std::invalid_argument);
}

TEST(Validate, NamesFieldAndWhatIsValid) {
  Scenario s = llama70b_64nodes();
  EXPECT_NO_THROW(validate(s));
  s.model.kv_heads = 7;
  try {
    validate(s);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "model.kv_heads: must divide model.heads (64); got 7");
  }
  s = llama70b_64nodes();
  s.cluster.gpu = "a100-sxm4-80gb";
  s.training.precision = Precision::Fp8;
  EXPECT_THROW(validate(s), std::invalid_argument);
  s = llama70b_64nodes();
  s.parallel.tp = 8;
  s.parallel.pp = 4;
  s.parallel.dp = 4;
  try {
    validate(s);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "parallel.dp: tp*pp*dp*cp must equal the GPU count 512 (nodes * gpus_per_node); dp = 16 would");
  }
}

TEST(Predict, FixedLayoutIsSane) {
  Scenario s = llama70b_64nodes();
  s.parallel.tp = 8;
  s.parallel.pp = 4;
  const Prediction p = predict(s);
  EXPECT_GT(p.step_time_s, 0);
  EXPECT_GT(p.mfu, 0.2);
  EXPECT_LT(p.mfu, 0.8);
  EXPECT_TRUE(p.fits);
  EXPECT_NEAR(p.tokens_per_s, 1024.0 * 8192 / p.step_time_s, 1e-6 * p.tokens_per_s);
}

TEST(Advise, ValidPlanAndEnv) {
  Scenario s = llama70b_64nodes();
  s.cluster.gpu_nic_path = "PXB";
  for (int i = 0; i < 8; ++i) {
    NicFacts n;
    n.name = "mlx5_" + std::to_string(i);
    n.gbps = 400;
    s.cluster.nics.push_back(n);
  }
  const Plan plan = advise(s);
  const Layout& l = plan.layout;
  EXPECT_EQ(l.tp * l.pp * l.dp * l.cp, 512);
  EXPECT_EQ(64 % l.tp, 0);
  EXPECT_EQ(8 % l.tp, 0);
  EXPECT_LE(l.tp, 8);
  EXPECT_EQ(80 % l.pp, 0);
  EXPECT_EQ((1024 / l.dp) % l.micro_batch, 0);
  EXPECT_TRUE(plan.prediction.fits);
  EXPECT_GT(plan.candidates_evaluated, 10);
  auto has = [&](const std::string& n) {
    for (const auto& e : plan.env)
      if (e.name == n) return e.value;
    return std::string("<unset>");
  };
  EXPECT_EQ(has("CUDA_DEVICE_MAX_CONNECTIONS"), "1");
  EXPECT_EQ(has("NCCL_IB_HCA"), "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1");
  EXPECT_EQ(has("NCCL_NET_GDR_LEVEL"), "PXB");
  for (const auto& e : plan.env) EXPECT_FALSE(e.reason.empty()) << e.name;
}

TEST(Advise, NothingFitsSaysWhatWould) {
  Scenario s = llama70b_64nodes();
  s.model = model_preset("llama3.1-405b");
  s.cluster.nodes = 1;
  s.training.global_batch = 16;
  try {
    advise(s);
    FAIL();
  } catch (const NothingFits& e) {
    EXPECT_NE(std::string(e.what()).find("nodes instead of 1"), std::string::npos) << e.what();
  }
}
