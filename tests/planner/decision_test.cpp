#include <map>
#include <set>

#include <gtest/gtest.h>

#include "paratune/planner/decision.h"
#include "test_topologies.h"

using namespace paratune;
using namespace paratune::planner;

namespace {

DecisionInput input(const std::string& spec) {
  DecisionInput in;
  in.spec = parse_option_spec(spec);
  in.alloc.nodes = 2;
  in.alloc.gpus_on_node = 8;
  in.topology = fixtures::dgx_a100_like();
  in.mode = decide_job_mode(&in.spec, in.config, in.policy, 8).mode;
  return in;
}

std::set<std::string> names(const std::vector<EnvAssignment>& env) {
  std::set<std::string> out;
  for (const auto& e : env) out.insert(e.name);
  return out;
}

std::map<std::string, std::string> kv_of(const std::vector<EnvAssignment>& env) {
  std::map<std::string, std::string> kv;
  for (const auto& e : env) kv[e.name] = e.value;
  return kv;
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
                        "PARATUNE_PLAN", "PARATUNE_REPORT", "PARATUNE_FRAMEWORK", "PARATUNE_FRAMEWORK_VERSION",
                        "PARATUNE_ARGS", "PARATUNE_ARGS_TEXT"})
    EXPECT_TRUE(n.count(v)) << v;
  // Every variable carries a reason, and apply mode adds the advisor's NCCL/CUDA settings.
  for (const auto& e : env) EXPECT_FALSE(e.reason.empty()) << e.name;
  EXPECT_EQ(env.size(), 20 + d.plan.env.size());
  EXPECT_FALSE(n.count("PARATUNE_MASTER_ADDR")) << "no node list given: no rendezvous host";
  EXPECT_EQ(kv_of(env)["PARATUNE_ARGS"], "/x/megatron.args");
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
  // The arguments still need what Megatron asserts (CUDA_DEVICE_MAX_CONNECTIONS=1 with tp > 1 on an A100): the plan
  // says so, for the user to set.
  auto tp = decide(input("llama3-8b,gbs=256,mode=suggest,tp=2"));
  const auto said = [](const Decision& x) {
    for (const auto& n : x.args.notes)
      if (n.find("mode=suggest") != std::string::npos && n.find("CUDA_DEVICE_MAX_CONNECTIONS=1") != std::string::npos)
        return true;
    return false;
  };
  EXPECT_TRUE(said(tp));
  EXPECT_FALSE(said(decide(input("llama3-8b,gbs=256,tp=2")))) << "apply mode sets it itself";
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

// Only the plan's framework: plan.json, its arguments and torchrun's flags (issue 13: no FSDP NO_SHARD next to a
// TP=2 Megatron plan).
TEST(Decision, FrameworkArgumentFilesMatchThePlan) {
  auto d = decide(input("llama3-8b,gbs=256,tp=2"));
  const auto list = decision_files(d);
  std::map<std::string, std::string> files(list.begin(), list.end());
  ASSERT_EQ(files.size(), 3u);
  EXPECT_NE(files["megatron.args"].find("--tensor-model-parallel-size=2"), std::string::npos) << files["megatron.args"];
  EXPECT_FALSE(files.count("deepspeed.json") || files.count("fsdp.json") || files.count("nemo.args"));
  EXPECT_EQ(nlohmann::json::parse(files["plan.json"])["plan"]["layout"]["tp"], 2);
  EXPECT_EQ(nlohmann::json::parse(files["plan.json"])["framework"]["version"], "core_v0.15");
  EXPECT_EQ(primary_args_file(d), "megatron.args");
  // A DeepSpeed plan writes deepspeed.json instead.
  auto ds = decide(input("llama3-8b,gbs=256,framework=deepspeed"));
  const auto dl = decision_files(ds);
  std::map<std::string, std::string> dfiles(dl.begin(), dl.end());
  EXPECT_TRUE(nlohmann::json::parse(dfiles.at("deepspeed.json")).contains("train_batch_size"));
  EXPECT_FALSE(dfiles.count("megatron.args"));
}

