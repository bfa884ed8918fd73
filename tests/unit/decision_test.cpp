#include <map>
#include <set>

#include <gtest/gtest.h>

#include "job/decision.h"
#include "test_topologies.h"

using namespace paratune;
using namespace paratune::job;

namespace {

DecisionInput input(const std::string& spec) {
  DecisionInput in;
  in.spec = parse_option_spec(spec);
  in.alloc.nodes = 2;
  in.alloc.gpus_on_node = 8;
  in.topology = fixtures::dgx_a100_like();
  return in;
}

std::set<std::string> names(const std::vector<EnvAssignment>& env) {
  std::set<std::string> out;
  for (const auto& e : env) out.insert(e.name);
  return out;
}

}  // namespace

TEST(Decision, LayoutCoversTheAllocation) {
  auto d = decide(input("llama3-8b,gbs=256"));
  const auto& l = d.plan.layout;
  EXPECT_EQ(l.tp * l.pp * l.dp * l.cp, 16);
  EXPECT_LE(l.tp, 8);
  EXPECT_EQ(256 % (l.dp * l.micro_batch), 0);
  EXPECT_GT(d.plan.prediction.step_time_s, 0);
  EXPECT_EQ(d.fingerprint, "test-fp");
}

TEST(Decision, EnvironmentContract) {
  auto d = decide(input("llama3-8b,gbs=256"));
  auto env = decision_env(d, "/x/plan.json", "/x/report.jsonl");
  auto n = names(env);
  for (const char* v : {"PARATUNE_TP", "PARATUNE_PP", "PARATUNE_DP", "PARATUNE_CP", "PARATUNE_VPP",
                        "PARATUNE_MICRO_BATCH", "PARATUNE_GLOBAL_BATCH", "PARATUNE_GRAD_ACCUM",
                        "PARATUNE_ZERO_STAGE", "PARATUNE_RECOMPUTE", "PARATUNE_SEQUENCE_PARALLEL",
                        "PARATUNE_PREDICTED_STEP_S", "PARATUNE_PREDICTED_TOKENS_PER_S", "PARATUNE_FINGERPRINT",
                        "PARATUNE_PLAN", "PARATUNE_REPORT"})
    EXPECT_TRUE(n.count(v)) << v;
  // Every variable carries a reason, and apply mode adds the advisor's NCCL/CUDA settings.
  for (const auto& e : env) EXPECT_FALSE(e.reason.empty()) << e.name;
  EXPECT_EQ(env.size(), 16 + d.plan.env.size());
  std::map<std::string, std::string> kv;
  for (const auto& e : env) kv[e.name] = e.value;
  EXPECT_EQ(std::stoi(kv["PARATUNE_GLOBAL_BATCH"]),
            std::stoi(kv["PARATUNE_DP"]) * std::stoi(kv["PARATUNE_MICRO_BATCH"]) * std::stoi(kv["PARATUNE_GRAD_ACCUM"]));
}

TEST(Decision, SuggestModeInjectsNoNcclOrCudaSettings) {
  auto d = decide(input("llama3-8b,gbs=256,mode=suggest"));
  EXPECT_EQ(d.mode, Mode::Suggest);
  for (const auto& e : decision_env(d, "", ""))
    EXPECT_EQ(e.name.rfind("PARATUNE_", 0), 0u) << e.name;
}

TEST(Decision, ConstraintsFromTheOptionAreHonoured) {
  auto d = decide(input("llama3-8b,gbs=256,tp=2,pp=2"));
  EXPECT_EQ(d.plan.layout.tp, 2);
  EXPECT_EQ(d.plan.layout.pp, 2);
}

TEST(Decision, PlanFileCarriesScenarioAndPlan) {
  auto d = decide(input("llama3-8b,gbs=256"));
  auto j = decision_json(d);
  EXPECT_EQ(j["mode"], "apply");
  EXPECT_EQ(j["scenario"]["cluster"]["nodes"], 2);
  EXPECT_EQ(j["plan"]["layout"]["tp"], d.plan.layout.tp);
  EXPECT_TRUE(j["plan"]["prediction"].contains("breakdown"));
}
