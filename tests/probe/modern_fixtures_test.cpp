// Today's nodes (tests/fixtures/topologies/modern/, facts from its README.md) and the cloud NCCL files whose GPU
// model the file does not say (Azure NDv5, AWS p5). Expected values are the README's, not this code's output.
#include <algorithm>
#include <fstream>
#include <set>

#include "helpers.h"
#include "paratune/probe/detail.h"

using namespace paratune::probe;
using probe_test::contains_prefix;
using probe_test::load_fixture;

namespace {

const Gpu& gpu_at(const Topology& t, const std::string& bus) {  // bus: the "bb" of 0000:bb:00.0
  for (const auto& g : t.gpus)
    if (g.pci_bus_id.substr(5, 2) == bus) return g;
  ADD_FAILURE() << "no GPU at bus " << bus;
  static Gpu none;
  return none;
}

std::set<std::string> nearest(const Gpu& g) { return {g.nearest_nics.begin(), g.nearest_nics.end()}; }

std::vector<std::vector<int>> one_domain(int n) {
  std::vector<int> d(n);
  for (int i = 0; i < n; ++i) d[i] = i;
  return {d};
}

}  // namespace

// AWS p6e-gb200.36xlarge: 4 GB200 (10de:2941), 16 EFA, each GPU PIX with 2 EFA; NVLink spans the NVL72 rack.
TEST(ModernFixtures, Gb200TrayFourGpusSixteenEfaOneRackDomain) {
  Topology t = load_fixture("modern/hwloc-xml/awsofinccl-aws-p6e-gb200.36xlarge-4xgb200-16efa.xml");
  ASSERT_EQ(t.gpus.size(), 4u);
  for (const auto& g : t.gpus) {
    EXPECT_EQ(g.vendor_id, 0x10de);
    EXPECT_EQ(g.device_id, 0x2941);
    EXPECT_EQ(g.model, "gb200-186gb");
  }
  EXPECT_EQ(t.nics.size(), 16u);
  for (const auto& n : t.nics) EXPECT_EQ(n.vendor_id, 0x1d0f) << n.name;
  EXPECT_EQ(nearest(gpu_at(t, "29")), (std::set<std::string>{"rdmap39s0", "rdmap40s0"}));
  EXPECT_EQ(nearest(gpu_at(t, "3f")), (std::set<std::string>{"rdmap61s0", "rdmap62s0"}));
  EXPECT_EQ(nearest(gpu_at(t, "9c")), (std::set<std::string>{"rdmap154s0", "rdmap155s0"}));
  EXPECT_EQ(nearest(gpu_at(t, "b2")), (std::set<std::string>{"rdmap176s0", "rdmap177s0"}));
  for (const auto& g : t.gpus) EXPECT_EQ(g.nic_path, "PIX") << g.pci_bus_id;
  // Not four separate domains: one, which reaches beyond the tray.
  EXPECT_EQ(t.nvlink_domains, one_domain(4));
  EXPECT_EQ(t.nvlink_domain_span, 72);
  EXPECT_FALSE(t.nvlink_unknown);
  EXPECT_EQ(t.numa_nodes, 2);
}