// torchrun's rendezvous: the allocation's first node (from Slurm's node list) and a port from the job id, both
// injected and written literally into torchrun.args.
TEST(Decision, RendezvousFromTheFirstNode) {
  auto in = input("llama3-8b,gbs=256,framework=fsdp");
  in.alloc.first_node = "gpu017";
  in.alloc.job_id = "4242";
  auto d = decide(in);
  auto kv = kv_of(decision_env(d, "/x/plan.json", "/x/report.jsonl"));
  EXPECT_EQ(kv["PARATUNE_MASTER_ADDR"], "gpu017");
  EXPECT_EQ(kv["PARATUNE_MASTER_PORT"], "24242");
  EXPECT_EQ(kv["PARATUNE_ARGS"], "/x/fsdp.json");
  const auto list = decision_files(d);
  std::map<std::string, std::string> files(list.begin(), list.end());
  EXPECT_NE(files["torchrun.args"].find("--rdzv_endpoint=gpu017:24242\n--rdzv_id=4242"), std::string::npos)
      << files["torchrun.args"];
}

// The site policy has the last word (policy text in the shape of the policy issue's example).
namespace {
policies::EffectivePolicy site_policy(const std::string& partition) {
  const char* text = R"(
[defaults]
mode = "apply"
[defaults.env]
force = { NCCL_IB_HCA = "mlx5_0:1,mlx5_1:1" }
default = { NCCL_IB_TIMEOUT = "22" }
forbid = ["NCCL_NVLS_ENABLE"]
[defaults.limits]
max_tp = 8
zero_stages = [0, 1, 2]
[partition.opa]
limits = { max_tp = 4, zero_stages = [1] }
[partition.debug]
max_mode = "suggest"
)";
  return policies::resolve(policies::parse_policy(text, "site.toml"), partition);
}
}  // namespace

TEST(DecisionWithPolicy, CapsOverrideTheUsersKeys) {
  auto in = input("llama3-8b,gbs=256,tp=8,zero=3");
  in.policy = site_policy("opa");
  auto d = decide(in);
  EXPECT_LE(d.plan.layout.tp, 4);
  EXPECT_EQ(d.plan.layout.zero_stage, 1);
  ASSERT_FALSE(d.policy_changes.empty());
  EXPECT_EQ(decision_json(d)["policy_changes"].size(), d.policy_changes.size());
}

TEST(DecisionWithPolicy, ForcedReplacesForbiddenIsRemovedDefaultOnlyIfUnset) {
  auto in = input("llama3-8b,gbs=256");
  in.policy = site_policy("");
  auto d = decide(in);
  MapEnvironment env(std::map<std::string, std::string>{
      {"NCCL_IB_HCA", "foo"}, {"NCCL_NVLS_ENABLE", "1"}, {"NCCL_IB_TIMEOUT", "14"}});
  auto inj = policy_injection(in.policy, decision_env(d, "/x/plan.json", "/x/report.jsonl"));
  auto out = inject(env, inj.assignments, inj.force, inj.unset);
  EXPECT_EQ(*env.get("NCCL_IB_HCA"), "mlx5_0:1,mlx5_1:1");
  EXPECT_FALSE(env.get("NCCL_NVLS_ENABLE"));
  EXPECT_EQ(*env.get("NCCL_IB_TIMEOUT"), "14");  // a default never replaces the user's value
  ASSERT_EQ(out.replaced.size(), 1u);
  EXPECT_EQ(out.replaced[0].value, "foo");
  ASSERT_EQ(out.removed.size(), 1u);
  EXPECT_EQ(out.removed[0].name, "NCCL_NVLS_ENABLE");
  EXPECT_TRUE(env.get("PARATUNE_TP"));
}

TEST(DecisionWithPolicy, MaxModeLowersTheUsersApply) {
  auto spec = parse_option_spec("llama3-8b,mode=apply");
  auto md = decide_job_mode(&spec, PluginConfig{}, site_policy("debug"), 8);
  EXPECT_EQ(md.mode, Mode::Suggest);
}

