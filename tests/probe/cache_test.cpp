// probe_cached(): same boot + same source + same devices -> reuse; root-owned, not group/world-writable only.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>

#include "helpers.h"

using namespace paratune::probe;

namespace {

struct Fixture {
  probe_test::TempDir d;
  CacheOptions cache;
  ProbeOptions opts;
  Fixture() {
    cache.path = d.path + "/topology.json";
    cache.boot_id_file = d.path + "/boot_id";
    cache.owner_uid = ::geteuid();
    std::ofstream(cache.boot_id_file) << "3f1c2a9e-0000-4000-8000-000000000001\n";
    opts.topology_file = probe_test::fixture("hwloc-xml/mpibind-lassen-p9-4xv100.xml");
  }
  int files() const {
    int n = 0;
    if (DIR* dir = ::opendir(d.path.c_str())) {
      while (dirent* e = ::readdir(dir)) n += e->d_name[0] != '.';
      ::closedir(dir);
    }
    return n;
  }
};

}  // namespace

TEST(Cache, MissThenHitWithTheAllocationOfTheCaller) {
  Fixture f;
  CacheResult r;
  Topology a = probe_cached(f.opts, f.cache, &r);
  EXPECT_FALSE(r.hit);
  EXPECT_EQ(r.reason, "missing");
  struct stat st {};
  ASSERT_EQ(::stat(f.cache.path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  EXPECT_EQ(f.files(), 2);  // boot_id + cache: no temp file left behind
  f.opts.allocated_gpus = {2, 3};
  Topology b = probe_cached(f.opts, f.cache, &r);
  EXPECT_TRUE(r.hit) << r.reason;
  EXPECT_EQ(b.fingerprint, a.fingerprint);
  EXPECT_FALSE(b.gpus[0].in_allocation);
  EXPECT_TRUE(b.gpus[3].in_allocation);
  EXPECT_EQ(to_json(b), to_json(probe(f.opts)));
}

TEST(Cache, OtherBootIsAMiss) {
  Fixture f;
  CacheResult r;
  probe_cached(f.opts, f.cache, &r);
  std::ofstream(f.cache.boot_id_file) << "another-boot\n";
  probe_cached(f.opts, f.cache, &r);
  EXPECT_FALSE(r.hit);
  EXPECT_EQ(r.reason, "other boot");
  probe_cached(f.opts, f.cache, &r);  // rewritten for this boot
  EXPECT_TRUE(r.hit);
}

TEST(Cache, OtherSourceIsAMiss) {
  Fixture f;
  CacheResult r;
  probe_cached(f.opts, f.cache, &r);
  f.opts.topology_file = "builtin:nvidia-dgx2";
  Topology t = probe_cached(f.opts, f.cache, &r);
  EXPECT_FALSE(r.hit);
  EXPECT_EQ(r.reason, "other source");
  EXPECT_EQ(t.gpus.size(), 16u);
}

TEST(Cache, WritableOrForeignCacheIsRefused) {
  Fixture f;
  CacheResult r;
  probe_cached(f.opts, f.cache, &r);
  ASSERT_EQ(::chmod(f.cache.path.c_str(), 0666), 0);
  CacheOptions no_write = f.cache;
  no_write.write = false;
  probe_cached(f.opts, no_write, &r);
  EXPECT_FALSE(r.hit);
  EXPECT_EQ(r.reason, "group/world-writable");
  ASSERT_EQ(::chmod(f.cache.path.c_str(), 0620), 0);
  probe_cached(f.opts, no_write, &r);
  EXPECT_EQ(r.reason, "group/world-writable");
  ASSERT_EQ(::chmod(f.cache.path.c_str(), 0644), 0);
  CacheOptions other = f.cache;
  other.owner_uid = f.cache.owner_uid + 4242;
  Topology t = probe_cached(f.opts, other, &r);
  EXPECT_FALSE(r.hit);
  EXPECT_EQ(r.reason, "not owned by uid " + std::to_string(other.owner_uid));
  EXPECT_EQ(t.gpus.size(), 4u);  // still probed
  // A symlink is not a regular file.
  const std::string link = f.d.path + "/link.json";
  ASSERT_EQ(::symlink(f.cache.path.c_str(), link.c_str()), 0);
  CacheOptions via_link = f.cache;
  via_link.path = link;
  via_link.write = false;
  probe_cached(f.opts, via_link, &r);
  EXPECT_EQ(r.reason, "not a regular file");
}

TEST(Cache, CorruptCacheIsAMissAndIsRewritten) {
  Fixture f;
  CacheResult r;
  std::ofstream(f.cache.path) << "{\"boot_id\": ";
  ::chmod(f.cache.path.c_str(), 0644);
  Topology t = probe_cached(f.opts, f.cache, &r);
  EXPECT_FALSE(r.hit);
  EXPECT_EQ(r.reason.rfind("corrupt", 0), 0u) << r.reason;
  EXPECT_EQ(t.gpus.size(), 4u);
  probe_cached(f.opts, f.cache, &r);
  EXPECT_TRUE(r.hit);
}

// An entry written by a version whose NICs had no name_reported (format 1) is probed again, not read with that
// fact missing; the rewritten entry is the current format and is then trusted.
TEST(Cache, OtherCacheFormatIsAMissAndIsRewritten) {
  Fixture f;
  CacheResult r;
  probe_cached(f.opts, f.cache, &r);
  std::ifstream in(f.cache.path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto at = text.find("\"paratune_probe_cache\":2");
  ASSERT_NE(at, std::string::npos) << text.substr(0, 80);
  text.replace(at, 24, "\"paratune_probe_cache\":1");
  std::ofstream(f.cache.path, std::ios::trunc) << text;
  ::chmod(f.cache.path.c_str(), 0644);
  probe_cached(f.opts, f.cache, &r);
  EXPECT_FALSE(r.hit);
  EXPECT_EQ(r.reason, "other cache format");
  probe_cached(f.opts, f.cache, &r);
  EXPECT_TRUE(r.hit) << r.reason;
}

TEST(Cache, LiveProbeIsCachedPerBoot) {
  Fixture f;
  f.opts.topology_file.clear();
  f.opts.use_nvml = false;
  CacheResult r;
  Topology a = probe_cached(f.opts, f.cache, &r);
  EXPECT_FALSE(r.hit);
  Topology b = probe_cached(f.opts, f.cache, &r);
  EXPECT_TRUE(r.hit) << r.reason;
  EXPECT_EQ(a.fingerprint, b.fingerprint);
}

TEST(Cache, NcclOverlayIsPartOfTheKey) {
  Fixture f;
  CacheResult r;
  probe_cached(f.opts, f.cache, &r);
  f.opts.nccl_topo_file = probe_test::fixture("nccl-topo/azure-ndv4-topo.xml");
  Topology t = probe_cached(f.opts, f.cache, &r);
  EXPECT_FALSE(r.hit);
  EXPECT_EQ(r.reason, "other source");
  EXPECT_TRUE(probe_test::contains_prefix(t.warnings, "NCCL topology file"));  // Lassen ids are not in it
}

// Written only into a directory no one but its owner can change (slurmd's start applies the same rule to it): in a
// group/world-writable one a user could plant the temporary name or swap the entry. The probe itself still works.
TEST(Cache, NotWrittenIntoADirectoryOthersCanWrite) {
  Fixture f;
  const std::string dir = f.d.path + "/shared";
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  CacheOptions c = f.cache;
  c.path = dir + "/topology.json";
  for (mode_t mode : {01777, 0777, 0775, 0757}) {
    ASSERT_EQ(::chmod(dir.c_str(), mode), 0);
    CacheResult r;
    const Topology t = probe_cached(f.opts, c, &r);
    EXPECT_EQ(t.gpus.size(), 4u);
    EXPECT_NE(r.reason.find("not group/world-writable; cache not written"), std::string::npos) << r.reason;
    struct stat st {};
    EXPECT_NE(::stat(c.path.c_str(), &st), 0) << "written into a directory of mode " << std::oct << mode;
  }
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);  // control: the same directory, writable by its owner only
  CacheResult r;
  probe_cached(f.opts, c, &r);
  struct stat st {};
  EXPECT_EQ(::stat(c.path.c_str(), &st), 0) << r.reason;
}