// AWS p6-b200.48xlarge (NIXL): an XML-comment licence header; 8 B200, 8 EFA + 2 ConnectX-7, pairs of GPUs PIX
// with 2 EFA, and 75/76 also with both CX-7s.
TEST(ModernFixtures, B200WithLicenceCommentLoadsAndPairs) {
  std::ifstream in(probe_test::fixture("modern/hwloc-xml/nixl-aws-p6-b200.48xlarge-8xb200-8efa-2cx7.xml"));
  std::string head(200, '\0');
  in.read(head.data(), 200);
  ASSERT_NE(head.find("<!-- SPDX"), std::string::npos) << "the fixture has lost the comment this test is about";
  Topology t = load_fixture("modern/hwloc-xml/nixl-aws-p6-b200.48xlarge-8xb200-8efa-2cx7.xml");
  ASSERT_EQ(t.gpus.size(), 8u);
  for (const auto& g : t.gpus) EXPECT_EQ(g.model, "b200-sxm-180gb");
  ASSERT_EQ(t.nics.size(), 10u);
  EXPECT_EQ(std::count_if(t.nics.begin(), t.nics.end(), [](const Nic& n) { return n.vendor_id == 0x1d0f; }), 8);
  EXPECT_EQ(std::count_if(t.nics.begin(), t.nics.end(), [](const Nic& n) { return n.vendor_id == 0x15b3; }), 2);
  EXPECT_EQ(nearest(gpu_at(t, "51")), (std::set<std::string>{"rdmap79s0", "rdmap80s0"}));
  EXPECT_EQ(nearest(gpu_at(t, "52")), (std::set<std::string>{"rdmap79s0", "rdmap80s0"}));
  EXPECT_EQ(nearest(gpu_at(t, "62")), (std::set<std::string>{"rdmap96s0", "rdmap97s0"}));
  EXPECT_EQ(nearest(gpu_at(t, "87")), (std::set<std::string>{"rdmap132s0", "rdmap133s0"}));
  const auto n75 = nearest(gpu_at(t, "75"));
  EXPECT_EQ(n75.size(), 4u);
  EXPECT_TRUE(n75.count("rdmap113s0") && n75.count("rdmap114s0"));
  for (const auto& n : t.nics) {
    if (n.vendor_id == 0x15b3) {
      EXPECT_TRUE(n75.count(n.name)) << n.name << " (a CX-7) is nearest to GPU 75";
    }
  }
  for (const auto& g : t.gpus) EXPECT_EQ(g.nic_path, "PIX") << g.pci_bus_id;
  EXPECT_EQ(t.nvlink_domains, one_domain(8));  // B200 HGX: NVSwitch, from the model
}

// LLNL Tioga (HPE Cray EX235A): 8 MI250X GCDs, 4 Slingshot Cassini NICs seen as network devices hsi0..3 (cxi for
// libfabric), one per NUMA node with 2 GCDs each.
TEST(ModernFixtures, Mi250xSlingshotNicsByNumaNode) {
  Topology t = load_fixture("modern/hwloc-xml/mpibind-tioga-4xmi250x-slingshot.xml");
  ASSERT_EQ(t.gpus.size(), 8u);
  for (const auto& g : t.gpus) {
    EXPECT_EQ(g.model, "mi250x-64gb");  // one GCD per OS device (AMD: 64 GB HBM2e per GCD, 128 GB per package)
    EXPECT_EQ(g.memory_gib, std::optional<double>(64));
  }
  ASSERT_EQ(t.nics.size(), 4u);  // not the Intel ens2
  for (const auto& n : t.nics) {
    EXPECT_EQ(n.vendor_id, 0x17db);
    EXPECT_EQ(n.rate_gbps, std::optional<double>(200));
    EXPECT_EQ(n.name, "cxi" + n.netdev.substr(3)) << n.netdev;
    EXPECT_EQ(n.role, "compute");
  }
  // hsi2=d5 (N0), hsi1=cd (N1), hsi3=dd (N2), hsi0=c5 (N3); GCDs d1,d6 (N0), c9,ce (N1), d9,de (N2), c1,c6 (N3).
  const std::pair<const char*, const char*> pairs[] = {{"d1", "cxi2"}, {"d6", "cxi2"}, {"c9", "cxi1"}, {"ce", "cxi1"},
                                                       {"d9", "cxi3"}, {"de", "cxi3"}, {"c1", "cxi0"}, {"c6", "cxi0"}};
  for (const auto& [bus, nic] : pairs) {
    EXPECT_EQ(nearest(gpu_at(t, bus)), std::set<std::string>{nic}) << bus;
    EXPECT_EQ(gpu_at(t, bus).nic_path, "PHB") << bus << " (NODE folds into PHB)";
  }
  EXPECT_EQ(t.numa_nodes, 4);
  EXPECT_EQ(t.nvlink_domains, one_domain(8));  // xGMI between the GCDs, from the model
  EXPECT_TRUE(contains_prefix(t.inferred, "nic rate: Slingshot Cassini"));
}

