// `paratune measure`'s glue (cli/measure_raw.cpp): who a task is from Slurm's environment, and the benchmark's raw
// JSON turned into a profile -- nodes and ranks counted from every rank's host, a rank on another node type
// warned about, a GPU run named by the topology's GPU (refused when the topology shows none), skipped sizes passed
// on, a point without its figure refused by name.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "measure_raw.h"

using paratune::cli::measure::profile_from_raw;
using paratune::cli::measure::task_from_env;

namespace {

const char* kRaw = R"({"version": 1, "device": "cpu", "device_name": "AMD EPYC", "world": 4,
  "hosts": ["mn0", "mn0", "mn1", "mn1"], "fingerprints": ["aaaa", "aaaa", "aaaa", "bbbb"],
  "software": {"torch": "1.13.0", "backend": "gloo"}, "env": {"GLOO_SOCKET_IFNAME": "eth0"},
  "gemm": [{"dtype": "bf16", "m": 1024, "n": 4096, "k": 1024, "tflops": 0.5}],
  "attention": [{"dtype": "fp32", "kernel": "unfused", "batch": 1, "heads": 8, "seq": 1024, "head_dim": 64, "tflops": 0.01}],
  "copy": [{"bytes": 1e8, "gbps": 20}, {"bytes": 4e8, "gbps": 18}],
  "collectives": [{"op": "all_reduce", "scope": "inter", "ranks": 4, "bytes": 1048576, "time_us": 9000, "busbw_gbps": 0.15}],
  "skipped": ["inter reduce_scatter: not supported by gloo"], "duration_s": 5.5})";

struct EnvVar {
  std::string name;
  EnvVar(const char* n, const char* v) : name(n) { ::setenv(n, v, 1); }
  ~EnvVar() { ::unsetenv(name.c_str()); }
};

}  // namespace

TEST(MeasureRaw, CountsNodesAndRanksAndWarnsAboutAnotherNodeType) {
  std::vector<std::string> warnings;
  const auto p = profile_from_raw(kRaw, "aaaa", "b200-sxm-180gb", &warnings);
  EXPECT_EQ(p.gpu, "cpu");  // the benchmark ran on the CPU: never a GPU's profile, whatever the topology says
  EXPECT_EQ(p.fingerprint, "aaaa");
  EXPECT_EQ(p.nodes, 2);
  EXPECT_EQ(p.ranks_per_node, 2);
  EXPECT_EQ(p.hosts, "mn0,mn1");
  EXPECT_EQ(p.device, "AMD EPYC");
  EXPECT_EQ(p.software.at("backend"), "gloo");
  EXPECT_EQ(p.env.at("GLOO_SOCKET_IFNAME"), "eth0");
  EXPECT_DOUBLE_EQ(p.duration_s, 5.5);
  EXPECT_GT(p.rates.bf16_gemm_tflops, 0.5);  // over the shape factor (< 1)
  EXPECT_DOUBLE_EQ(p.rates.hbm_gbps, 19);     // the median of the two largest copies
  EXPECT_DOUBLE_EQ(p.rates.inter_busbw_gbps, 0.15);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("fingerprint bbbb, rank 0's aaaa"), std::string::npos) << warnings[0];
  EXPECT_EQ(warnings[1], "skipped: inter reduce_scatter: not supported by gloo");
}

TEST(MeasureRaw, AGpuRunIsNamedByTheTopologysGpuAndRefusedWithoutOne) {
  std::string raw = kRaw;
  raw.replace(raw.find(R"("device": "cpu")"), 15, R"("device": "cuda")");
  EXPECT_EQ(profile_from_raw(raw, "aaaa", "h100-sxm5-80gb", nullptr).gpu, "h100-sxm5-80gb");
  try {
    profile_from_raw(raw, "aaaa", "", nullptr);
    FAIL() << "a GPU run on a node whose topology shows no GPU";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("the node's topology shows none"), std::string::npos) << e.what();
  }
}

