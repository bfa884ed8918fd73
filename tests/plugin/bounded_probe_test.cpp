#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "temp_dir.h"

#include "job/bounded_probe.h"

using namespace paratune;
using paratune::fixtures::TempDir;

namespace {

probe::CacheOptions no_cache(const TempDir& t) {
  probe::CacheOptions c;
  c.path = t.path + "/cache.json";
  c.owner_uid = ::geteuid();
  return c;
}

}  // namespace

TEST(BoundedProbe, ReturnsTheChildsTopology) {
  TempDir t;
  probe::ProbeOptions o;
  o.topology_file = "builtin:nvidia-dgx2";
  o.allocated_gpus = {0, 1};
  auto topo = job::probe_with_deadline(o, no_cache(t), 10000);
  ASSERT_EQ(topo.gpus.size(), 16u);  // DGX-2: 16 V100 (fixture README)
  EXPECT_TRUE(topo.gpus[0].in_allocation);
  EXPECT_FALSE(topo.gpus[2].in_allocation);
  EXPECT_FALSE(topo.fingerprint.empty());
}

TEST(BoundedProbe, AHangingTopologySourceIsStoppedAtTheDeadline) {
  TempDir t;
  const std::string fifo = t.path + "/topology.xml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);  // opening it for reading blocks: nobody ever writes
  probe::ProbeOptions o;
  o.topology_file = fifo;
  const auto start = std::chrono::steady_clock::now();
  try {
    job::probe_with_deadline(o, no_cache(t), 300);
    FAIL() << "a probe of a FIFO returned";
  } catch (const probe::ProbeError& e) {
    EXPECT_NE(std::string(e.what()).find("did not finish within 300 ms"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(BoundedProbe, TheChildsErrorComesBackNamingTheFile) {
  TempDir t;
  const std::string bad = t.path + "/broken.xml";
  std::ofstream(bad) << "<topology version=\"2.0\"><object";
  probe::ProbeOptions o;
  o.topology_file = bad;
  try {
    job::probe_with_deadline(o, no_cache(t), 10000);
    FAIL();
  } catch (const probe::ProbeError& e) {
    EXPECT_NE(std::string(e.what()).find("broken.xml"), std::string::npos) << e.what();
  }
}
