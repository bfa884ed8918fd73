// JSON round trip, fingerprint stability/sensitivity, content detection of `paratune probe --json` files.
#include <fstream>
#include <nlohmann/json.hpp>

#include "helpers.h"
#include "paratune/probe/detail.h"

using namespace paratune::probe;
using probe_test::load_fixture;

namespace {
const char* kAllHwloc[] = {"hwloc-xml/hwloc-nvidia-dgx2.xml",         "hwloc-xml/hwloc-power8-4gpu-nvlink.xml",
                           "hwloc-xml/hwloc-2s-3gpu-cx4-normalio.xml", "hwloc-xml/hwloc-2s-3gpu-cx3.xml",
                           "hwloc-xml/mpibind-lassen-p9-4xv100.xml",   "hwloc-xml/mpibind-corona-8xmi50-rsmi.xml",
                           "nccl-topo/azure-ndv4-topo.xml",            "nccl-topo/aws-p5.48xl-topo.xml",
                           "nccl-topo/azure-ncv4-topo.xml"};
}

TEST(Json, ExactRoundTripOnEveryFixture) {
  for (const char* f : kAllHwloc) {
    SCOPED_TRACE(f);
    Topology t = load_fixture(f, {0});
    const std::string a = to_json(t);
    Topology u = from_json(a);
    EXPECT_EQ(to_json(u), a);
    EXPECT_EQ(to_json(u, -1), to_json(t, -1));
    EXPECT_EQ(compute_fingerprint(u), t.fingerprint);
  }
}

TEST(Json, KeysOfTheContract) {
  Topology t = load_fixture("hwloc-xml/mpibind-lassen-p9-4xv100.xml");
  auto j = nlohmann::json::parse(to_json(t));
  for (const char* k : {"source", "cloud", "fingerprint", "hostname", "gpus", "nics", "gpu_paths", "nvlink_domains",
                        "nvlink_gbps_per_gpu", "inferred", "warnings"})
    EXPECT_TRUE(j.contains(k)) << k;
  for (const char* k : {"index", "pci_bus_id", "vendor_id", "device_id", "model", "memory_gib", "numa",
                        "in_allocation", "nearest_nics", "nic_path"})
    EXPECT_TRUE(j["gpus"][0].contains(k)) << k;
  for (const char* k : {"name", "port", "state", "link_layer", "rate_gbps", "netdev", "pci_bus_id", "numa", "role",
                        "gid_index"})
    EXPECT_TRUE(j["nics"][0].contains(k)) << k;
  EXPECT_EQ(j["gpus"][0]["vendor_id"], "0x10de");
  EXPECT_TRUE(j["nics"][0]["rate_gbps"].is_null());
  EXPECT_TRUE(j["cloud"].is_null());
}

TEST(Json, OptionalValuesAndDoublesSurvive) {
  Topology t;
  t.source = "json";
  t.cloud = "aws";
  Gpu g;
  g.model = "h100-sxm5-80gb";
  g.memory_gib = 79.999999999999;
  g.nic_path = "PXB";
  g.in_allocation = false;
  t.gpus.push_back(g);
  Nic n;
  n.name = "mlx5_0";
  n.rate_gbps = 0.1 + 0.2;
  n.gid_index = 3;
  n.link_layer = "ethernet";
  t.nics.push_back(n);
  t.gpu_paths = {{"X"}};
  t.nvlink_domains = {{0}};
  t.nvlink_gbps_per_gpu = 1.0 / 3.0;
  Topology u = from_json(to_json(t));
  EXPECT_EQ(u.cloud, t.cloud);
  EXPECT_EQ(u.gpus[0].memory_gib, t.gpus[0].memory_gib);
  EXPECT_FALSE(u.gpus[0].in_allocation);
  EXPECT_EQ(u.nics[0].rate_gbps, t.nics[0].rate_gbps);
  EXPECT_EQ(u.nics[0].gid_index, 3);
  EXPECT_EQ(u.nvlink_gbps_per_gpu, t.nvlink_gbps_per_gpu);
  EXPECT_EQ(to_json(u), to_json(t));
}

