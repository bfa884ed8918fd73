// HWLOC_FSROOT-style probing of the sysfs tarball, the sysfs reader, RoCE parsing, ibverbs and NVML in CI.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "helpers.h"
#include "paratune/probe/detail.h"

using namespace paratune::probe;

namespace {

// Extract the tarball (README: extracts to 40intel64-2g2n4c+pci/) into a temp dir.
std::string extract(const probe_test::TempDir& d) {
  const std::string tarball = probe_test::fixture("hwloc-linux-sysfs/40intel64-2g2n4c+pcilocality.tar.bz2");
  const std::string cmd = "tar -xjf '" + tarball + "' -C '" + d.path + "' 2>/dev/null";
  if (std::system(cmd.c_str()) != 0) return "";
  return d.path + "/40intel64-2g2n4c+pci";
}

void write(const std::string& path, const std::string& content) {
  std::string dir = path.substr(0, path.rfind('/'));
  std::string cmd = "mkdir -p '" + dir + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ofstream(path) << content;
}

}  // namespace

TEST(Sysfs, TarballQib0Port1) {
  probe_test::TempDir d;
  const std::string root = extract(d);
  if (root.empty()) GTEST_SKIP() << "tar -xjf is not available";
  auto nics = detail::read_sysfs_nics(root + "/sys");
  ASSERT_EQ(nics.size(), 1u);
  EXPECT_EQ(nics[0].name, "qib0");
  EXPECT_EQ(nics[0].port, 1);
  EXPECT_EQ(nics[0].rate_gbps, 40.0);
  EXPECT_EQ(nics[0].state, std::optional<std::string>("active"));
  EXPECT_EQ(nics[0].phys_state, std::optional<std::string>("linkup"));
  EXPECT_EQ(nics[0].link_layer, std::optional<std::string>("infiniband"));
  EXPECT_EQ(nics[0].pci_bus_id, "0000:43:00.0");
  EXPECT_FALSE(nics[0].gid_index.has_value());
}

TEST(Sysfs, FsrootProbeThroughHwloc) {
  probe_test::TempDir d;
  const std::string root = extract(d);
  if (root.empty()) GTEST_SKIP() << "tar -xjf is not available";
  ProbeOptions o;
  o.fsroot = root;
  Topology t = probe(o);
  EXPECT_EQ(t.source, "hwloc-fsroot");
  EXPECT_TRUE(t.gpus.empty());  // no GPU in this machine
  ASSERT_EQ(t.nics.size(), 1u);
  const Nic& n = t.nics[0];
  EXPECT_EQ(n.name, "qib0");
  EXPECT_EQ(n.rate_gbps, 40.0);
  EXPECT_EQ(n.state, std::optional<std::string>("active"));
  EXPECT_EQ(n.link_layer, std::optional<std::string>("infiniband"));
  EXPECT_EQ(n.pci_bus_id, "0000:43:00.0");
  EXPECT_EQ(n.role, "unknown");  // no GPUs to be near
  EXPECT_FALSE(t.cloud.has_value());
  EXPECT_GE(t.numa_nodes, 1);
  EXPECT_EQ(t.fingerprint, compute_fingerprint(t));
  // Restored: the environment of the process is unchanged afterwards.
  EXPECT_EQ(std::getenv("HWLOC_FSROOT"), nullptr);
}

TEST(Sysfs, RoceUsesNetdevSpeedAndRoceV2Gid) {
  probe_test::TempDir d;
  const std::string s = d.path + "/sys";
  const std::string dev = s + "/class/infiniband/mlx5_0";
  write(dev + "/ports/1/rate", "100 Gb/sec (4X EDR)\n");  // kernels cap RoCE at 4X EDR
  write(dev + "/ports/1/state", "4: ACTIVE\n");
  write(dev + "/ports/1/phys_state", "5: LinkUp\n");
  write(dev + "/ports/1/link_layer", "Ethernet\n");
  write(dev + "/ports/1/gids/0", "fe80:0000:0000:0000:0a00:27ff:fe00:0001\n");
  write(dev + "/ports/1/gid_attrs/types/0", "IB/RoCE v1\n");
  write(dev + "/ports/1/gids/1", "fe80:0000:0000:0000:0a00:27ff:fe00:0001\n");
  write(dev + "/ports/1/gid_attrs/types/1", "RoCE v2\n");
  write(dev + "/ports/1/gids/3", "0000:0000:0000:0000:0000:ffff:0a00:0001\n");
  write(dev + "/ports/1/gid_attrs/types/3", "RoCE v2\n");
  write(dev + "/device/net/ens1f0np0/dev_port", "0\n");
  write(s + "/class/net/ens1f0np0/speed", "400000\n");
  auto nics = detail::read_sysfs_nics(s);
  ASSERT_EQ(nics.size(), 1u);
  EXPECT_EQ(nics[0].link_layer, std::optional<std::string>("ethernet"));
  EXPECT_EQ(nics[0].netdev, "ens1f0np0");
  EXPECT_EQ(nics[0].rate_gbps, 400.0);
  EXPECT_EQ(nics[0].gid_index, 3);  // IPv4-mapped RoCE v2 GID preferred
  // Without an IPv4-mapped one: a global IPv6 RoCE v2 GID, never the link-local one at a lower index (NCCL's
  // validGid refuses link-local GIDs: net_ib.cc).
  std::filesystem::remove(dev + "/ports/1/gids/3");
  write(dev + "/ports/1/gids/4", "fd00:0000:0000:0000:0a00:27ff:fe00:0001\n");
  write(dev + "/ports/1/gid_attrs/types/4", "RoCE v2\n");
  nics = detail::read_sysfs_nics(s);
  ASSERT_EQ(nics.size(), 1u);
  EXPECT_EQ(nics[0].gid_index, 4);
  std::filesystem::remove(dev + "/ports/1/gids/4");
  EXPECT_FALSE(detail::read_sysfs_nics(s)[0].gid_index) << "only link-local RoCE v2 GIDs: none stated";
}