// OCI HGX B300 (NCCL dump): 8 B300 (0x3182), 8 ConnectX-8 800G rdma_vf_rail0..7, GPU n PXB to rail n, NVSwitch.
TEST(ModernFixtures, B300CxEightRails) {
  Topology t = load_fixture("modern/nccl-topo/oci-b300-nccl-dump-B300MP.xml");
  ASSERT_EQ(t.gpus.size(), 8u);
  ASSERT_EQ(t.nics.size(), 8u);
  for (const auto& g : t.gpus) EXPECT_EQ(g.model, "b300-sxm-288gb");
  for (const auto& n : t.nics) EXPECT_EQ(n.rate_gbps, std::optional<double>(800)) << n.name;
  const char* order[] = {"14", "32", "49", "60", "8e", "ad", "c5", "dd"};
  for (int i = 0; i < 8; ++i) {
    const auto& g = gpu_at(t, order[i]);
    EXPECT_EQ(nearest(g), std::set<std::string>{"rdma_vf_rail" + std::to_string(i)}) << order[i];
    EXPECT_EQ(g.nic_path, "PXB") << order[i];
    EXPECT_EQ(g.numa, i < 4 ? 0 : 1);
  }
  EXPECT_EQ(t.nvlink_domains, one_domain(8));
}

