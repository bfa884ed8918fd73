// Every topology fixture (hwloc XML, NCCL topology files, their `paratune probe --json` form, modern/ included; the
// QPL psmgmt dumps from ../shared), through the same path as a job (probe -> cluster_from_topology -> advisor):
//  * every emitted variable that names a device names one the fixture file itself names (read from the file, not
//    from the probe), and no placeholder the probe made up appears in any value;
//  * every NCCL_* / FI_* / OFI_NCCL_* variable is in the parameter list of the transport the fabric uses
//    (tests/contracts: NCCL's own, aws-ofi-nccl's for libfabric);
//  * on EFA, and where no fact says which fabric, no NCCL_IB_* at all;
//  * a plan on a vendor file that names no NIC carries the note saying why NCCL's device selection was left alone.
// Positive controls: files that name their NICs get NCCL_IB_HCA with exactly those names.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "paratune/planner/scenario_builder.h"
#include "paratune/advisor/advisor.h"
#include "paratune/advisor/catalog.h"
#include "paratune/advisor/env.h"
#include "paratune/policies/policy.h"
#include "paratune/probe/probe.h"

namespace fs = std::filesystem;
using namespace paratune;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// The device names a fixture file states: <net name=...> of NCCL files, OS device names of hwloc XML.
std::set<std::string> names_in_file(const std::string& path) {
  const std::string text = read_text(path);
  static const std::regex net(R"re(<net\s+name="([^"]+)")re");
  static const std::regex osdev(R"re(<object[^>]*type="OSDev"[^>]*\sname="([^"]+)")re");
  std::set<std::string> out;
  for (const auto* re : {&net, &osdev})
    for (auto it = std::sregex_iterator(text.begin(), text.end(), *re); it != std::sregex_iterator(); ++it)
      out.insert((*it)[1]);
  return out;
}

bool is_nccl_file(const std::string& path) { return read_text(path).find("<system") != std::string::npos; }

// The parameter lists extracted from the transports' sources (tests/contracts/*.json).
struct Contracts {
  std::set<std::string> nccl, fi, ofi_nccl, net_plugin_names;
  Contracts() {
    const std::string dir = std::string(PARATUNE_CONTRACTS_DIR);
    // In NCCL 2.30 and in 2.21 alike (the oldest release the contracts cover).
    std::map<std::string, int> releases;
    for (const char* f : {"/nccl--2.30.json", "/nccl--2.21.json"}) {
      const auto nccl_json = nlohmann::json::parse(read_text(dir + f));
      std::set<std::string> names;
      for (const char* k : {"params_macro", "variables"})
        for (const auto& v : nccl_json.at(k)) names.insert(v.get<std::string>());
      for (const auto& n : names) ++releases[n];
    }
    for (const auto& [n, count] : releases)
      if (count == 2) nccl.insert(n);
    const auto ofi = nlohmann::json::parse(read_text(dir + "/aws-ofi-nccl--1.21.json"));
    for (const auto& v : ofi.at("fi_variables_set_or_read")) fi.insert(v.get<std::string>());
    for (const auto& v : ofi.at("params")) ofi_nccl.insert(upper(v.get<std::string>()));  // OFI_NCCL_<NAME>
    for (const auto& v : ofi.at("net_plugin_names")) net_plugin_names.insert(v.get<std::string>());
  }
};

const Contracts& contracts() {
  static const Contracts c;
  return c;
}

// The device names a variable's value lists: NCCL_IB_HCA "=mlx5_0:1,mlx5_1:1", NCCL_SOCKET_IFNAME "=eth0" or "ib".
std::vector<std::string> named_devices(const advisor::EnvSetting& e) {
  if (e.name != "NCCL_IB_HCA" && e.name != "NCCL_SOCKET_IFNAME") return {};
  std::string v = e.value;
  if (!v.empty() && (v[0] == '=' || v[0] == '^')) v.erase(0, 1);
  std::vector<std::string> out;
  std::stringstream ss(v);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(item.substr(0, item.find(':')));
  return out;
}

struct Case {
  std::string file;   // the fixture
  bool via_json;      // probed, then through `paratune probe --json` and back, as a topology= JSON file would be
};

// The QPL-licensed ParaStation dumps are not in the repository (fixtures/topologies/README.md): ../shared only.
std::vector<Case> psmgmt_cases() {
  const std::string shared = std::string(PARATUNE_SHARED_DIR) + "/fixtures/topologies/hwloc-xml";
  std::vector<Case> out;
  if (fs::is_directory(shared))
    for (const auto& e : fs::directory_iterator(shared))
      if (e.path().filename().string().rfind("psmgmt-", 0) == 0)
        for (bool json : {false, true}) out.push_back({e.path().string(), json});
  return out;
}

std::vector<Case> all_cases() {
  const std::string dir = PARATUNE_FIXTURES_DIR;
  std::vector<std::string> files;
  for (const char* sub : {"hwloc-xml", "modern/hwloc-xml", "nccl-topo", "modern/nccl-topo"})
    for (const auto& e : fs::directory_iterator(dir + "/" + sub))
      if (e.path().extension() == ".xml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  std::vector<Case> out;
  for (const auto& f : files)
    for (bool json : {false, true}) out.push_back({f, json});
  return out;
}

struct Outcome {
  advisor::Scenario scenario;
  std::vector<advisor::EnvSetting> env;
  std::vector<std::string> notes;
  probe::Topology topology;
};

// The plan a job on 8 such nodes would get; GPU models the file does not give are named as a site policy's
// facts.gpu would name them.
std::optional<Outcome> plan_for(const Case& c, std::string& why_not) {
  probe::ProbeOptions o;
  o.topology_file = c.file;
  probe::Topology t;
  try {
    t = probe::probe(o);
  } catch (const probe::ProbeError& e) {
    why_not = e.what();
    return std::nullopt;
  }
  if (c.via_json) {
    const std::string path = testing::TempDir() + "/fixture-" + fs::path(c.file).stem().string() + ".json";
    std::ofstream(path) << probe::to_json(t);
    o.topology_file = path;
    t = probe::probe(o);
  }
  Outcome out;
  out.topology = t;
  planner::Allocation alloc;
  alloc.nodes = 8;
  advisor::Scenario& s = out.scenario;
  try {
    s.cluster = planner::cluster_from_topology(t, alloc, out.notes);
  } catch (const std::exception& e) {
    why_not = e.what();
    return std::nullopt;
  }
  if (!advisor::is_gpu_key(s.cluster.gpu)) s.cluster.gpu = "h100-sxm5-80gb";
  if (!advisor::gpu_spec(s.cluster.gpu).bf16) s.training.precision = advisor::Precision::Fp16;
  s.model = advisor::model_preset("llama3-8b");
  s.training.global_batch = 1024;
  // Pipeline stages across nodes and data parallelism across nodes: the layouts that set the most variables.
  advisor::Layout pipelined;
  pipelined.tp = s.cluster.gpus_per_node;
  pipelined.pp = 8;
  advisor::Layout data_parallel;
  data_parallel.dp = 8 * s.cluster.gpus_per_node;
  for (const auto& l : {pipelined, data_parallel})
    for (auto& e : advisor::synthesize_env(s, advisor::Framework::Megatron, l, 10)) out.env.push_back(e);
  for (auto& n : advisor::network_notes(s)) out.notes.push_back(n);
  return out;
}

std::string label(const Case& c) {
  return fs::path(c.file).filename().string() + (c.via_json ? " (as probe JSON)" : "");
}

bool note_with(const std::vector<std::string>& notes, const std::string& part) {
  return std::any_of(notes.begin(), notes.end(), [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

struct Tally {
  int planned = 0, named_hca = 0, vendor_unnamed = 0;
};

void check_case(const Case& c, Tally& tally) {
  SCOPED_TRACE(label(c));
  std::string why_not;
  const auto out = plan_for(c, why_not);
  if (!out) {
    // Known refusals only: the fused two-host GB300 dump, and AWS g5's file (bare PCI addresses, no classes).
    EXPECT_TRUE(why_not.find("describes 2 hosts") != std::string::npos ||
                why_not.find("has no GPU in the job's allocation") != std::string::npos)
        << why_not;
    return;
  }
  ++tally.planned;
  const auto file_names = names_in_file(c.file);
  std::set<std::string> placeholders;
  for (const auto& n : out->topology.nics)
    if (!n.name_reported) placeholders.insert(n.name);
  const auto& k = contracts();
  const auto& cl = out->scenario.cluster;
  for (const auto& e : out->env) {
    for (const auto& d : named_devices(e))
      EXPECT_TRUE(file_names.count(d)) << e.name << "=" << e.value << ": " << d << " is not a name in the file";
    for (const auto& p : placeholders) {
      const std::regex word("(^|[=,^:/ ])" + p + "($|[:,])");
      EXPECT_FALSE(std::regex_search(e.value, word)) << e.name << "=" << e.value << " holds placeholder " << p;
    }
    if (e.name.rfind("NCCL_", 0) == 0) {
      EXPECT_TRUE(k.nccl.count(e.name)) << e.name << " is not an NCCL parameter";
    }
    if (e.name.rfind("FI_", 0) == 0) {
      EXPECT_TRUE(k.fi.count(e.name)) << e.name << " is not read by aws-ofi-nccl";
      EXPECT_TRUE(cl.fabric_known) << e.name << " with no fabric known";
    }
    if (e.name.rfind("OFI_NCCL_", 0) == 0) {
      EXPECT_TRUE(k.ofi_nccl.count(e.name)) << e.name;
    }
    if (e.name == "NCCL_NET") {
      EXPECT_TRUE(k.net_plugin_names.count(e.value)) << e.value;
    }
    if (e.name == "NCCL_TOPO_FILE") {
      EXPECT_EQ(fs::path(e.value), fs::absolute(c.file).lexically_normal()) << "NCCL_TOPO_FILE is not the fixture";
    }
    if (e.name.rfind("NCCL_IB_", 0) == 0) {
      EXPECT_TRUE(cl.fabric_known && cl.fabric != advisor::Fabric::Efa) << e.name << " on " << to_string(cl.fabric);
    }
  }
  tally.named_hca += std::any_of(out->env.begin(), out->env.end(), [](const auto& e) { return e.name == "NCCL_IB_HCA"; });
  // A vendor NCCL file that names no NIC but has some: the plan says why NCCL chooses its devices itself.
  if (is_nccl_file(c.file) && file_names.empty() && cl.nic_count > 0) {
    ++tally.vendor_unnamed;
    EXPECT_TRUE(note_with(out->notes, "NCCL's own selection is left alone"));
  }
}

}  // namespace

TEST(FabricFixtures, EveryFixtureEmitsOnlyWhatTheNodeAndTheTransportKnow) {
  Tally tally;
  for (const auto& c : all_cases()) check_case(c, tally);
  // What the loop covered (fixtures/topologies/README.md): 6 hwloc + 3 modern hwloc + 7 NCCL + 4 modern NCCL files,
  // each also as JSON; g5 and the fused GB300 refused.
  EXPECT_EQ(tally.planned, 2 * (6 + 3 + 7 + 4 - 2));
  EXPECT_GE(tally.named_hca, 2 * 3);       // at least Lassen, RCCL MI300X, OCI B300 (each also as JSON)
  EXPECT_EQ(tally.vendor_unnamed, 2 * 5);  // Azure NDv2/v4/v5, AWS p4d/p5
}

TEST(FabricFixtures, PsmgmtDumpsFromShared) {
  const auto cases = psmgmt_cases();
  if (cases.empty())
    GTEST_SKIP() << "no psmgmt-*.xml under " << PARATUNE_SHARED_DIR
                 << "/fixtures/topologies/hwloc-xml: the QPL-licensed ParaStation dumps are kept out of the "
                    "repository and read from ../shared only";
  Tally tally;
  for (const auto& c : cases) check_case(c, tally);
  EXPECT_EQ(tally.planned, static_cast<int>(cases.size()));
  EXPECT_EQ(tally.named_hca, static_cast<int>(cases.size()));  // the dumps name their mlx5 HCAs
}

// Positive controls: a file that names its HCAs gets NCCL_IB_HCA with exactly those names, port 1 as written.
TEST(FabricFixtures, NamedHcasAreListed) {
  const std::string dir = PARATUNE_FIXTURES_DIR;
  for (const char* rel : {"modern/nccl-topo/oci-b300-nccl-dump-B300MP.xml", "modern/nccl-topo/rccl-topo_8p_940-8xmi300x-8cx7.xml",
                          "hwloc-xml/mpibind-lassen-p9-4xv100.xml"}) {
    for (bool json : {false, true}) {
      const Case c{dir + "/" + rel, json};
      SCOPED_TRACE(label(c));
      std::string why_not;
      const auto out = plan_for(c, why_not);
      ASSERT_TRUE(out) << why_not;
      std::string hca;
      for (const auto& e : out->env)
        if (e.name == "NCCL_IB_HCA") hca = e.value;
      ASSERT_FALSE(hca.empty());
      std::set<std::string> listed;
      for (const auto& d : named_devices({"NCCL_IB_HCA", hca, ""})) listed.insert(d);
      std::set<std::string> hcas;  // the file's RDMA device names (hwloc also names netdevs and disks)
      for (const auto& n : names_in_file(c.file))
        if (n.rfind("mlx5_", 0) == 0 || n.rfind("rdma_vf_rail", 0) == 0) hcas.insert(n);
      EXPECT_EQ(listed, hcas) << hca;
      EXPECT_EQ(hca.find(":2"), std::string::npos) << hca;  // every port="1" stays port 1
      EXPECT_FALSE(note_with(out->notes, "NIC device names"));
    }
  }
}

// The fabric each vendor file's facts give: EFA from Amazon's vendor id, InfiniBand from the PCI class, nothing
// from bare PCI addresses; Azure from Hyper-V's virtual PCI.
TEST(FabricFixtures, FabricFromTheVendorFilesFacts) {
  const std::string dir = PARATUNE_FIXTURES_DIR;
  struct Want {
    const char* rel;
    std::optional<advisor::Fabric> fabric;
    const char* cloud;
  };
  const Want wants[] = {
      {"nccl-topo/aws-p4d-24xl-topo.xml", advisor::Fabric::Efa, "aws"},               // vendor="0x1d0f"
      {"nccl-topo/aws-p5.48xl-topo.xml", std::nullopt, ""},                            // no vendor, no class
      {"nccl-topo/azure-ndv4-topo.xml", advisor::Fabric::InfiniBand, "azure"},         // class="0x020700"
      {"nccl-topo/azure-ndv5-topo.xml", advisor::Fabric::InfiniBand, "azure"},
      {"nccl-topo/azure-ndv2-topo.xml", advisor::Fabric::InfiniBand, "azure"},
      {"nccl-topo/azure-ncv4-topo.xml", advisor::Fabric::Ethernet, "azure"},           // <net name="eth0">
      {"modern/nccl-topo/rccl-topo_4p_940-4xmi300a-4cxi.xml", advisor::Fabric::Slingshot, ""},   // vendor 0x17db
      {"modern/hwloc-xml/awsofinccl-aws-p6e-gb200.36xlarge-4xgb200-16efa.xml", advisor::Fabric::Efa, "aws"},  // DMI
      {"modern/hwloc-xml/nixl-aws-p6-b200.48xlarge-8xb200-8efa-2cx7.xml", advisor::Fabric::Efa, ""},  // 8 EFA, 2 CX-7
  };
  for (const auto& w : wants) {
    SCOPED_TRACE(w.rel);
    std::string why_not;
    const auto out = plan_for({dir + "/" + w.rel, false}, why_not);
    ASSERT_TRUE(out) << why_not;
    const auto& c = out->scenario.cluster;
    EXPECT_EQ(c.fabric_known, w.fabric.has_value());
    if (w.fabric) {
      EXPECT_EQ(c.fabric, *w.fabric) << to_string(c.fabric);
    }
    EXPECT_EQ(c.cloud.value_or(""), w.cloud);
  }
}

// Where the file says nothing about the fabric (AWS p5), the site policy's facts.fabric states it, and the fabric's
// settings follow; the placeholders still name nothing.
TEST(FabricFixtures, PolicyStatesTheFabricAVendorFileLeavesOut) {
  std::string why_not;
  auto out = plan_for({std::string(PARATUNE_FIXTURES_DIR) + "/nccl-topo/aws-p5.48xl-topo.xml", false}, why_not);
  ASSERT_TRUE(out) << why_not;
  ASSERT_FALSE(out->scenario.cluster.fabric_known);
  const auto policy = policies::resolve(policies::parse_policy("[defaults.facts]\nfabric = \"efa\"\n", "site.toml"), "");
  const auto changes = policies::apply_to_scenario(policy, out->scenario);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_NE(policies::describe(changes[0]).find("probe: not known"), std::string::npos) << policies::describe(changes[0]);
  EXPECT_TRUE(out->scenario.cluster.fabric_known);
  advisor::Layout l;
  l.tp = 8;
  l.pp = 8;
  const auto env = advisor::synthesize_env(out->scenario, advisor::Framework::Megatron, l, 10);
  auto value = [&](const char* n) {
    for (const auto& e : env)
      if (e.name == n) return e.value;
    return std::string("<unset>");
  };
  EXPECT_EQ(value("FI_PROVIDER"), "efa");
  EXPECT_EQ(value("NCCL_IB_HCA"), "<unset>");
  EXPECT_FALSE(note_with(advisor::network_notes(out->scenario), "does not say which fabric"));
}