TEST(MeasureRaw, APointWithoutItsFigureIsRefusedByName) {
  std::string raw = kRaw;
  raw.replace(raw.find(R"(, "tflops": 0.5)"), 15, "");
  try {
    profile_from_raw(raw, "aaaa", "", nullptr);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "raw figures: 'tflops' missing");
  }
  EXPECT_THROW(profile_from_raw("[1, 2]", "aaaa", "", nullptr), std::invalid_argument);
  EXPECT_THROW(profile_from_raw("{truncated", "aaaa", "", nullptr), std::invalid_argument);
}

TEST(MeasureRaw, TheTaskFromSlurmsEnvironment) {
  for (const char* v : {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID", "SLURM_STEP_NODELIST",
                        "SLURM_JOB_NODELIST", "SLURM_JOB_ID", "SLURM_STEP_ID"})
    ::unsetenv(v);  // (as outside a job, also when the tests run inside one)
  const auto alone = task_from_env(0);  // no Slurm: one task, on this host
  EXPECT_EQ(alone.rank, 0);
  EXPECT_EQ(alone.world, 1);
  EXPECT_EQ(alone.master_addr, "127.0.0.1");
  const EnvVar a("SLURM_PROCID", "3"), b("SLURM_NTASKS", "4"), c("SLURM_LOCALID", "1"),
      d("SLURM_STEP_NODELIST", "mn[0-1]"), e("SLURM_JOB_ID", "7"), f("SLURM_STEP_ID", "2");
  const auto t = task_from_env(0);
  EXPECT_EQ(t.rank, 3);
  EXPECT_EQ(t.world, 4);
  EXPECT_EQ(t.local_rank, 1);
  EXPECT_EQ(t.master_addr, "mn0");  // the step's first node
  EXPECT_EQ(t.master_port, 20000 + 7 * 16 + 2);
  EXPECT_EQ(task_from_env(29500).master_port, 29500);
}

// Figures no hardware produces are refused by point and field (a benchmark that wrote them measured nothing; the
// profile's own reader would refuse the file afterwards, or plan with 1e9 TFLOP/s): a negative time, a rank count
// beyond an int, an impossible rate. A GPU run's bus bandwidth comes only from messages of 64 MiB or more (the
// plateau of its busbw curve); a run cut short at 1 MiB leaves the term to the catalog, while a CPU (gloo) run
// takes what it has (control: kRaw above, 0.15 GB/s at 1 MiB).
TEST(MeasureRaw, ImpossibleFiguresAreRefusedAndSmallMessagesMeasureNoBandwidth) {
  const auto refused = [](std::string raw, const std::string& from, const std::string& to) {
    raw.replace(raw.find(from), from.size(), to);
    try {
      profile_from_raw(raw, "aaaa", "h100-sxm5-80gb", nullptr);
      return std::string("accepted");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
  };
  EXPECT_NE(refused(kRaw, R"("time_us": 9000)", R"("time_us": -5)").find("collectives[0].time_us"), std::string::npos);
  EXPECT_NE(refused(kRaw, R"("ranks": 4)", R"("ranks": 1e12)").find("collectives[0].ranks"), std::string::npos);
  EXPECT_NE(refused(kRaw, R"("tflops": 0.5)", R"("tflops": 1e9)").find("gemm[0].tflops"), std::string::npos);
  EXPECT_NE(refused(kRaw, R"("gbps": 20)", R"("gbps": -5)").find("copy[0].gbps"), std::string::npos);

  std::string gpu = kRaw;
  gpu.replace(gpu.find(R"("device": "cpu")"), 15, R"("device": "cuda")");
  EXPECT_DOUBLE_EQ(profile_from_raw(gpu, "aaaa", "h100-sxm5-80gb", nullptr).rates.inter_busbw_gbps, 0)
      << "a GPU run whose largest message was 1 MiB measured latency, not bandwidth";
  gpu.replace(gpu.find(R"("bytes": 1048576)"), 16, R"("bytes": 1073741824)");
  EXPECT_DOUBLE_EQ(profile_from_raw(gpu, "aaaa", "h100-sxm5-80gb", nullptr).rates.inter_busbw_gbps, 0.15);
}
