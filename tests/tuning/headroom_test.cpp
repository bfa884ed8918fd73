// Memory head-room learned from the site's own jobs (memory_headroom.h): a recorded OOM job raises the head-room
// for its (GPU, framework), the calibration file carries it, and the next advise for that scenario chooses a
// layout with more margin; near-limit runs count, runs far from the limit do not.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "history.h"
#include "paratune/advisor/advisor.h"
#include "paratune/advisor/calibration_file.h"
#include "paratune/advisor/catalog.h"
#include "paratune/advisor/model.h"
#include "paratune/tuning/log_merge.h"
#include "paratune/tuning/memory_headroom.h"

using namespace paratune::tuning;
using namespace paratune::advisor;
using nlohmann::json;

namespace {

Scenario scenario() {
  Scenario s;
  s.model = model_preset("llama3-8b");
  s.training.global_batch = 128;
  s.training.framework = Framework::Megatron;
  s.cluster.gpu = "h100-sxm5-80gb";
  s.cluster.nodes = 1;
  s.cluster.gpus_per_node = 8;
  s.cluster.nvlink_domain = 8;
  s.cluster.nic_count = 8;
  s.cluster.nic_gbps = 400;
  s.cluster.fabric = Fabric::InfiniBand;
  return s;
}

double bare_memory(const Scenario& s, const Layout& l) { return Evaluator(s, s.training.framework, shipped_params()).memory_gib(l); }

// NCCL's own out-of-memory line (tests/fixtures/logs/oom.log line 6, NVIDIA/nccl#1235): no figures in it.
constexpr const char* kNcclOom = "ng30903:3063028:3066152 [3] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'";

// The plugin's line for a job that ran `l` (with its predicted memory) and died of OOM -- the step failed and the
// record carries the framework's message, as `paratune run` and the plugin write them --, or ran with `peak`.
LogEntry logged(const Scenario& s, const Layout& l, std::optional<double> peak, bool oom) {
  json j = json::parse(paratune::tuning::testing::log_line("42", 1000, "gpu", {"n1"}, s, l, 1.0, 1.1));
  j["predicted"]["memory_gib_per_gpu"] = bare_memory(s, l);
  if (oom) {
    j.erase("achieved");
    j["oom"] = {{"kind", "nccl"}, {"predicted_memory_gib", bare_memory(s, l)}, {"message", kNcclOom}};
    j["state"] = "failed (exit 1)";
  }
  if (peak) j["achieved"]["peak_memory_gib"] = *peak;
  return merge_logs({{"t", j.dump() + "\n"}}).entries.at(0);
}

}  // namespace

TEST(Headroom, AnOomJobRaisesTheHeadroomAndTheNextAdviseKeepsMoreMargin) {
  const Scenario s = scenario();
  const Plan before = advise(s);
  const double cap = gpu_spec(s.cluster.gpu).memory_gib;
  const double m0 = bare_memory(s, before.layout);
  const auto ev = memory_evidence({logged(s, before.layout, std::nullopt, true)});
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_TRUE(ev[0].oom);
  EXPECT_NEAR(ev[0].need_gib, cap, 1e-9);  // no figures in the record: it needed at least the whole GPU
  const auto groups = learn_headroom(ev);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].gpu, "h100-sxm5-80gb");
  EXPECT_EQ(groups[0].framework, "megatron");
  EXPECT_EQ(groups[0].oom_jobs, 1u);
  const double h = groups[0].headroom_gib;
  EXPECT_GT(h, cap - m0);  // strictly: the layout that died no longer fits

  // Through the calibration file, as advise reads it.
  Calibration c;
  c.memory = memory_entries(groups);
  const Calibration back = parse_calibration(to_toml(c), "cal.toml");
  ASSERT_EQ(back.memory.size(), 1u);
  EXPECT_NEAR(calibrated_headroom_gib(back, s), h, 1e-6);
  SearchLimits limits;
  limits.memory_headroom_gib = calibrated_headroom_gib(back, s);
  const Plan after = advise(s, limits);
  const double m1 = bare_memory(s, after.layout);
  std::printf("capacity %.1f GiB: plan %.2f GiB (margin %.2f) -> head-room %.1f -> plan %.2f GiB (margin %.2f)\n", cap,
              m0, cap - m0, h, m1, cap - m1);
  EXPECT_LE(m1 + h, cap + 1e-9);
  EXPECT_GT(cap - m1, cap - m0);  // more margin than the layout that died
  EXPECT_GE(cap - m1, h - 1e-9);
}

