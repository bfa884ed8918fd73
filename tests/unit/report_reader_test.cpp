#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "temp_dir.h"

#include "job/report_reader.h"

using namespace paratune::job;
using paratune::fixtures::TempDir;

namespace {

constexpr uid_t kNobody = 65534;
constexpr gid_t kNogroup = 65534;

// Read as the current user when not root (the child cannot change uid then), as nobody when root.
ReportFile read(const std::string& path) {
  const bool root = ::geteuid() == 0;
  return read_report_as_user(path, root ? kNobody : ::geteuid(), root ? kNogroup : ::getegid(), 5000);
}

}  // namespace

TEST(ReportReader, RegularFile) {
  TempDir t;
  std::ofstream(t.path + "/report.jsonl") << "{\"step\": 1, \"step_time_s\": 4.2}\n";
  auto r = read(t.path + "/report.jsonl");
  ASSERT_TRUE(r.content) << r.error;
  EXPECT_EQ(*r.content, "{\"step\": 1, \"step_time_s\": 4.2}\n");
  EXPECT_FALSE(r.truncated);
}

TEST(ReportReader, MissingIsNotAnError) {
  TempDir t;
  auto r = read(t.path + "/report.jsonl");
  EXPECT_TRUE(r.missing);
  EXPECT_TRUE(r.error.empty());
}

TEST(ReportReader, SymlinkIsRefused) {
  TempDir t;
  ASSERT_EQ(::symlink("/etc/shadow", (t.path + "/report.jsonl").c_str()), 0);
  auto r = read(t.path + "/report.jsonl");
  EXPECT_FALSE(r.content);
  EXPECT_NE(r.error.find("report.jsonl"), std::string::npos) << r.error;
}

TEST(ReportReader, FifoIsRefusedWithoutBlocking) {
  TempDir t;
  ASSERT_EQ(::mkfifo((t.path + "/report.jsonl").c_str(), 0666), 0);
  const auto start = std::chrono::steady_clock::now();
  auto r = read(t.path + "/report.jsonl");
  EXPECT_FALSE(r.content);
  EXPECT_NE(r.error.find("not a regular file"), std::string::npos) << r.error;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));
}

TEST(ReportReader, HugeSparseFileIsReadOnlyUpToTheBound) {
  TempDir t;
  const std::string p = t.path + "/report.jsonl";
  int fd = ::open(p.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 10LL << 30), 0);  // 10 GB, sparse
  ::close(fd);
  auto r = read(p);
  ASSERT_TRUE(r.content) << r.error;
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.content->size(), kMaxReportBytes);
}

TEST(ReportReader, ReadsWithTheJobUsersRightsNotRoots) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: checks that the reader drops root's rights";
  TempDir t;
  const std::string p = t.path + "/secret.jsonl";
  std::ofstream(p) << "{\"step_time_s\": 1}\n";
  ASSERT_EQ(::chmod(p.c_str(), 0600), 0);  // root's file: nobody may not read it
  auto r = read_report_as_user(p, kNobody, kNogroup, 5000);
  EXPECT_FALSE(r.content);
  EXPECT_NE(r.error.find("Permission denied"), std::string::npos) << r.error;
}
