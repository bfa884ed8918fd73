// The planner's two entries, the job's SPEC and the command line's whole scenario, make one plan the same way:
// the same scenario on the same node gives the same layout, arguments and variables; the job's defaults (BF16 →
// FP16 on a GPU without BF16, the NVLink domain from the GPU model when the topology does not say) hold for both.
#include <gtest/gtest.h>

#include "paratune/advisor/catalog.h"
#include "paratune/advisor/scenario_toml.h"
#include "paratune/planner/decision.h"
#include "paratune/planner/plan_json.h"
#include "test_topologies.h"

using namespace paratune;
using namespace paratune::planner;

namespace {

const char* kScenario =
    "[model]\npreset = \"llama3-8b\"\nseq_len = 4096\n[training]\nglobal_batch = 256\n"
    "[cluster]\nnodes = 2\n[parallel]\npp = 2\n";

// The job: --paratune=@s.toml on 2 nodes of the topology (the file's [cluster] is replaced by the node).
DecisionInput job_input(const probe::Topology& topo) {
  DecisionInput in;
  in.spec = parse_option_spec("@s.toml");
  in.scenario_text = kScenario;
  in.alloc.nodes = 2;
  in.topology = topo;
  return in;
}

// The command line: `paratune advise --scenario s.toml --topology T`.
DecisionInput cli_input(const probe::Topology& topo) {
  DecisionInput in;
  in.scenario = advisor::parse_scenario_toml(kScenario, "s.toml", advisor::ClusterSource::Caller);
  in.topology = topo;
  return in;
}

// A DGX-2-like node as an hwloc XML without NVLink shows it: 8 V100 SXM3 (NVSwitch, no BF16), domain unknown.
probe::Topology v100_without_nvlink_facts() {
  probe::Topology t = fixtures::dgx_a100_like();
  for (auto& g : t.gpus) g.model = "v100-sxm3-32gb";
  t.nvlink_domains.clear();
  t.nvlink_gbps_per_gpu.reset();
  t.nvlink_unknown = true;
  return t;
}

}  // namespace

TEST(Planner, TheScenarioFormMakesTheJobsPlan) {
  const auto job = decide(job_input(fixtures::dgx_a100_like()));
  const auto cli = decide(cli_input(fixtures::dgx_a100_like()));
  EXPECT_EQ(to_json(cli.plan.layout), to_json(job.plan.layout));
  EXPECT_EQ(to_json(cli.scenario), to_json(job.scenario));
  // The files byte for byte: the framework's arguments, torchrun.args, and plan.json but for the notes (the job's
  // says its scenario came from @s.toml, the command line's that its cluster came from the topology) and the
  // search's stopwatch.
  const auto cli_files = decision_files(cli), job_files = decision_files(job);
  ASSERT_EQ(cli_files.size(), job_files.size());
  for (size_t i = 1; i < cli_files.size(); ++i) EXPECT_EQ(cli_files[i], job_files[i]) << job_files[i].first;
  auto comparable = [](const Decision& d) {
    auto j = decision_json(d);
    j.erase("notes");
    j["plan"].erase("search_seconds");
    return j;
  };
  EXPECT_EQ(comparable(cli), comparable(job));
  EXPECT_EQ(job.plan.layout.pp, 2);  // the file's constraint, in both
  // Positive control: another constraint in the command line's scenario and the two plans part.
  auto other = cli_input(fixtures::dgx_a100_like());
  other.scenario->parallel.pp = 1;
  EXPECT_NE(to_json(decide(other).plan.layout), to_json(job.plan.layout));
}

TEST(Planner, TheScenarioFormGetsTheJobsDefaults) {
  const auto topo = v100_without_nvlink_facts();
  for (const auto& d : {decide(job_input(topo)), decide(cli_input(topo))}) {
    EXPECT_FALSE(advisor::gpu_spec("v100-sxm3-32gb").bf16);  // the catalog's fact the fallback rests on
    EXPECT_EQ(d.scenario.training.precision, advisor::Precision::Fp16);
    EXPECT_EQ(d.scenario.cluster.nvlink_domain, 8);  // NVSwitch: all the node's GPUs, from the GPU model
    std::string notes;
    for (const auto& n : d.notes) notes += n + "\n";
    EXPECT_NE(notes.find("has no BF16 tensor cores: planning for FP16"), std::string::npos) << notes;
    EXPECT_NE(notes.find("assumed from the GPU model v100-sxm3-32gb (NVSwitch)"), std::string::npos) << notes;
  }
  // Positive control: a precision the user named stays (and a V100 cannot run BF16: refused, not replaced).
  auto named = job_input(topo);
  named.spec = parse_option_spec("llama3-8b,precision=bf16");
  EXPECT_THROW(decide(named), std::invalid_argument);
}

