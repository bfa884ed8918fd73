// hwloc XML fixtures: expected values from tests/fixtures/topologies/README.md (not from running the code).
#include <algorithm>
#include <fstream>
#include <sstream>

#include "helpers.h"
#include "paratune/probe/detail.h"

using namespace paratune::probe;
using probe_test::contains_prefix;
using probe_test::load_fixture;

TEST(HwlocXml, Dgx2SixteenV100OneNvswitchDomain) {
  Topology t = load_fixture("hwloc-xml/hwloc-nvidia-dgx2.xml");
  EXPECT_EQ(t.source, "hwloc-xml");
  ASSERT_EQ(t.gpus.size(), 16u);
  for (const auto& g : t.gpus) {
    EXPECT_EQ(g.vendor_id, 0x10de);
    EXPECT_EQ(g.device_id, 0x1db8);
    EXPECT_EQ(g.model, "v100-sxm3-32gb");
    EXPECT_TRUE(g.in_allocation);
    EXPECT_TRUE(g.nearest_nics.empty());
    EXPECT_EQ(g.nic_path, "");
  }
  EXPECT_EQ(t.gpus[0].pci_bus_id, "0000:34:00.0");
  EXPECT_TRUE(t.nics.empty());
  // NVLinkBandwidth after MERGE_SWITCH_PORTS + TRANSITIVE_CLOSURE: every pair 150000 MB/s.
  ASSERT_EQ(t.nvlink_domains.size(), 1u);
  EXPECT_EQ(t.nvlink_domains[0].size(), 16u);
  ASSERT_TRUE(t.nvlink_gbps_per_gpu.has_value());
  EXPECT_DOUBLE_EQ(*t.nvlink_gbps_per_gpu, 150.0);
  EXPECT_TRUE(contains_prefix(t.inferred, "nvlink_domains: measured"));
  EXPECT_TRUE(contains_prefix(t.inferred, "nvswitch: 12 NVSwitch PCI devices"));
  // gpu0-gpu1: PIX on PCIe (same 2nd-level PLX switch); NVL for NCCL.
  EXPECT_EQ(t.gpu_pci_paths[0][1], "PIX");
  EXPECT_EQ(t.gpu_paths[0][1], "NVL");
  EXPECT_EQ(t.gpu_paths[3][3], "X");
  EXPECT_EQ(t.numa_nodes, 2);
  EXPECT_FALSE(t.cloud.has_value());
  EXPECT_EQ(t.fingerprint.size(), 16u);
}

TEST(HwlocXml, Power8FourP100NvlinkPairs) {
  Topology t = load_fixture("hwloc-xml/hwloc-power8-4gpu-nvlink.xml");
  ASSERT_EQ(t.gpus.size(), 4u);
  for (const auto& g : t.gpus) EXPECT_EQ(g.device_id, 0x15f9);
  EXPECT_EQ(t.gpus[0].model, "p100-sxm2-16gb");
  EXPECT_TRUE(t.nics.empty());
  EXPECT_EQ(t.gpu_pci_paths[0][1], "PHB");  // NODE: separate PCI domains, same socket
  // GPU<->GPU 40000 MB/s: two pairs.
  ASSERT_EQ(t.nvlink_domains.size(), 2u);
  EXPECT_EQ(t.nvlink_domains[0], (std::vector<int>{0, 1}));
  EXPECT_EQ(t.nvlink_domains[1], (std::vector<int>{2, 3}));
  ASSERT_TRUE(t.nvlink_gbps_per_gpu);
  EXPECT_DOUBLE_EQ(*t.nvlink_gbps_per_gpu, 40.0);
  EXPECT_EQ(t.gpu_paths[0][1], "NVL");
  EXPECT_EQ(t.gpu_paths[0][2], t.gpu_pci_paths[0][2]);
}

TEST(HwlocXml, Cx4NormalioThreeNvidiaOneMlx5) {
  Topology t = load_fixture("hwloc-xml/hwloc-2s-3gpu-cx4-normalio.xml");
  ASSERT_EQ(t.gpus.size(), 3u);  // the AMD Radeon VGA function and the Matrox VGA are not training GPUs
  for (const auto& g : t.gpus) {
    EXPECT_EQ(g.vendor_id, 0x10de);
    EXPECT_EQ(g.device_id, 0x1094);
  }
  ASSERT_EQ(t.nics.size(), 1u);
  EXPECT_EQ(t.nics[0].name, "mlx5_0");
  EXPECT_EQ(t.nics[0].netdev, "ib0");
  EXPECT_EQ(t.nics[0].numa, 1);
  EXPECT_EQ(t.nics[0].vendor_id, 0x15b3);
  EXPECT_EQ(t.nics[0].role, "compute");
  EXPECT_FALSE(t.nics[0].rate_gbps.has_value());  // hwloc does not know rates
  EXPECT_EQ(t.gpus[0].nic_path, "SYS");
  EXPECT_EQ(t.gpus[1].nic_path, "PHB");
  EXPECT_EQ(t.gpus[2].nic_path, "PIX");
  for (const auto& g : t.gpus) EXPECT_EQ(g.nearest_nics, (std::vector<std::string>{"mlx5_0"}));
  EXPECT_TRUE(contains_prefix(t.warnings, "duplicate PCI bus id 0000:04:00.0"));
}

