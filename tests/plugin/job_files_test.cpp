// log_dir/jobs/<jobid>/ (plugin/job/job_files.h): hardening round 3, finding 3 — jobs/ grew by one root-owned
// file per inheriting step and two per job, never removed, and every job end listed all of it.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "job/job_files.h"
#include "job/node_checks.h"
#include "temp_dir.h"

using namespace paratune::job;
using namespace paratune::common;
using paratune::fixtures::TempDir;

namespace {

UniqueFd open_dir(const std::string& path) { return UniqueFd(::open(path.c_str(), O_RDONLY | O_DIRECTORY)); }

size_t entries(const std::string& path) {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(path)) n += e.path().filename().string()[0] != '.';
  return n;
}

void age(const std::string& path, long seconds) {
  const struct timespec t[2] = {{std::time(nullptr) - seconds, 0}, {std::time(nullptr) - seconds, 0}};
  ::utimensat(AT_FDCWD, path.c_str(), t, AT_SYMLINK_NOFOLLOW);
}

}  // namespace

TEST(JobFiles, NodeChecksAreCappedOnWrite) {
  TempDir t;
  auto jobs = open_dir(t.path);
  auto dir = open_job_dir(jobs.get(), "5");
  ASSERT_TRUE(record_node_check(dir.get(), {"n1", "0", "fp", "fp", true}));
  // The other records as the steps left them (written directly: 4,095 fsync'ed writes would only slow the test).
  for (size_t i = 1; i < kMaxNodeChecks; ++i) std::ofstream(t.path + "/5/" + node_check_name("n1", std::to_string(i))) << "{}\n";
  EXPECT_FALSE(record_node_check(dir.get(), {"n1", "one-more", "fp", "fp", true}));
  EXPECT_TRUE(record_node_check(dir.get(), {"n1", "0", "fp2", "fp", true}));  // its own record may be replaced
  EXPECT_EQ(entries(t.path + "/5"), kMaxNodeChecks);
}

TEST(JobFiles, TheJobLogIsCappedOnWrite) {
  TempDir t;
  const std::string path = t.path + "/job.log";
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0640));
  CappedLog log(fd.get(), 1000);
  for (int i = 0; i < 100; ++i) log.write(std::string(99, 'x') + "\n");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_LE(st.st_size, 1000 + 200);  // the cap and the one line that says so
  EXPECT_GE(st.st_size, 900);         // control: it was written up to the cap
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("reached its cap of 1000 bytes"), std::string::npos);
}

TEST(JobFiles, AtTheJobsEndOnlyTheLogIsLeftAndALoglessDirectoryGoes) {
  TempDir t;
  auto jobs = open_dir(t.path);
  {
    auto dir = open_job_dir(jobs.get(), "7");
    record_partition(dir.get(), "gpu");
    EXPECT_EQ(recorded_partition(dir.get()).value_or(""), "gpu");
    record_node_check(dir.get(), {"mn2", "0", "fpB", "fpA", false});
    std::ofstream(t.path + "/7/line");
    std::ofstream(t.path + "/7/job.log") << "paratune: ...\n";
    auto bare = open_job_dir(jobs.get(), "8");
    std::ofstream(t.path + "/8/line");
  }
  const auto end = finish_job_dir(jobs.get(), "7");
  EXPECT_EQ(end.node_checks, 1);
  EXPECT_EQ(end.mismatches, 1);
  EXPECT_NE(end.summary.find("1 with another topology fingerprint"), std::string::npos) << end.summary;
  EXPECT_FALSE(end.directory_removed);
  EXPECT_EQ(entries(t.path + "/7"), 1u);  // job.log
  EXPECT_TRUE(finish_job_dir(jobs.get(), "8").directory_removed);
  EXPECT_EQ(::access((t.path + "/8").c_str(), F_OK), -1);
  EXPECT_FALSE(finish_job_dir(jobs.get(), "9").directory_removed);  // none: nothing to do
}

TEST(JobFiles, OldEntriesAreRemovedByAgeRecentOnesKeptAndTheLookBounded) {
  TempDir t;
  auto jobs = open_dir(t.path);
  for (const char* id : {"1", "2", "3"}) {
    open_job_dir(jobs.get(), id);
    std::ofstream(t.path + "/" + id + "/job.log") << "x\n";
  }
  std::ofstream(t.path + "/4.log") << "an earlier release's flat file\n";
  std::ofstream(t.path + "/5.log") << "recent\n";
  for (const std::string p : {"/1/job.log", "/1", "/2/job.log", "/2", "/4.log"}) age(t.path + p, 40 * 86400);
  age(t.path + "/3/job.log", 40 * 86400);  // its directory changed recently: kept
  const auto gc = collect_old_jobs(jobs.get(), std::time(nullptr), 30 * 86400, 1000);
  EXPECT_EQ(gc.removed, 3u);
  EXPECT_EQ(gc.kept, 2u);
  EXPECT_FALSE(gc.stopped_early);
  EXPECT_EQ(entries(t.path), 2u);
  EXPECT_EQ(::access((t.path + "/3/job.log").c_str(), F_OK), 0);
  const auto bounded = collect_old_jobs(jobs.get(), std::time(nullptr), 30 * 86400, 1);
  EXPECT_TRUE(bounded.stopped_early);
  EXPECT_EQ(bounded.looked_at, 1u);
}

TEST(JobFiles, AJobDirectoryOthersCanWriteOrALinkIsRefused) {
  TempDir t;
  auto jobs = open_dir(t.path);
  ASSERT_EQ(::mkdir((t.path + "/11").c_str(), 0777), 0);
  ASSERT_EQ(::chmod((t.path + "/11").c_str(), 0777), 0);
  EXPECT_THROW(open_job_dir(jobs.get(), "11"), std::runtime_error);
  ASSERT_EQ(::symlink("/etc", (t.path + "/12").c_str()), 0);
  EXPECT_THROW(open_job_dir(jobs.get(), "12"), std::exception);
  auto dir = open_job_dir(jobs.get(), "13");
  ASSERT_EQ(::symlink("/etc/hostname", (t.path + "/13/partition").c_str()), 0);
  EXPECT_FALSE(recorded_partition(dir.get()));  // a link is not a record
}