TEST(Json, BadKeysAreNamed) {
  auto err = [](const std::string& text) {
    try {
      from_json(text, "x.json");
    } catch (const ProbeError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(err("{}").find("x.json: key 'source'"), std::string::npos);
  EXPECT_NE(err(R"({"source":"json","gpus":{},"nics":[]})").find("'gpus'"), std::string::npos);
  EXPECT_NE(err(R"({"source":"json","gpus":[{"index":"a","model":"x"}],"nics":[]})").find("gpus[0].index"),
            std::string::npos);
  EXPECT_NE(err(R"({"source":"json","gpus":[{"index":0,"model":"x","vendor_id":"zz"}],"nics":[]})")
                .find("gpus[0].vendor_id"),
            std::string::npos);
  EXPECT_NE(err(R"({"source":"json","gpus":[],"nics":[{"name":1}]})").find("nics[0].name"), std::string::npos);
  EXPECT_NE(err(R"({"source":"json","gpus":[],"nics":[],"gpu_paths":[["X"]]})").find("gpu_paths"),
            std::string::npos);
  EXPECT_NE(err(R"({"source":"json","gpus":[{"index":0,"model":"x"}],"nics":[],"gpu_paths":[["FOO"]]})")
                .find("FOO"),
            std::string::npos);
  EXPECT_NE(err(R"({"source":"json","gpus":[],"nics":[],"nvlink_domains":[[5]]})").find("nvlink_domains"),
            std::string::npos);
  EXPECT_NE(err("[1,2]").find("x.json"), std::string::npos);
  EXPECT_NE(err("{\"source\": ").find("not valid JSON"), std::string::npos);
}

TEST(Json, ProbeAcceptsItsOwnJsonOutput) {
  probe_test::TempDir d;
  Topology t = load_fixture("hwloc-xml/hwloc-2s-3gpu-cx4-normalio.xml");
  const std::string path = d.path + "/probe.json";
  std::ofstream(path) << to_json(t);
  Topology u = probe_test::load(path, {2});
  EXPECT_EQ(u.source, "json");
  EXPECT_EQ(u.gpus.size(), 3u);
  EXPECT_FALSE(u.gpus[0].in_allocation);
  EXPECT_TRUE(u.gpus[2].in_allocation);
  EXPECT_EQ(u.fingerprint, t.fingerprint);
}

TEST(Fingerprint, StableAcrossLoadsAndSources) {
  Topology a = load_fixture("hwloc-xml/hwloc-nvidia-dgx2.xml");
  Topology b = load_fixture("hwloc-xml/hwloc-nvidia-dgx2.xml", {0, 1});
  EXPECT_EQ(a.fingerprint, b.fingerprint);  // the allocation is not part of the node's fingerprint
  EXPECT_EQ(a.fingerprint, compute_fingerprint(a));
  Topology c = a;
  c.hostname = "other";
  c.warnings.push_back("x");
  c.source = "json";
  EXPECT_EQ(compute_fingerprint(c), a.fingerprint);
  // A known constant: the hash function must never change silently (FNV-1a 64 test vector).
  EXPECT_EQ(detail::fnv1a64_hex(""), "cbf29ce484222325");
  EXPECT_EQ(detail::fnv1a64_hex("a"), "af63dc4c8601ec8c");
}

TEST(Fingerprint, SensitiveToWhatMatters) {
  const Topology base = load_fixture("hwloc-xml/mpibind-lassen-p9-4xv100.xml");
  auto differs = [&](auto mutate) {
    Topology t = base;
    mutate(t);
    return compute_fingerprint(t) != base.fingerprint;
  };
  EXPECT_TRUE(differs([](Topology& t) { t.gpus.pop_back(); }));
  EXPECT_TRUE(differs([](Topology& t) { t.gpus[0].model = "v100-sxm2-32gb"; }));
  EXPECT_TRUE(differs([](Topology& t) { t.nics[0].state = "down"; }));
  EXPECT_TRUE(differs([](Topology& t) { t.nics[0].rate_gbps = 100.0; }));
  EXPECT_TRUE(differs([](Topology& t) { t.nics.pop_back(); }));
  EXPECT_TRUE(differs([](Topology& t) { t.nvlink_domains = {{0, 1, 2, 3}}; }));
  EXPECT_TRUE(differs([](Topology& t) { t.gpu_paths[0][1] = "SYS"; }));
  EXPECT_TRUE(differs([](Topology& t) { t.gpus[1].nic_path = "SYS"; }));
  EXPECT_FALSE(differs([](Topology& t) { t.gpus[0].in_allocation = false; }));
  // Different fixtures differ.
  EXPECT_NE(load_fixture("hwloc-xml/hwloc-2s-3gpu-cx3.xml").fingerprint,
            load_fixture("hwloc-xml/hwloc-2s-3gpu-cx4-normalio.xml").fingerprint);
}