TEST(HwlocXml, Cx3ThreeNvidiaOneMlx4) {
  Topology t = load_fixture("hwloc-xml/hwloc-2s-3gpu-cx3.xml");
  ASSERT_EQ(t.gpus.size(), 3u);  // the ATI ES1000 BMC VGA (1002:515e) is not a GPU
  for (const auto& g : t.gpus) EXPECT_EQ(g.device_id, 0x06d2);
  ASSERT_EQ(t.nics.size(), 1u);
  EXPECT_EQ(t.nics[0].name, "mlx4_0");
  EXPECT_EQ(t.nics[0].netdev, "ib0");
  EXPECT_FALSE(t.nics[0].state.has_value());  // no Port infos in this file
  EXPECT_EQ(t.gpus[0].nic_path, "PHB");
  EXPECT_EQ(t.gpus[1].nic_path, "SYS");
  EXPECT_EQ(t.gpus[2].nic_path, "SYS");
  // PCIe GPUs: no NVLink; every GPU alone.
  EXPECT_EQ(t.nvlink_domains.size(), 3u);
  EXPECT_FALSE(t.nvlink_gbps_per_gpu.has_value());
}

TEST(HwlocXml, LassenFourV100FourMlx5Node) {
  Topology t = load_fixture("hwloc-xml/mpibind-lassen-p9-4xv100.xml");
  ASSERT_EQ(t.gpus.size(), 4u);
  for (const auto& g : t.gpus) {
    EXPECT_EQ(g.device_id, 0x1db1);
    EXPECT_EQ(g.model, "v100-sxm2-16gb");
    EXPECT_EQ(g.nic_path, "PHB");  // NODE: one PHB per device on POWER9
  }
  EXPECT_EQ(t.hostname, "lassen28");
  EXPECT_EQ(t.numa_nodes, 2);
  std::vector<int> numas;
  for (const auto& g : t.gpus) numas.push_back(g.numa);
  EXPECT_EQ(numas, (std::vector<int>{0, 0, 8, 8}));
  ASSERT_EQ(t.nics.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(t.nics[i].name, "mlx5_" + std::to_string(i));
    EXPECT_EQ(t.nics[i].state, std::optional<std::string>("active"));
    EXPECT_EQ(t.nics[i].vendor_id, 0x15b3);
    EXPECT_EQ(t.nics[i].netdev.rfind("hsi", 0), 0u);
    EXPECT_EQ(t.nics[i].role, "compute");
  }
  // NVLink is not in the file: inferred from the model (SXM2 mesh per socket).
  EXPECT_TRUE(contains_prefix(t.inferred, "nvlink_domains: from GPU model"));
  EXPECT_EQ(t.nvlink_domains, (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
}

TEST(HwlocXml, CoronaEightAmdNoNvidia) {
  Topology t = load_fixture("hwloc-xml/mpibind-corona-8xmi50-rsmi.xml");
  ASSERT_EQ(t.gpus.size(), 8u);
  for (const auto& g : t.gpus) {
    EXPECT_EQ(g.vendor_id, 0x1002);
    EXPECT_EQ(g.device_id, 0x66a1);
    EXPECT_EQ(g.model, "mi50-32gb");
  }
  EXPECT_EQ(std::count_if(t.gpus.begin(), t.gpus.end(), [](const Gpu& g) { return g.vendor_id == 0x10de; }), 0);
  ASSERT_EQ(t.nics.size(), 1u);
  EXPECT_EQ(t.nics[0].name, "mlx5_0");
  EXPECT_EQ(t.nics[0].netdev, "hsi0");
}

TEST(HwlocXml, JurecaFourA100EachPixToItsHca) {
  const std::string f = probe_test::shared_fixture("hwloc-xml/psmgmt-jureca-dc-gpu-4xa100.xml");
  if (!probe_test::exists(f)) GTEST_SKIP() << "QPL fixture not present (kept only in ../shared): " << f;
  Topology t = probe_test::load(f);
  ASSERT_EQ(t.gpus.size(), 4u);
  for (const auto& g : t.gpus) {
    EXPECT_EQ(g.model, "a100-sxm4-40gb");
    EXPECT_EQ(g.nic_path, "PIX");
    EXPECT_EQ(g.nearest_nics.size(), 1u);
  }
  EXPECT_EQ(t.numa_nodes, 8);
  ASSERT_EQ(t.nics.size(), 4u);
  std::vector<std::string> nearest;
  for (const auto& g : t.gpus) nearest.push_back(g.nearest_nics.at(0));
  std::sort(nearest.begin(), nearest.end());
  EXPECT_EQ(nearest, (std::vector<std::string>{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}));
  for (size_t i = 0; i < 4; ++i)
    for (size_t j = 0; j < 4; ++j)
      if (i != j) {
        EXPECT_EQ(t.gpu_pci_paths[i][j], "SYS");
      }
  EXPECT_EQ(t.nvlink_domains, (std::vector<std::vector<int>>{{0, 1, 2, 3}}));
  EXPECT_DOUBLE_EQ(t.nvlink_gbps_per_gpu.value_or(0), 300.0);
}

TEST(HwlocXml, AllocationMarksGpus) {
  Topology t = load_fixture("hwloc-xml/mpibind-lassen-p9-4xv100.xml", {1, 3});
  EXPECT_FALSE(t.gpus[0].in_allocation);
  EXPECT_TRUE(t.gpus[1].in_allocation);
  EXPECT_FALSE(t.gpus[2].in_allocation);
  EXPECT_TRUE(t.gpus[3].in_allocation);
  Topology u = load_fixture("hwloc-xml/mpibind-lassen-p9-4xv100.xml", {7});
  EXPECT_TRUE(contains_prefix(u.warnings, "allocation names GPU 7"));
}

TEST(Builtin, DgxAndLassenCompiledIn) {
  auto names = builtin_topology_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "nvidia-dgx2"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "lassen"), names.end());
  Topology d = probe_test::load("builtin:nvidia-dgx2");
  EXPECT_EQ(d.gpus.size(), 16u);
  EXPECT_EQ(d.fingerprint, load_fixture("hwloc-xml/hwloc-nvidia-dgx2.xml").fingerprint);
  Topology l = probe_test::load("builtin:lassen");
  EXPECT_EQ(l.gpus.size(), 4u);
  EXPECT_EQ(l.nics.size(), 4u);
  EXPECT_THROW(probe_test::load("builtin:nope"), ProbeError);
}