TEST(DecisionWithCalibration, TheSitesFittedEfficiencyChangesThePrediction) {
  auto in = input("llama3-8b,gbs=256,tp=2,pp=1");
  const double shipped = decide(in).plan.prediction.step_time_s;
  advisor::Calibration cal;
  advisor::CalibrationEntry e;
  e.gpu = "a100-sxm4-80gb";
  e.fabric = "infiniband";
  e.compute_scale = 0.5;  // this site's GEMMs run at half the shipped efficiency
  e.samples = 10;
  cal.entries.push_back(e);
  // Through the file format, as the plugin reads it.
  in.calibration = advisor::parse_calibration(advisor::to_toml(cal), "calibration.toml");
  auto d = decide(in);
  EXPECT_GT(d.plan.prediction.step_time_s, 1.5 * shipped);
  EXPECT_NE(d.notes.back().find("calibrated"), std::string::npos);
  // plan.json records that the prediction was calibrated and by which entry
  const auto plan = decision_json(d);
  EXPECT_EQ(plan["calibrated"], true);
  ASSERT_EQ(plan["calibration_entries"].size(), 1u);
  EXPECT_EQ(plan["calibration_entries"][0]["kind"], "efficiency");
  EXPECT_EQ(plan["calibration_entries"][0]["gpu"], "a100-sxm4-80gb");
  EXPECT_EQ(plan["calibration_entries"][0]["compute_scale"], 0.5);
  // control: without a calibration, not calibrated and no entries
  const auto plain = decision_json(decide(input("llama3-8b,gbs=256,tp=2,pp=1")));
  EXPECT_EQ(plain["calibrated"], false);
  EXPECT_TRUE(plain["calibration_entries"].empty());
  // an entry for another GPU does not apply: not calibrated
  cal.entries[0].gpu = "h100-sxm5-80gb";
  in.calibration = cal;
  const auto other = decision_json(decide(in));
  EXPECT_EQ(other["calibrated"], false);
  EXPECT_TRUE(other["calibration_entries"].empty());
}

// plugstack profile=: a hardware profile measured on nodes of this node's fingerprint replaces the catalog's rates
// it measured (here a network per node a tenth of the NICs': the prediction of the same layout is slower and the
// notes name the profile); one measured on another node type is ignored, and the notes say why.
TEST(DecisionWithProfile, AppliesOnlyOnTheNodeTypeItWasMeasuredOn) {
  auto in = input("llama3-8b,gbs=256,tp=1,pp=1");
  const auto shipped = decide(in);
  advisor::HardwareProfile p;
  p.fingerprint = shipped.fingerprint;
  p.gpu = "a100-sxm4-80gb";
  p.rates.inter_busbw_gbps = 2.5;  // 20 Gb/s per node where the fixture's NICs give far more
  in.profile = advisor::parse_profile(advisor::to_toml(p), "profile.toml");  // through the file, as the plugin
  const auto measured = decide(in);
  EXPECT_GT(measured.plan.prediction.step_time_s, shipped.plan.prediction.step_time_s);
  EXPECT_GT(measured.plan.prediction.breakdown.dp_comm_exposed, shipped.plan.prediction.breakdown.dp_comm_exposed);
  bool named = false;
  for (const auto& n : measured.notes) named |= n.find("from the hardware profile (fingerprint " + p.fingerprint) == 0;
  EXPECT_TRUE(named);

  p.fingerprint = "0000000000000000";  // measured on another node type
  in.profile = p;
  const auto other = decide(in);
  EXPECT_DOUBLE_EQ(other.plan.prediction.step_time_s, shipped.plan.prediction.step_time_s);
  bool ignored = false;
  for (const auto& n : other.notes) ignored |= n.find("hardware profile ignored") == 0;
  EXPECT_TRUE(ignored);
}

// A resumed run whose checkpoint needs what the site policy removes (its ZeRO stage here) cannot load it: refused
// with both reasons, so the job runs untouched, instead of a ZeRO-2 plan whose note says the checkpoint was kept.
// Control: the same resume where the policy allows the stage.
TEST(DecisionWithPolicy, AResumeThePolicyWouldBreakIsRefused) {
  auto first = input("llama3-8b,gbs=256,framework=deepspeed,zero=1");
  const Decision d1 = decide(first);
  ASSERT_EQ(d1.plan.layout.zero_stage, 1);
  std::string plan_json;
  for (const auto& [name, content] : decision_files(d1))
    if (name == "plan.json") plan_json = content;
  ASSERT_FALSE(plan_json.empty());
  auto again = input("llama3-8b,gbs=256,framework=deepspeed");
  again.resume_text = plan_json;
  again.resume_origin = "run1/plan.json";
  again.policy = policies::resolve(policies::parse_policy("[defaults.limits]\nzero_stages = [2, 3]\n", "p.toml"), "");
  try {
    decide(again);
    ADD_FAILURE() << "a resume the policy breaks was planned";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("resume from run1/plan.json: its checkpoint needs zero=1"), std::string::npos)
        << e.what();
  }
  again.policy = policies::resolve(policies::parse_policy("[defaults.limits]\nzero_stages = [1, 2]\n", "p.toml"), "");
  EXPECT_EQ(decide(again).plan.layout.zero_stage, 1) << "control";
}
