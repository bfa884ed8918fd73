// Whether a NIC's name is the device's own (Nic::name_reported): vendor NCCL topology files list HCAs by PCI address
// only, and the placeholders the probe gives them must be marked so, through JSON and the cache too. Expected names
// are read from the fixture files themselves (<net name=...>), never from the probe's output.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "helpers.h"
#include "paratune/probe/detail.h"

using namespace paratune::probe;
using probe_test::fixture;
using probe_test::load_fixture;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The names of the <net> elements of an NCCL topology file, in file order.
std::vector<std::string> net_names(const std::string& path) {
  const std::string text = read_text(path);
  static const std::regex net(R"re(<net\s+name="([^"]+)")re");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), net); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

// Count of <pci> elements with this class attribute in the file.
size_t pci_class_count(const std::string& path, const std::string& cls) {
  const std::string text = read_text(path);
  const std::regex re("<pci [^>]*class=\"" + cls + "\"");
  return static_cast<size_t>(std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

}  // namespace

// Azure ND files: HCAs are <pci class="0x020700"> without <nic>/<net>: every NIC a placeholder, as many as the file
// has HCAs.
TEST(NicNames, AzureVendorFilesHaveOnlyPlaceholders) {
  for (const char* f : {"nccl-topo/azure-ndv2-topo.xml", "nccl-topo/azure-ndv4-topo.xml", "nccl-topo/azure-ndv5-topo.xml"}) {
    SCOPED_TRACE(f);
    ASSERT_TRUE(net_names(fixture(f)).empty()) << "the fixture names no NIC";
    const Topology t = load_fixture(f);
    ASSERT_EQ(t.nics.size(), pci_class_count(fixture(f), "0x020700"));
    ASSERT_FALSE(t.nics.empty());
    for (const auto& n : t.nics) {
      EXPECT_FALSE(n.name_reported) << n.name;
      EXPECT_TRUE(n.netdev.empty()) << n.name;  // a netdev is never invented
    }
  }
}

TEST(NicNames, AwsVendorFilesHaveOnlyPlaceholders) {
  const Topology p4d = load_fixture("nccl-topo/aws-p4d-24xl-topo.xml");
  ASSERT_EQ(p4d.nics.size(), 4u);  // "NIC 0".."NIC 3" comments, vendor 0x1d0f
  for (const auto& n : p4d.nics) EXPECT_FALSE(n.name_reported) << n.name;
  const Topology p5 = load_fixture("nccl-topo/aws-p5.48xl-topo.xml");
  ASSERT_EQ(p5.nics.size(), 32u);  // 4 NICs behind each of 8 switches (the file's header)
  for (const auto& n : p5.nics) EXPECT_FALSE(n.name_reported) << n.name;
}

// Files that name their NICs: every name reported, exactly the file's names, ports as the file writes them
// (NCCL writes the ibverbs port number, 1-based; 0 for a socket device).
TEST(NicNames, FilesWithNetNamesKeepThem) {
  for (const char* f : {"modern/nccl-topo/oci-b300-nccl-dump-B300MP.xml", "modern/nccl-topo/rccl-topo_8p_940-8xmi300x-8cx7.xml",
                        "modern/nccl-topo/rccl-topo_4p_940-4xmi300a-4cxi.xml", "nccl-topo/azure-ncv4-topo.xml"}) {
    SCOPED_TRACE(f);
    const auto names = net_names(fixture(f));
    ASSERT_FALSE(names.empty());
    const Topology t = load_fixture(f);
    std::multiset<std::string> got, want(names.begin(), names.end());
    for (const auto& n : t.nics) {
      EXPECT_TRUE(n.name_reported) << n.name;
      EXPECT_EQ(n.port, 1) << n.name;  // port="1" (IB) or port="0" (eth0: socket, port 1 for want of one)
      got.insert(n.name);
    }
    EXPECT_EQ(got, want);
  }
}

// A dual-port HCA written by NCCL: port="1" and port="2" are the ibverbs ports 1 and 2.
TEST(NicNames, NcclPortIsTheIbverbsPort) {
  const std::string xml = R"(<system version="1"><cpu numaid="0"><pci busid="0000:01:00.0" class="0x060400">
      <pci busid="0000:02:00.0" class="0x030200" vendor="0x10de" device="0x2330"/>
      <pci busid="0000:03:00.0" class="0x020700" vendor="0x15b3" device="0x1021"><nic>
        <net name="mlx5_0" dev="0" speed="400000" port="1"/><net name="mlx5_0" dev="1" speed="400000" port="2"/>
      </nic></pci></pci></cpu></system>)";
  const Topology t = detail::parse_nccl_topo(xml, "dual.xml");
  ASSERT_EQ(t.nics.size(), 2u);
  EXPECT_EQ(t.nics[0].port, 1);
  EXPECT_EQ(t.nics[1].port, 2);
}

TEST(NicNames, SlingshotCxiNameFromHwlocIsNotReported) {
  const Topology t = load_fixture("modern/hwloc-xml/mpibind-tioga-4xmi250x-slingshot.xml");
  int cassini = 0;
  for (const auto& n : t.nics) {
    if (n.vendor_id != 0x17db) continue;
    ++cassini;
    EXPECT_FALSE(n.name_reported) << n.name;              // cxiN is inferred from hwloc's hsiN
    EXPECT_EQ(n.netdev.rfind("hsi", 0), 0u) << n.netdev;  // the interface name hwloc reported
  }
  EXPECT_EQ(cassini, 4);
}

TEST(NicNames, HwlocOpenFabricsNamesAreReported) {
  const Topology t = load_fixture("hwloc-xml/mpibind-lassen-p9-4xv100.xml");
  ASSERT_FALSE(t.nics.empty());
  for (const auto& n : t.nics) EXPECT_TRUE(n.name_reported) << n.name;
}

// The flag survives JSON (probe --json, the cache, the tuning log), and the key is always written.
TEST(NicNames, JsonRoundTrip) {
  const Topology a = load_fixture("nccl-topo/azure-ndv5-topo.xml");
  const auto j = nlohmann::json::parse(to_json(a));
  for (const auto& n : j["nics"]) EXPECT_EQ(n.at("name_reported"), false);
  const Topology b = from_json(to_json(a), "ndv5.json");
  ASSERT_EQ(b.nics.size(), a.nics.size());
  for (const auto& n : b.nics) EXPECT_FALSE(n.name_reported);
  const Topology c = from_json(to_json(load_fixture("modern/nccl-topo/oci-b300-nccl-dump-B300MP.xml")), "b300.json");
  for (const auto& n : c.nics) EXPECT_TRUE(n.name_reported);
  EXPECT_THROW(from_json(R"({"source":"json","gpus":[],"nics":[{"name":"mlx5_0","name_reported":"yes"}]})", "x.json"),
               ProbeError);
}

// JSON written before the key existed: names count as reported (they came from a probe), except the placeholders
// older versions made up for a vendor NCCL file: source nccl-topo and exactly nic<i>/efa<i> at place i.
TEST(NicNames, JsonWithoutTheKeyFromOlderVersions) {
  auto legacy = [](const Topology& t) {
    auto j = nlohmann::json::parse(to_json(t));
    for (auto& n : j["nics"]) n.erase("name_reported");
    return from_json(j.dump(), "old.json");
  };
  for (const char* f : {"nccl-topo/aws-p5.48xl-topo.xml", "nccl-topo/aws-p4d-24xl-topo.xml", "nccl-topo/azure-ndv4-topo.xml"}) {
    const Topology t = legacy(load_fixture(f));
    ASSERT_FALSE(t.nics.empty()) << f;
    for (const auto& n : t.nics) EXPECT_FALSE(n.name_reported) << f << " " << n.name;
  }
  for (const auto& n : legacy(load_fixture("modern/nccl-topo/rccl-topo_8p_940-8xmi300x-8cx7.xml")).nics)
    EXPECT_TRUE(n.name_reported) << n.name;
  // Not a vendor file: a node whose probe saw a device named nic0 keeps it.
  const auto hw = nlohmann::json::parse(
      R"({"source":"hwloc-live","gpus":[],"nics":[{"name":"nic0"},{"name":"efa1"}]})");
  for (const auto& n : from_json(hw.dump(), "live.json").nics) EXPECT_TRUE(n.name_reported) << n.name;
  // A vendor file's named NIC at a place whose placeholder it does not spell stays reported.
  const auto named = nlohmann::json::parse(
      R"({"source":"nccl-topo","gpus":[],"nics":[{"name":"nic1"},{"name":"mlx5_1"},{"name":"nic2"}]})");
  const Topology n = from_json(named.dump(), "named.json");
  EXPECT_TRUE(n.nics[0].name_reported);
  EXPECT_TRUE(n.nics[1].name_reported);
  EXPECT_FALSE(n.nics[2].name_reported);
}

// Azure's files show Hyper-V's virtual PCI (each device alone in its own domain at 00:00.0): cloud azure. The
// other vendors' files and bare-metal dumps do not.
TEST(NicNames, AzureRecognisedFromHyperVirtualPci) {
  for (const char* f : {"nccl-topo/azure-ndv2-topo.xml", "nccl-topo/azure-ndv4-topo.xml", "nccl-topo/azure-ndv5-topo.xml",
                        "nccl-topo/azure-ncv4-topo.xml"}) {
    const Topology t = load_fixture(f);
    EXPECT_EQ(t.cloud, std::optional<std::string>("azure")) << f;
    EXPECT_TRUE(probe_test::contains_prefix(t.inferred, "cloud: azure (Hyper-V virtual PCI")) << f;
  }
  EXPECT_EQ(load_fixture("nccl-topo/aws-p4d-24xl-topo.xml").cloud, std::optional<std::string>("aws"));
  for (const char* f : {"nccl-topo/aws-p5.48xl-topo.xml", "modern/nccl-topo/oci-b300-nccl-dump-B300MP.xml",
                        "modern/nccl-topo/rccl-topo_8p_940-8xmi300x-8cx7.xml", "modern/nccl-topo/rccl-topo_4p_940-4xmi300a-4cxi.xml"})
    EXPECT_NE(load_fixture(f).cloud, std::optional<std::string>("azure")) << f;
}

// The NCCL topology file a topology came from: absolute, through JSON; none for hwloc sources.
TEST(NicNames, NcclTopoFileIsRecorded) {
  const std::string f = fixture("nccl-topo/azure-ndv5-topo.xml");
  const Topology t = load_fixture("nccl-topo/azure-ndv5-topo.xml");
  EXPECT_EQ(t.nccl_topo_file, std::filesystem::absolute(f).lexically_normal().string());
  EXPECT_EQ(from_json(to_json(t), "t.json").nccl_topo_file, t.nccl_topo_file);
  EXPECT_TRUE(load_fixture("hwloc-xml/mpibind-lassen-p9-4xv100.xml").nccl_topo_file.empty());
  const auto j = nlohmann::json::parse(to_json(load_fixture("hwloc-xml/mpibind-lassen-p9-4xv100.xml")));
  EXPECT_FALSE(j.contains("nccl_topo_file"));
}