TEST(Planner, TheScenarioFormWithoutTopologyKeepsTheFilesCluster) {
  DecisionInput in;
  in.scenario = advisor::parse_scenario_toml(
      "[model]\npreset = \"llama3-8b\"\n[training]\nglobal_batch = 64\n[cluster]\ngpu = \"v100-sxm2-32gb\"\n"
      "nodes = 1\ngpus_per_node = 4\n", "s.toml", advisor::ClusterSource::Caller);
  in.topology_known = false;
  const auto d = decide(in);
  EXPECT_EQ(d.scenario.cluster.gpus_per_node, 4);
  EXPECT_EQ(d.scenario.training.precision, advisor::Precision::Fp16);  // V100: no BF16
  EXPECT_TRUE(d.fingerprint.empty());  // no node was probed
  EXPECT_EQ(d.plan.layout.tp * d.plan.layout.pp * d.plan.layout.dp * d.plan.layout.cp, 4);
}

TEST(Planner, PlanJobRecordsThePolicysVariableChangesAndMakesTheFilesOnce) {
  auto in = job_input(fixtures::dgx_a100_like());
  in.mode = Mode::Apply;
  in.policy.env.force["NCCL_DEBUG"] = "WARN";
  const auto plan = plan_job(in);
  bool recorded = false;
  for (const auto& c : plan.decision.policy_changes) recorded |= c.what.find("NCCL_DEBUG") != std::string::npos;
  EXPECT_TRUE(recorded);
  ASSERT_FALSE(plan.files.empty());
  EXPECT_EQ(plan.files.front().first, "plan.json");
  EXPECT_NE(plan.files.front().second.find("NCCL_DEBUG"), std::string::npos);  // the change is in plan.json
  EXPECT_EQ(plan.files, decision_files(plan.decision));
}

namespace {
std::vector<std::string> names_and_values(const std::vector<EnvAssignment>& v) {
  std::vector<std::string> out;
  for (const auto& a : v) out.push_back(a.name + "=" + a.value);
  return out;
}
}  // namespace

// The environment and the policy's word on it come with the plan, made for its directory: the paths name it, the
// plan files and the policy's changes do not depend on it (PARATUNE_* are never subject to env rules).
TEST(Planner, PlanJobCarriesTheEnvironmentForItsDirectory) {
  auto in = job_input(fixtures::dgx_a100_like());
  in.mode = Mode::Apply;
  in.policy.env.force["NCCL_DEBUG"] = "WARN";
  in.policy.env.forbid = {"NCCL_IB_DISABLE"};
  const Decision decided = decide(in);  // one decision (its plan.json carries the search's own time)
  const auto placed = plan_decision(decided, in.policy, {}, "/plans/job-7");
  const auto unplaced = plan_decision(decided, in.policy, {}, "");
  EXPECT_EQ(names_and_values(placed.env),
            names_and_values(decision_env(placed.decision, "/plans/job-7/plan.json", "/plans/job-7/report.jsonl")));
  EXPECT_EQ(names_and_values(unplaced.env), names_and_values(decision_env(unplaced.decision, "", "")));
  const auto injected = policy_injection(in.policy, placed.env);
  EXPECT_EQ(names_and_values(placed.injection.assignments), names_and_values(injected.assignments));
  EXPECT_EQ(placed.injection.force, injected.force);
  EXPECT_EQ(placed.injection.unset, std::vector<std::string>{"NCCL_IB_DISABLE"});
  bool names_plan = false;
  for (const auto& a : placed.injection.assignments)
    names_plan |= a.name == "PARATUNE_PLAN" && a.value == "/plans/job-7/plan.json";
  EXPECT_TRUE(names_plan);
  EXPECT_EQ(placed.files, unplaced.files);  // byte for byte, whichever directory they go to
}

// plan.json shows the host memory a plan pins for CPU activation offload beside what a GPU may pin, and says
// nothing of host memory for a plan that offloads nothing.
TEST(Planner, PlanJsonCarriesTheOffloadsHostMemory) {
  advisor::Prediction offloading;
  offloading.host_memory_gib_per_gpu = 12.5;
  offloading.host_capacity_gib = 190.0;
  const auto j = paratune::planner::to_json(offloading);
  EXPECT_EQ(j.at("host_memory_gib_per_gpu").get<double>(), 12.5);
  EXPECT_EQ(j.at("host_capacity_gib").get<double>(), 190.0);
  const auto none = paratune::planner::to_json(advisor::Prediction{});
  EXPECT_FALSE(none.contains("host_memory_gib_per_gpu"));
  EXPECT_TRUE(none.contains("memory_gib_per_gpu")) << "control: the GPU's memory is always there";
}
