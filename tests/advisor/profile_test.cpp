// Hardware profiles (advisor/profile.h): a profile with slower links between nodes moves the advised layout the way
// physics says (less data parallelism across nodes, since its gradient traffic crosses them every step), one with
// a faster GEMM shortens the predicted step by the GEMM's share; a profile whose rates are the catalog's own changes
// nothing (the hook replaces exactly the terms it names); a profile for another GPU or another node type is
// ignored with a warning; the file round-trips and the fit inverts the model's GEMM shape factor.
#include <gtest/gtest.h>

#include <cmath>

#include "paratune/advisor/advisor.h"
#include "paratune/advisor/catalog.h"
#include "paratune/advisor/model.h"
#include "paratune/advisor/profile.h"

using namespace paratune::advisor;

namespace {

// Llama 3 8B on 4 nodes of 8 H100 (NVSwitch, 8 x 400G InfiniBand), Megatron, global batch 256.
Scenario four_nodes() {
  Scenario s;
  s.model = model_preset("llama3-8b");
  s.training.global_batch = 256;
  s.training.framework = Framework::Megatron;
  s.cluster.gpu = "h100-sxm5-80gb";
  s.cluster.nodes = 4;
  s.cluster.gpus_per_node = 8;
  s.cluster.nvlink_domain = 8;
  s.cluster.nic_count = 8;
  s.cluster.nic_gbps = 400;
  s.cluster.fabric = Fabric::InfiniBand;
  s.cluster.gpu_nic_path = "PIX";
  return s;
}

// The catalog's own rates for the scenario, as the model resolves them (what a perfect measurement would find).
MeasuredRates catalog_rates(const Scenario& s) {
  const Resolved R = resolve(s, s.training.framework, shipped_params());
  MeasuredRates m;
  m.bf16_gemm_tflops = R.gpu.bf16_tflops * shipped_params().gemm_eff[static_cast<int>(R.gpu.arch)];
  m.hbm_gbps = R.hbm / 1e9;
  m.intra_busbw_gbps = R.nvl_gbps;
  m.inter_busbw_gbps = R.node_net_gbps;
  return m;
}

Scenario measured(Scenario s, const MeasuredRates& m) {
  s.cluster.measured = m;
  return s;
}

// Nodes one data-parallel group spans (rank order: TP innermost, then CP, DP, PP).
int dp_nodes(const Layout& l, int gpus_per_node) {
  const int span = l.tp * l.cp * l.dp;
  return std::max(1, (span + gpus_per_node - 1) / gpus_per_node);
}

HardwareProfile h100_profile() {
  HardwareProfile p;
  p.fingerprint = "7f3a9c2e41d05b86";
  p.gpu = "h100-sxm5-80gb";
  p.generated = "2025-03-01T12:00:00Z";
  p.hosts = "gpu001,gpu002";
  p.rates.bf16_gemm_tflops = 650;
  return p;
}

}  // namespace

TEST(Profile, TheCatalogsOwnRatesChangeNothing) {
  const Scenario s = four_nodes();
  const Plan base = advise(s);
  const Prediction a = predict(s, base.layout);
  const Prediction b = predict(measured(s, catalog_rates(s)), base.layout);
  EXPECT_NEAR(b.step_time_s, a.step_time_s, 1e-12 * a.step_time_s);
  EXPECT_EQ(advise(measured(s, catalog_rates(s))).layout.dp, base.layout.dp);
}

TEST(Profile, SlowerLinksBetweenNodesMeanLessDataParallelismAcrossThem) {
  Scenario s = four_nodes();
  s.model = model_preset("llama2-13b");  // 13B parameters: 26 GB of gradients to reduce per step across nodes
  const Plan base = advise(s);
  MeasuredRates slow = catalog_rates(s);
  slow.inter_busbw_gbps = catalog_rates(s).inter_busbw_gbps / 10;  // 38 GB/s per node: a tenth of 8 x 400G
  const Plan p = advise(measured(s, slow));
  std::printf("catalog network %.0f GB/s per node: tp=%d pp=%d dp=%d (data-parallel group over %d nodes), %.2f s\n"
              "measured %.1f GB/s per node: tp=%d pp=%d dp=%d (data-parallel group over %d nodes), %.2f s\n",
              catalog_rates(s).inter_busbw_gbps, base.layout.tp, base.layout.pp, base.layout.dp,
              dp_nodes(base.layout, 8), base.prediction.step_time_s, slow.inter_busbw_gbps, p.layout.tp, p.layout.pp,
              p.layout.dp, dp_nodes(p.layout, 8), p.prediction.step_time_s);
  EXPECT_EQ(dp_nodes(base.layout, 8), 4);  // the catalog's fabric carries data parallelism across all four nodes
  EXPECT_LT(dp_nodes(p.layout, 8), 4);     // the slow one keeps it inside fewer nodes: pipeline stages cross them
  EXPECT_GT(p.layout.pp, base.layout.pp);  // (activations, not gradients, on the slow links)
  EXPECT_LT(p.layout.dp, base.layout.dp);
  EXPECT_GT(p.prediction.step_time_s, base.prediction.step_time_s);  // and it costs time all the same
  // The catalog's plan on the slow fabric is slower than the plan made for it (the change is worth making).
  EXPECT_GT(predict(measured(s, slow), base.layout).step_time_s, p.prediction.step_time_s);
}