TEST(Sysfs, GarbageFilesAreUnsetNotErrors) {
  probe_test::TempDir d;
  const std::string dev = d.path + "/sys/class/infiniband/weird0";
  write(dev + "/ports/1/rate", "\xff\xfe garbage");
  write(dev + "/ports/1/state", "");
  write(dev + "/ports/1/link_layer", "Token Ring\n");
  write(dev + "/ports/notanumber/rate", "100 Gb/sec (4X EDR)\n");
  auto nics = detail::read_sysfs_nics(d.path + "/sys");
  ASSERT_EQ(nics.size(), 1u);
  EXPECT_FALSE(nics[0].rate_gbps);
  EXPECT_FALSE(nics[0].state);
  EXPECT_FALSE(nics[0].link_layer);
  EXPECT_TRUE(detail::read_sysfs_nics(d.path + "/nothing-here").empty());
}

TEST(Verbs, RunsAndReportsCleanly) {
  auto r = detail::read_ibverbs_nics();
  // CI has no RDMA devices: available with zero NICs (or not available with a message); never a crash.
  if (r.available) {
    for (const auto& n : r.nics) EXPECT_FALSE(n.name.empty());
  } else {
    EXPECT_FALSE(r.error.empty());
  }
  EXPECT_EQ(detail::ibv_rate_gbps(2, 64), 200.0);   // 4X HDR
  EXPECT_EQ(detail::ibv_rate_gbps(2, 128), 400.0);  // 4X NDR
  EXPECT_EQ(detail::ibv_rate_gbps(2, 16), 56.0);    // 4X FDR
  EXPECT_EQ(detail::ibv_rate_gbps(16, 64), 100.0);  // 2X HDR
  EXPECT_EQ(detail::ibv_rate_gbps(3, 64), 0.0);
}

TEST(Nvml, AbsentLibraryIsReportedNotFatal) {
  auto r = detail::read_nvml("libparatune-no-such-nvml.so.1");
  EXPECT_FALSE(r.available);
  EXPECT_NE(r.error.find("dlopen"), std::string::npos);
}

TEST(Live, ProbeOfThisMachineWorks) {
  ProbeOptions o;
  Topology t = probe(o);
  EXPECT_EQ(t.source, "hwloc-live");
  EXPECT_GE(t.numa_nodes, 1);
  EXPECT_EQ(t.fingerprint.size(), 16u);
  EXPECT_EQ(from_json(to_json(t)).fingerprint, t.fingerprint);
}

TEST(Cloud, DetectedFromDmi) {
  EXPECT_EQ(detail::detect_cloud("Amazon EC2", "p4d.24xlarge", "Amazon EC2", ""), std::optional<std::string>("aws"));
  EXPECT_EQ(detail::detect_cloud("Microsoft Corporation", "Virtual Machine", "Microsoft Corporation",
                                 "7783-7084-3265-9085-8269-3286-77"),
            std::optional<std::string>("azure"));
  EXPECT_EQ(detail::detect_cloud("Google", "Google Compute Engine", "Google", ""), std::optional<std::string>("gcp"));
  EXPECT_FALSE(detail::detect_cloud("NVIDIA", "NVIDIA DGX-2H", "NVIDIA", ""));
  EXPECT_FALSE(detail::detect_cloud("HP", "ProLiant SL390s G7", "HP", ""));
}