TEST(HwlocXml, CloudFromDmiInfosAddsAWarning) {
  // The cx3 dump with its DMI vendor/product replaced by what an AWS VM reports.
  std::ifstream in(probe_test::fixture("hwloc-xml/hwloc-2s-3gpu-cx3.xml"));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string xml = ss.str();
  auto put = [&](const std::string& from, const std::string& to) {
    auto p = xml.find(from);
    ASSERT_NE(p, std::string::npos) << from;
    xml.replace(p, from.size(), to);
  };
  put("<info name=\"DMIProductName\" value=\"ProLiant SL390s G7\"/>",
      "<info name=\"DMIProductName\" value=\"p4d.24xlarge\"/>");
  put("<info name=\"DMISysVendor\" value=\"HP\"/>", "<info name=\"DMISysVendor\" value=\"Amazon EC2\"/>");
  Topology t = detail::load_hwloc_xml_text(xml, "aws.xml");
  EXPECT_EQ(t.cloud, std::optional<std::string>("aws"));
  EXPECT_TRUE(contains_prefix(t.warnings, "cloud VM (aws, p4d.24xlarge)"));
}

TEST(Allocation, SlurmIndexesAreDeviceMinorsWhenKnown) {
  Topology t = load_fixture("hwloc-xml/mpibind-lassen-p9-4xv100.xml");
  // PCI order 0..3, but /dev/nvidia minors in a different order (as on some boards).
  const int minors[] = {2, 3, 0, 1};
  for (int i = 0; i < 4; ++i) t.gpus[i].device_minor = minors[i];
  detail::apply_allocation(t, {0, 1});
  EXPECT_FALSE(t.gpus[0].in_allocation);
  EXPECT_FALSE(t.gpus[1].in_allocation);
  EXPECT_TRUE(t.gpus[2].in_allocation);
  EXPECT_TRUE(t.gpus[3].in_allocation);
  EXPECT_EQ(from_json(to_json(t)).gpus[0].device_minor, 2);
}
