// Performance portability (Pennycook's P) against a hand computation: five jobs of one model on two platforms
// with two frameworks, a third framework on one platform only, and a job that died of OOM.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "paratune/tuning/log_merge.h"
#include "paratune/tuning/portability.h"
#include "test_util.h"
#include "xml_check.h"

using namespace paratune::tuning;
using nlohmann::json;

namespace {

// A line with predicted tokens/s per GPU `t` and achieved/predicted ratio `r` (predicted step 1 s, achieved 1/r).
std::string job(const std::string& id, const std::string& part, const std::string& gpu, const std::string& fabric,
                const std::string& fw, double t, double r) {
  json j = {{"job_id", id}, {"time", 1000 + std::stoi(id)}, {"partition", part},
            {"scenario", {{"model", {{"name", "llama3-8b"}, {"seq_len", 4096}}},
                          {"training", {{"framework", fw}, {"global_batch", 64}}},
                          {"cluster", {{"gpu", gpu}, {"fabric", fabric}, {"nodes", 1}, {"gpus_per_node", 8}}}}},
            {"predicted", {{"step_time_s", 1.0}, {"tokens_per_s_per_gpu", t}}}};
  if (r > 0) j["achieved"] = {{"median_step_time_s", 1.0 / r}};
  else j["oom"] = {{"kind", "cuda"}};
  return j.dump() + "\n";
}

// fw as a C string: GCC 14's -Wdangling-reference takes a reference returned from a call with a temporary
// std::string argument for one into that temporary.
const ApplicationPortability& app(const PortabilityReport& r, const char* fw) {
  for (const auto& a : r.applications)
    if (a.framework == fw) return a;
  throw std::runtime_error(std::string("no application ") + fw);
}

}  // namespace

TEST(Portability, MatchesAHandComputation) {
  const std::string log = job("1", "a", "h100-sxm5-80gb", "infiniband", "megatron", 1000, 0.8) +  // 800 tok/s/GPU
                          job("2", "a", "h100-sxm5-80gb", "infiniband", "megatron", 1000, 0.9) +  // 900: best on a
                          job("3", "a", "h100-sxm5-80gb", "infiniband", "fsdp", 800, 0.75) +      // 600
                          job("4", "b", "a100-sxm4-80gb", "roce", "megatron", 500, 0.8) +         // 400
                          job("5", "b", "a100-sxm4-80gb", "roce", "fsdp", 450, 1.0) +             // 450: best on b
                          job("6", "a", "h100-sxm5-80gb", "infiniband", "deepspeed", 1000, 0.5) + // 500, a only
                          job("7", "b", "a100-sxm4-80gb", "roce", "deepspeed", 450, 0);           // died of OOM
  const MergedLog m = merge_logs({{"t", log}});
  std::vector<const LogEntry*> rows;
  for (const auto& e : m.entries) rows.push_back(&e);
  const PortabilityReport r = portability(rows);
  ASSERT_EQ(r.applications.size(), 3u);
  // Platform a: best predicted 1000, best achieved 900. Platform b: best predicted 500, best achieved 450.
  const auto& meg = app(r, "megatron");
  ASSERT_EQ(meg.platforms.size(), 2u);
  EXPECT_EQ(meg.problem, "llama3-8b@4096");
  EXPECT_EQ(meg.platforms[0].platform.key(), "a/h100-sxm5-80gb/infiniband");
  EXPECT_EQ(meg.platforms[0].best_job, "2");
  EXPECT_NEAR(meg.platforms[0].e_predicted, 900.0 / 1000, 1e-12);
  EXPECT_NEAR(meg.platforms[0].e_application, 900.0 / 900, 1e-12);
  EXPECT_NEAR(meg.platforms[1].e_predicted, 400.0 / 500, 1e-12);
  EXPECT_NEAR(meg.platforms[1].e_application, 400.0 / 450, 1e-12);
  EXPECT_NEAR(meg.p_predicted, 2 / (1 / 0.9 + 1 / 0.8), 1e-12);            // 0.847
  EXPECT_NEAR(meg.p_application, 2 / (1.0 + 450.0 / 400), 1e-12);         // 0.941
  const auto& fsdp = app(r, "fsdp");
  EXPECT_NEAR(fsdp.p_predicted, 2 / (1000.0 / 600 + 500.0 / 450), 1e-12);  // 0.72
  EXPECT_NEAR(fsdp.p_application, 2 / (900.0 / 600 + 1.0), 1e-12);         // 0.8
  // Runs on a, died of OOM on b: does not run on every platform, P = 0 (Pennycook), with the reason.
  const auto& ds = app(r, "deepspeed");
  EXPECT_NEAR(ds.platforms[0].e_predicted, 0.5, 1e-12);
  EXPECT_EQ(ds.platforms[1].why_zero, "died of OOM");
  EXPECT_EQ(ds.platforms[1].ooms, 1u);
  EXPECT_EQ(ds.p_predicted, 0);
  EXPECT_EQ(ds.p_application, 0);
}

TEST(Portability, AFixedPlatformSetMakesANeverRunPlatformCountZero) {
  const std::string log = job("1", "a", "h100-sxm5-80gb", "infiniband", "megatron", 1000, 0.9);
  const MergedLog m = merge_logs({{"t", log}});
  std::vector<const LogEntry*> rows{&m.entries[0]};
  const PortabilityReport alone = portability(rows);
  EXPECT_NEAR(alone.applications[0].p_predicted, 0.9, 1e-12);  // positive control: one platform, P = e
  PortabilityOptions o;
  o.platforms = {*parse_platform("a/h100-sxm5-80gb/infiniband"), *parse_platform("c/b200/infiniband")};
  const PortabilityReport r = portability(rows, o);
  EXPECT_EQ(r.applications[0].platforms[1].why_zero, "not run");
  EXPECT_EQ(r.applications[0].p_predicted, 0);
  EXPECT_FALSE(parse_platform("a/b"));
}

TEST(Portability, HarmonicMeanIsPennycooksP) {
  EXPECT_NEAR(harmonic_portability({0.5, 1.0}), 2 / 3.0, 1e-12);
  EXPECT_EQ(harmonic_portability({}), 0);
  EXPECT_EQ(harmonic_portability({0.5, 0}), 0);
}

TEST(Portability, SvgHasABarPerPlatformAndKindAndOnePPerApplication) {
  const std::string log = job("1", "a", "h100-sxm5-80gb", "infiniband", "megatron", 1000, 0.9) +
                          job("2", "b", "a100-sxm4-80gb", "roce", "megatron", 500, 0.8);
  const MergedLog m = merge_logs({{"t", log}});
  std::vector<const LogEntry*> rows;
  for (const auto& e : m.entries) rows.push_back(&e);
  const std::string svg = portability_svg(portability(rows));
  EXPECT_EQ(paratune::tuning::testing::xml_problem(svg), "");
  EXPECT_EQ(paratune::tuning::testing::count(svg, "<rect class=\"eff\""), 4u);
  EXPECT_EQ(paratune::tuning::testing::count(svg, "<text class=\"pp\""), 1u);
}
