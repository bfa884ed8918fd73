// The Slurm-free parts of the multi-node path: %h in plugstack paths, every node's check carried to node 0's
// tuning line, the heterogeneous-job guard, the leaf-switch node order and parallel groups, what the environment
// carries for nodes without the plan file, and the NVLink domain assumed from the GPU model.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>

#include <gtest/gtest.h>

#include "paratune/advisor/catalog.h"
#include "paratune/planner/decision.h"
#include "paratune/planner/fabric_placement.h"
#include "job/job_files.h"
#include "job/node_checks.h"
#include "paratune/planner/plugin_config.h"
#include "paratune/common/safe_file.h"
#include "paratune/probe/probe.h"
#include "temp_dir.h"
#include "test_topologies.h"

using namespace paratune;
using namespace paratune::job;
using namespace paratune::planner;
using namespace paratune::common;

namespace {


std::map<std::string, std::string> kv_of(const std::vector<EnvAssignment>& env) {
  std::map<std::string, std::string> kv;
  for (const auto& e : env) kv[e.name] = e.value;
  return kv;
}

DecisionInput input(const std::string& spec, int nodes) {
  DecisionInput in;
  in.spec = parse_option_spec(spec);
  in.alloc.nodes = nodes;
  in.alloc.gpus_on_node = 8;
  in.topology = fixtures::dgx_a100_like();
  in.mode = decide_job_mode(&in.spec, in.config, in.policy, 8).mode;
  return in;
}

}  // namespace

TEST(HostPattern, ExpandsInTopologyAndCacheOnly) {
  const auto c = parse_plugin_config({"topology=/etc/paratune/nodes/%h.xml", "cache=/run/paratune/%h/t.json",
                                      "job_dir=/scratch/%h"}, "gpu17");
  EXPECT_EQ(c.topology, "/etc/paratune/nodes/gpu17.xml");
  EXPECT_EQ(c.cache, "/run/paratune/gpu17/t.json");
  EXPECT_EQ(c.job_dir, "/scratch/%h");  // not a pattern there
  EXPECT_EQ(expand_host_pattern("a", "/x/100%%-%h", "n1"), "/x/100%-n1");
  EXPECT_THROW(parse_plugin_config({"topology=/x/%h.xml"}, ""), ConfigError);
  EXPECT_THROW(parse_plugin_config({"topology=/x/%h.xml"}, ".."), ConfigError);
  EXPECT_THROW(parse_plugin_config({"topology=/x/%n.xml"}, "n1"), ConfigError);
  // Positive control: builtin names are never expanded.
  EXPECT_EQ(parse_plugin_config({"topology=builtin:nvidia-dgx2"}, "n1").topology, "builtin:nvidia-dgx2");
}

TEST(NodeChecks, RecordedPerNodeCollectedOnceByNodeZero) {
  fixtures::TempDir dir;
  UniqueFd jobs(::open(dir.path.c_str(), O_RDONLY | O_DIRECTORY));
  UniqueFd job42 = open_job_dir(jobs.get(), "42"), job7 = open_job_dir(jobs.get(), "7");
  EXPECT_TRUE(record_node_check(job42.get(), {"mn1", "0", "fpA", "fpA", true}));
  EXPECT_TRUE(record_node_check(job42.get(), {"mn3", "0", "fpB", "fpA", false}));
  EXPECT_TRUE(record_node_check(job42.get(), {"../../etc", "0", "fpA", "fpA", true}));  // a hostile name stays inside
  EXPECT_TRUE(record_node_check(job7.get(), {"mn2", "0", "fpC", "fpA", true}));        // another job's
  auto c = collect_node_checks(job42.get());
  EXPECT_EQ(c["checked"], 3);
  ASSERT_EQ(c["mismatch"].size(), 1u);
  EXPECT_EQ(c["mismatch"][0]["host"], "mn3");
  EXPECT_EQ(c["mismatch"][0]["plan_fingerprint"], "fpA");
  EXPECT_EQ(c["plan_unreadable"], nlohmann::json::array({"mn3"}));
  EXPECT_EQ(collect_node_checks(job42.get())["checked"], 0);  // read once, removed
  EXPECT_EQ(collect_node_checks(job7.get())["checked"], 1);   // the other job's untouched until its turn
  EXPECT_EQ(node_check_name("../../etc", "0").find('/'), std::string::npos);
  EXPECT_EQ(job_dir_name("../../etc").find('/'), std::string::npos);
}

TEST(HetJob, ComponentsFromSlurmHetSize) {
  EXPECT_EQ(het_job_components(MapEnvironment()), 0);
  EXPECT_EQ(het_job_components(MapEnvironment(std::map<std::string, std::string>{{"SLURM_HET_SIZE", "2"}})), 2);
  EXPECT_GT(het_job_components(MapEnvironment(std::map<std::string, std::string>{{"SLURM_HET_SIZE", "two"}})), 1);  // never plan on a guess
}

