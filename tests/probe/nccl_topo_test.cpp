// NCCL topology files (README: nccl-topo/ table). Loaded through probe() (content detection) and the parser.
#include <fstream>

#include "helpers.h"
#include "paratune/probe/detail.h"

using namespace paratune::probe;
using probe_test::contains_prefix;
using probe_test::load_fixture;

TEST(NcclTopo, AzureNdv4TwoGpusTwoNicsPerSwitch) {
  Topology t = load_fixture("nccl-topo/azure-ndv4-topo.xml");
  EXPECT_EQ(t.source, "nccl-topo");
  ASSERT_EQ(t.gpus.size(), 8u);
  ASSERT_EQ(t.nics.size(), 8u);
  EXPECT_EQ(t.numa_nodes, 4);
  for (const auto& n : t.nics) {
    EXPECT_EQ(n.link_layer, std::optional<std::string>("infiniband"));
    EXPECT_EQ(n.role, "compute");
  }
  for (const auto& g : t.gpus) {
    EXPECT_EQ(g.nic_path, "PIX");
    EXPECT_EQ(g.nearest_nics.size(), 2u) << g.pci_bus_id;
  }
  // GPUs sharing a switch are PIX, across sockets SYS.
  EXPECT_EQ(t.gpus[0].pci_bus_id, "0001:00:00.0");
  EXPECT_EQ(t.gpus[1].pci_bus_id, "0002:00:00.0");
  EXPECT_EQ(t.gpu_pci_paths[0][1], "PIX");
  EXPECT_EQ(t.gpu_pci_paths[0][2], "SYS");
}

TEST(NcclTopo, AwsP4dTwoGpusOneEfaPerSwitch) {
  Topology t = load_fixture("nccl-topo/aws-p4d-24xl-topo.xml");
  ASSERT_EQ(t.gpus.size(), 8u);
  ASSERT_EQ(t.nics.size(), 4u);
  EXPECT_EQ(t.cloud, std::optional<std::string>("aws"));
  for (const auto& g : t.gpus) {
    EXPECT_EQ(g.model, "a100-sxm4-40gb");
    EXPECT_EQ(g.nic_path, "PIX");
    EXPECT_EQ(g.nearest_nics.size(), 1u);
  }
  for (const auto& n : t.nics) {
    EXPECT_EQ(n.vendor_id, 0x1d0f);
    EXPECT_FALSE(n.link_layer.has_value());
  }
  EXPECT_EQ(t.gpus[0].nearest_nics, t.gpus[1].nearest_nics);
  EXPECT_NE(t.gpus[0].nearest_nics, t.gpus[2].nearest_nics);
  EXPECT_EQ(t.nvlink_domains, (std::vector<std::vector<int>>{{0, 1, 2, 3, 4, 5, 6, 7}}));
  EXPECT_TRUE(contains_prefix(t.inferred, "nvlink_domains: from GPU model"));
}

TEST(NcclTopo, AwsP5FourEfaPerGpu) {
  Topology t = load_fixture("nccl-topo/aws-p5.48xl-topo.xml");
  ASSERT_EQ(t.nics.size(), 32u);
  ASSERT_EQ(t.gpus.size(), 8u);  // one per switch: the file says GPUs are not reported
  EXPECT_TRUE(contains_prefix(t.inferred, "gpus: one per PCIe switch"));
  for (const auto& g : t.gpus) {
    EXPECT_EQ(g.nearest_nics.size(), 4u);
    EXPECT_EQ(g.nic_path, "PIX");
    EXPECT_EQ(g.model, "unknown-10de:0000");  // NVIDIA (an NCCL file), no device id: the model is not known
  }
  EXPECT_EQ(t.gpus[0].numa, 0);
  EXPECT_EQ(t.gpus[7].numa, 1);
}

TEST(NcclTopo, AzureNcv4RichDumpForm) {
  Topology t = load_fixture("nccl-topo/azure-ncv4-topo.xml");
  ASSERT_EQ(t.gpus.size(), 4u);
  for (const auto& g : t.gpus) {
    EXPECT_EQ(g.device_id, 0x20b5);
    EXPECT_EQ(g.model, "a100-pcie-80gb");
  }
  ASSERT_EQ(t.nics.size(), 1u);
  EXPECT_EQ(t.nics[0].name, "eth0");
  EXPECT_DOUBLE_EQ(t.nics[0].rate_gbps.value_or(0), 100.0);
  EXPECT_EQ(t.gpus[0].nic_path, "PHB");
  EXPECT_EQ(t.gpus[1].nic_path, "SYS");
  // The self-targeted <nvlink> elements do not make an NVLink domain.
  EXPECT_EQ(t.nvlink_domains.size(), 4u);
  EXPECT_FALSE(t.nvlink_gbps_per_gpu.has_value());
}