TEST(Profile, AFasterGemmShortensThePredictedStepByItsShare) {
  Scenario s = four_nodes();
  s.cluster.nodes = 1;
  s.training.global_batch = 64;
  const Plan base = advise(s);
  MeasuredRates fast;
  fast.bf16_gemm_tflops = 1.3 * catalog_rates(s).bf16_gemm_tflops;  // only the GEMM rate measured
  const Prediction a = predict(s, base.layout), b = predict(measured(s, fast), base.layout);
  EXPECT_LT(b.step_time_s, a.step_time_s);
  EXPECT_NEAR(b.breakdown.compute / a.breakdown.compute, 1 / 1.3, 0.05);  // compute: GEMMs (and fused attention)
  EXPECT_GT(b.step_time_s, a.step_time_s / 1.3);                          // the rest of the step did not speed up
}

TEST(Profile, IgnoredForAnotherGpuOrNodeTypeWithAWarning) {
  const Scenario s = four_nodes();
  HardwareProfile p = h100_profile();
  ProfileUse u = use_profile(p, s, "7f3a9c2e41d05b86");
  ASSERT_TRUE(u.applies);
  EXPECT_EQ(with_profile(s, u).cluster.measured->bf16_gemm_tflops, 650);
  ASSERT_GE(u.notes.size(), 2u);
  EXPECT_NE(u.notes[0].find("from the hardware profile (fingerprint 7f3a9c2e41d05b86"), std::string::npos);
  EXPECT_NE(u.notes[0].find("GEMM (16-bit) 650 TFLOP/s per GPU"), std::string::npos) << u.notes[0];
  EXPECT_NE(u.notes[1].find("from the catalog and the fitted model: HBM, intra-node bus, network per node"),
            std::string::npos) << u.notes[1];

  u = use_profile(p, s, "0000000000000000");
  EXPECT_FALSE(u.applies);
  EXPECT_NE(u.warning.find("fingerprint 7f3a9c2e41d05b86, this node's is 0000000000000000"), std::string::npos);
  EXPECT_FALSE(with_profile(s, u).cluster.measured);

  p.gpu = "cpu";  // a CPU node's profile never stands for a GPU
  u = use_profile(p, s, "7f3a9c2e41d05b86");
  EXPECT_FALSE(u.applies);
  EXPECT_NE(u.warning.find("measured on 'cpu', the scenario's GPU is 'h100-sxm5-80gb'"), std::string::npos);

  p = h100_profile();  // no topology: the GPU model alone is checked, and the notes say so
  u = use_profile(p, s, "");
  EXPECT_TRUE(u.applies);
  EXPECT_NE(u.notes.back().find("only its GPU model was checked"), std::string::npos);
}

TEST(Profile, FitInvertsTheShapeFactorAndTheFileRoundTrips) {
  HardwareProfile p = h100_profile();
  const double P = 640;  // the large-GEMM rate the points are made from
  for (double h : {1024.0, 4096.0, 8192.0})
    p.gemm.push_back({"bf16", 8192, 3 * h, h, P * Evaluator::gemm_shape_factor(8192, 3 * h, h)});
  p.gemm.push_back({"bf16", 64, 64, 64, 1.0});  // a tiny outlier: the median ignores it
  p.copy = {{1e6, 900}, {1e9, 2900}, {4e9, 3000}};
  p.collectives = {{"all_gather", "intra", 8, 1e9, 3000, 360}, {"reduce_scatter", "intra", 8, 1e9, 3100, 350},
                   {"all_gather", "intra", 8, 1e3, 20, 0.05},  {"all_reduce", "inter", 16, 1e9, 9000, 190},
                   {"all_reduce", "inter", 16, 1e3, 40, 0.05}, {"all_reduce", "intra", 8, 1e3, 15, 0.1}};
  fit_profile(p);
  EXPECT_NEAR(p.rates.bf16_gemm_tflops, P, 1e-9 * P);
  EXPECT_NEAR(p.rates.hbm_gbps, 2950, 1e-9);           // the median of the two largest copies
  EXPECT_NEAR(p.rates.intra_busbw_gbps, 355, 1e-9);    // all-gather and reduce-scatter at the largest size
  EXPECT_NEAR(p.rates.inter_busbw_gbps, 190, 1e-9);
  EXPECT_NEAR(p.inter_latency_us, 40, 1e-9);
  EXPECT_NEAR(p.intra_latency_us, 15, 1e-9);
  p.software = {{"torch", "2.6.0"}, {"nccl", "2.21.5"}};
  p.env = {{"NCCL_IB_HCA", "mlx5_0:1"}};
  const HardwareProfile back = parse_profile(to_toml(p), "p.toml");
  EXPECT_EQ(to_toml(back), to_toml(p));
  EXPECT_EQ(back.gemm.size(), 4u);
  EXPECT_EQ(back.env.at("NCCL_IB_HCA"), "mlx5_0:1");
  try {
    parse_profile("version = 1\nfingerprint = \"x\"\ngpu = \"cpu\"\n[fit]\nhbm = 3\n", "p.toml");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("p.toml:5:7: fit.hbm: unknown key"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_profile("version = 1\ngpu = \"cpu\"\n", "p.toml"), std::invalid_argument);  // no fingerprint
  EXPECT_THROW(parse_profile("fingerprint = \"x\"\ngpu = \"cpu\"\n[fit]\nhbm_gbps = -1\n", "p.toml"),
               std::invalid_argument);
}