// OCI GB300: a fused dump of two hosts is not one node.
TEST(ModernFixtures, FusedTwoHostGb300IsRefused) {
  try {
    load_fixture("modern/nccl-topo/oci-gb300-2node-fused-nccl-dump-GB300MP.xml");
    FAIL() << "a two-host dump was taken for one node";
  } catch (const ProbeError& e) {
    EXPECT_NE(std::string(e.what()).find("describes 2 hosts"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("one node"), std::string::npos) << e.what();
  }
}

// RCCL version 2: 8 MI300X (1002:74a1), 8 CX-7 400G mlx5_0..7 one per GPU under the same top switch, xGMI mesh.
TEST(ModernFixtures, RcclMi300xVersionTwo) {
  Topology t = load_fixture("modern/nccl-topo/rccl-topo_8p_940-8xmi300x-8cx7.xml");
  ASSERT_EQ(t.gpus.size(), 8u);
  ASSERT_EQ(t.nics.size(), 8u);
  for (const auto& g : t.gpus) {
    EXPECT_EQ(g.vendor_id, 0x1002);
    EXPECT_EQ(g.model, "mi300x-192gb");
  }
  for (const auto& n : t.nics) {
    EXPECT_EQ(n.rate_gbps, std::optional<double>(400));
    EXPECT_EQ(n.link_layer, std::optional<std::string>("infiniband"));
  }
  for (int i = 0; i < 8; ++i) EXPECT_EQ(nearest(t.gpus[i]), std::set<std::string>{"mlx5_" + std::to_string(i)}) << i;
  EXPECT_EQ(t.nvlink_domains, one_domain(8));
  EXPECT_TRUE(contains_prefix(t.inferred, "nvlink_domains: from the file's <xgmi>"));
  const std::vector<int> numa = {0, 0, 0, 0, 1, 1, 1, 1};  // 0c,15,1e,69 (NUMA 0), 9f,af,bf,df (NUMA 1)
  for (int i = 0; i < 8; ++i) EXPECT_EQ(t.gpus[i].numa, numa[i]) << i;
}

// RCCL version 2: 4 MI300A APUs (1002:74a0), numaid 2,3,0,1, each with one Slingshot cxi NIC on its NUMA node.
TEST(ModernFixtures, RcclMi300aSlingshot) {
  Topology t = load_fixture("modern/nccl-topo/rccl-topo_4p_940-4xmi300a-4cxi.xml");
  ASSERT_EQ(t.gpus.size(), 4u);
  ASSERT_EQ(t.nics.size(), 4u);
  for (const auto& g : t.gpus) EXPECT_EQ(g.model, "mi300a-128gb");
  for (const auto& n : t.nics) EXPECT_EQ(n.rate_gbps, std::optional<double>(200)) << n.name;
  for (const auto& g : t.gpus) {
    ASSERT_EQ(g.nearest_nics.size(), 1u);
    const auto& nic = *std::find_if(t.nics.begin(), t.nics.end(), [&](const Nic& n) { return n.name == g.nearest_nics[0]; });
    EXPECT_EQ(nic.numa, g.numa) << g.pci_bus_id;
    EXPECT_EQ(nic.name.rfind("cxi", 0), 0u);
  }
  EXPECT_EQ(t.gpus[0].numa, 2);
  EXPECT_EQ(t.nvlink_domains, one_domain(4));
}

// Azure ND H100 v5 and AWS p5: the files name no GPU model: NVIDIA (an NCCL file), the NVLink domain "unknown".
TEST(ModernFixtures, CloudFilesWithoutGpuModelSayUnknown) {
  for (const char* f : {"nccl-topo/azure-ndv5-topo.xml", "nccl-topo/aws-p5.48xl-topo.xml"}) {
    Topology t = load_fixture(f);
    ASSERT_EQ(t.gpus.size(), 8u) << f;
    for (const auto& g : t.gpus) EXPECT_EQ(g.vendor_id, 0x10de) << f;
    EXPECT_TRUE(t.nvlink_unknown) << f;
    EXPECT_TRUE(contains_prefix(t.inferred, "nvlink_domains: unknown")) << f;
    EXPECT_FALSE(contains_prefix(t.inferred, "nvlink_domains: none")) << f;
    // Positive control: the JSON form keeps "unknown".
    EXPECT_TRUE(from_json(to_json(t)).nvlink_unknown) << f;
  }
  Topology ndv5 = load_fixture("nccl-topo/azure-ndv5-topo.xml");
  EXPECT_EQ(ndv5.nics.size(), 8u);
  EXPECT_EQ(ndv5.numa_nodes, 2);
  for (const auto& g : ndv5.gpus) {
    EXPECT_EQ(g.nic_path, "PIX");
    EXPECT_EQ(g.nearest_nics.size(), 1u);
  }
  EXPECT_EQ(load_fixture("nccl-topo/aws-p5.48xl-topo.xml").nics.size(), 32u);
}

// A dual-port adapter: two <net> under one <nic> are two NICs, both nearest to the GPU behind the same switch.
TEST(ModernFixtures, DualPortNicIsTwoNics) {
  const std::string xml = R"(<system version="1">
  <cpu numaid="0" arch="x86_64">
    <pci busid="0000:10:00.0" class="0x060400">
      <pci busid="0000:11:00.0" class="0x030200" vendor="0x10de" device="0x2330"/>
      <pci busid="0000:12:00.0" class="0x020700" vendor="0x15b3" device="0x1021">
        <nic>
          <net name="mlx5_0" dev="0" speed="200000" port="1"/>
          <net name="mlx5_1" dev="1" speed="200000" port="2"/>
        </nic>
      </pci>
    </pci>
  </cpu>
</system>
)";
  Topology t = detail::parse_nccl_topo(xml, "dual-port.xml");
  ASSERT_EQ(t.nics.size(), 2u);
  EXPECT_EQ(t.nics[0].pci_bus_id, t.nics[1].pci_bus_id);
  EXPECT_EQ(nearest(t.gpus[0]), (std::set<std::string>{"mlx5_0", "mlx5_1"}));
}