TEST(FabricPlacement, NodeOrderLeafByLeaf) {
  const auto p = placement_from_leaves({"n0", "n1", "n2", "n3"},
                                       {{"n0", "leafA"}, {"n1", "leafB"}, {"n2", "leafA"}, {"n3", "leafB"}});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->node_order, (std::vector<std::string>{"n0", "n2", "n1", "n3"}));
  EXPECT_EQ(p->placement.nodes_per_leaf, (std::vector<int>{2, 2}));
  EXPECT_EQ(p->placement.leaf_names, (std::vector<std::string>{"leafA", "leafB"}));
  EXPECT_FALSE(placement_from_leaves({"n0", "n9"}, {{"n0", "leafA"}}));  // n9 not placed: nothing is claimed
}

TEST(FabricPlacement, ParallelGroupsInMegatronOrder) {
  advisor::Layout l;
  l.tp = 8;
  l.dp = 2;
  l.pp = 2;  // 32 ranks on 4 nodes of 8: tp inside a node, dp over node pairs (0,1) and (2,3), pp over (0,2), (1,3)
  const auto g = parallel_groups(l, 8, {"a", "b", "c", "d"});
  EXPECT_FALSE(g.contains("tp"));
  EXPECT_EQ(g["dp"], nlohmann::json::parse(R"([["a","b"],["c","d"]])"));
  EXPECT_EQ(g["pp"], nlohmann::json::parse(R"([["a","c"],["b","d"]])"));
}

TEST(DecisionEnv, CarriesArgsTextAndNodeOrder) {
  auto in = input("llama3-8b,gbs=256", 2);
  in.fabric = placement_from_leaves({"n0", "n1"}, {{"n0", "leaf0"}, {"n1", "leaf1"}});
  const auto d = decide(in);
  const auto kv = kv_of(decision_env(d, "/x/plan.json", "/x/report.jsonl"));
  ASSERT_TRUE(kv.count("PARATUNE_ARGS_TEXT"));
  EXPECT_EQ(kv.at("PARATUNE_ARGS_TEXT") + "\n", [&] {
    for (const auto& [name, content] : decision_files(d))
      if (name == primary_args_file(d)) return content;
    return std::string("missing");
  }());
  EXPECT_EQ(kv.at("PARATUNE_NODE_ORDER"), "n0,n1");
  const auto j = decision_json(d);
  EXPECT_EQ(j["placement"]["node_order"], nlohmann::json::array({"n0", "n1"}));
  EXPECT_DOUBLE_EQ(j["placement"]["oversubscription"].get<double>(), 1.0);  // the documented default
  // Positive control: a single-node decision has no placement and no node order.
  const auto single = decide(input("llama3-8b,gbs=256", 1));
  EXPECT_FALSE(kv_of(decision_env(single, "/x/plan.json", "")).count("PARATUNE_NODE_ORDER"));
  EXPECT_TRUE(decision_json(single)["placement"].is_null());
}

// AWS p5 / Azure NDv5 NCCL files: no GPU model, NVLink "unknown"; the site's facts.gpu names the model, and the
// decision takes its NVSwitch domain and says so. Without it the GPU is unknown and there is no plan.
TEST(NvlinkAssumption, FromThePolicysGpuModel) {
  for (const char* file : {"nccl-topo/aws-p5.48xl-topo.xml", "nccl-topo/azure-ndv5-topo.xml"}) {
    probe::ProbeOptions o;
    o.topology_file = std::string(PARATUNE_FIXTURES_DIR) + "/" + file;
    auto in = input("llama3-8b,gbs=256", 2);
    in.topology = probe::probe(o);
    ASSERT_TRUE(in.topology.nvlink_unknown) << file;
    // The refusal says what the probe saw and where the site names the GPU (a job's user cannot describe it).
    const auto refusal = [](const DecisionInput& i) -> std::string {
      try {
        decide(i);
      } catch (const std::exception& e) {
        return e.what();
      }
      return "(planned)";
    };
    std::string why = refusal(in);
    EXPECT_NE(why.find("only PCI 10de:0000 (no device id"), std::string::npos) << file << ": " << why;
    EXPECT_NE(why.find("facts.gpu = \"KEY\""), std::string::npos) << file << ": " << why;
    // The command line's form: a scenario that names no GPU keeps what the probe saw and is refused the same way;
    // one that describes the GPU ([cluster.gpu_spec]) is planned for.
    DecisionInput cli = in;
    cli.scenario = advisor::Scenario{};
    cli.scenario->model = advisor::model_preset("llama3-8b");
    cli.scenario->training.global_batch = 256;
    cli.scenario->cluster.nodes = 2;
    why = refusal(cli);
    EXPECT_NE(why.find("only PCI 10de:0000"), std::string::npos) << file << ": " << why;
    cli.scenario->cluster.gpu = "h100-like";
    cli.scenario->cluster.peak_tflops = 989;
    cli.scenario->cluster.memory_gib = 80;
    EXPECT_EQ(decide(cli).scenario.cluster.gpu, "h100-like") << file;
    in.policy.facts.gpu = "h100-sxm5-80gb";
    const auto d = decide(in);
    EXPECT_EQ(d.scenario.cluster.nvlink_domain, 8) << file;
    bool said = false;
    for (const auto& n : d.notes) said |= n.find("assumed from the GPU model h100-sxm5-80gb (NVSwitch)") != std::string::npos;
    EXPECT_TRUE(said) << file;
    // The site's facts.nvlink_domain wins over the assumption.
    in.policy.facts.nvlink_domain = 4;
    EXPECT_EQ(decide(in).scenario.cluster.nvlink_domain, 4) << file;
  }
}