TEST(Headroom, NearLimitRunsCountRunsFarFromItDoNot) {
  const Scenario s = scenario();
  const Plan p = advise(s);
  const double cap = gpu_spec(s.cluster.gpu).memory_gib, m = bare_memory(s, p.layout);
  // Far from the limit: the caching allocator's reserved peak says little, the job is not evidence.
  EXPECT_TRUE(memory_evidence({logged(s, p.layout, 0.5 * cap, false)}).empty());
  // Near the limit (>= 90 %): the peak is the need; the head-room covers the shortfall, rounded up to 0.5 GiB.
  const double peak = std::max(0.95 * cap, m + 1.2);
  const auto ev = memory_evidence({logged(s, p.layout, std::min(peak, cap), false)});
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_FALSE(ev[0].oom);
  const auto g = learn_headroom(ev);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].near_limit_jobs, 1u);
  const double shortfall = std::min(peak, cap) - m;
  EXPECT_GE(g[0].headroom_gib, shortfall);
  EXPECT_LT(g[0].headroom_gib, shortfall + 0.5 + 1e-9);
}

TEST(Headroom, TheCalibrationFileRejectsBadMemoryEntries) {
  EXPECT_THROW(parse_calibration("[[memory]]\nframework = \"megatron\"\n", "c.toml"), std::invalid_argument);
  EXPECT_THROW(parse_calibration("[[memory]]\ngpu = \"h100-sxm5-80gb\"\nheadroom_gib = -1\n", "c.toml"),
               std::invalid_argument);
  try {
    parse_calibration("[[memory]]\ngpu = \"h100-sxm5-80gb\"\nheadrom = 1\n", "c.toml");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("c.toml:3:11: memory[0].headrom: unknown key"), std::string::npos) << e.what();
  }
  // A framework-less entry serves every stack; the stack's own wins.
  const Calibration c = parse_calibration(
      "[[memory]]\ngpu = \"h100-sxm5-80gb\"\nheadroom_gib = 2\n[[memory]]\ngpu = \"h100-sxm5-80gb\"\n"
      "framework = \"fsdp\"\nheadroom_gib = 5\n", "c.toml");
  Scenario s = scenario();
  EXPECT_EQ(calibrated_headroom_gib(c, s), 2);
  s.training.framework = Framework::Fsdp;
  EXPECT_EQ(calibrated_headroom_gib(c, s), 5);
  s.cluster.gpu = "a100-sxm4-80gb";
  EXPECT_EQ(calibrated_headroom_gib(c, s), 0);
}

// A report can state anything: a peak above the GPU's memory did not happen (skipped with its reason; a peak at the
// limit still counts), and an OOM record's need is read from the framework's message, not from the record's own
// figures (500 GiB "tried" beside PyTorch's "Tried to allocate 20.00 MiB").
TEST(Headroom, ImpossibleFiguresAreNotEvidence) {
  const Scenario s = scenario();
  const Plan p = advise(s);
  const double cap = gpu_spec(s.cluster.gpu).memory_gib;
  SkipTally skipped;
  EXPECT_TRUE(memory_evidence({logged(s, p.layout, 1000.0, false)}, {}, &skipped).empty());
  EXPECT_EQ(skipped["memory: peak above the GPU's memory"], 1u);
  EXPECT_EQ(memory_evidence({logged(s, p.layout, cap, false)}).size(), 1u) << "control: a peak at the limit";

  LogEntry forged = logged(s, p.layout, std::nullopt, true);
  forged.oom->kind = "cuda";
  forged.oom->message = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total "
                        "capacity of 79.10 GiB of which 10.00 MiB is free.";
  forged.oom->tried_gib = 500;
  forged.oom->capacity_gib = 79.1;
  forged.oom->free_gib = 0.01;
  const auto ev = memory_evidence({forged});
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_TRUE(ev[0].oom);
  EXPECT_LT(ev[0].need_gib, cap + 0.1) << "the message's 20 MiB, not the record's 500 GiB";
}