TEST(NcclTopo, AzureNdv2FlatPerCpu) {
  Topology t = load_fixture("nccl-topo/azure-ndv2-topo.xml");
  ASSERT_EQ(t.gpus.size(), 8u);
  ASSERT_EQ(t.nics.size(), 1u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(t.gpus[i].nic_path, "PHB");
  for (int i = 4; i < 8; ++i) EXPECT_EQ(t.gpus[i].nic_path, "SYS");
}

TEST(NcclTopo, AwsG5BareBusIds) {
  Topology t = load_fixture("nccl-topo/aws-g5.48xl-topo.xml");
  EXPECT_EQ(t.gpus.size(), 0u);
  EXPECT_EQ(t.numa_nodes, 2);
  EXPECT_TRUE(contains_prefix(t.warnings, "9 PCI devices without a class"));
}

TEST(NcclTopo, NvswitchLinksMakeOneDomain) {
  const char* xml = R"(<system version="1"><cpu numaid="0">
    <pci busid="0000:07:00.0" class="0x030200" vendor="0x10de" device="0x2330">
      <gpu dev="0" sm="90" rank="0" gdr="1"><nvlink target="fffffff:ff:00.0" count="18" tclass="0x068000"/></gpu></pci>
    <pci busid="0000:0f:00.0" class="0x030200" vendor="0x10de" device="0x2330">
      <gpu dev="1" sm="90" rank="1" gdr="1"><nvlink target="fffffff:ff:00.0" count="18" tclass="0x068000"/></gpu></pci>
  </cpu></system>)";
  Topology t = detail::parse_nccl_topo(xml, "inline");
  ASSERT_EQ(t.gpus.size(), 2u);
  EXPECT_EQ(t.nvlink_domains, (std::vector<std::vector<int>>{{0, 1}}));
  EXPECT_DOUBLE_EQ(t.nvlink_gbps_per_gpu.value_or(0), 450.0);
  EXPECT_EQ(t.gpu_paths[0][1], "NVL");
}

TEST(NcclTopo, OverlayRepairsFlatVmLocality) {
  // What a VM probe of an ND A100 v4 looks like: every GPU/NIC pair PHB (flat virtual PCI tree).
  Topology vm = load_fixture("nccl-topo/azure-ndv4-topo.xml");
  for (auto& row : vm.gpu_nic_paths)
    for (auto& c : row) c = "PHB";
  for (auto& row : vm.gpu_pci_paths)
    for (auto& c : row)
      if (c != "X") c = "PHB";
  for (auto& g : vm.gpus) g.nic_path = "PHB";
  probe_test::TempDir d;
  const std::string path = d.path + "/vm.json";
  std::ofstream(path) << to_json(vm);
  ProbeOptions o;
  o.topology_file = path;
  Topology flat = probe(o);
  o.nccl_topo_file = probe_test::fixture("nccl-topo/azure-ndv4-topo.xml");
  Topology fixed = probe(o);
  EXPECT_TRUE(contains_prefix(fixed.inferred, "paths: from NCCL topology file"));
  for (const auto& g : fixed.gpus) {
    EXPECT_EQ(g.nic_path, "PIX");
    EXPECT_EQ(g.nearest_nics.size(), 2u);
  }
  EXPECT_EQ(fixed.gpu_pci_paths[0][1], "PIX");
  EXPECT_NE(fixed.fingerprint, flat.fingerprint);
  // A file for another machine changes nothing and says so.
  o.nccl_topo_file = probe_test::fixture("nccl-topo/aws-p4d-24xl-topo.xml");
  Topology other = probe(o);
  EXPECT_TRUE(contains_prefix(other.warnings, "NCCL topology file"));
  EXPECT_EQ(other.fingerprint, flat.fingerprint);
  o.nccl_topo_file = "/nonexistent/topo.xml";
  EXPECT_THROW(probe(o), ProbeError);
}
