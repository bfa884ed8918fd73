#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "temp_dir.h"

#include "job/safe_file.h"

using namespace paratune::job;
using paratune::fixtures::TempDir;

namespace {

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST(SafeFile, AtomicWriteReplacesContent) {
  TempDir t;
  auto fd = ensure_directory(t.path + "/d", 0755, ::geteuid());
  write_file_atomic(fd.get(), "plan.json", "{\"a\":1}\n", 0644);
  write_file_atomic(fd.get(), "plan.json", "{\"a\":2}\n", 0644);
  EXPECT_EQ(slurp(t.path + "/d/plan.json"), "{\"a\":2}\n");
}

TEST(SafeFile, DirectoryThatIsASymlinkIsRefused) {
  TempDir t;
  ASSERT_EQ(::mkdir((t.path + "/real").c_str(), 0755), 0);
  ASSERT_EQ(::symlink((t.path + "/real").c_str(), (t.path + "/link").c_str()), 0);
  EXPECT_THROW(ensure_directory(t.path + "/link", 0755, ::geteuid()), std::exception);
}

TEST(SafeFile, DirectoryOwnedBySomeoneElseIsRefused) {
  TempDir t;
  EXPECT_THROW(ensure_directory(t.path, 0755, ::geteuid() + 12345), std::runtime_error);
}

TEST(SafeFile, AppendDoesNotFollowASymlink) {
  TempDir t;
  auto fd = ensure_directory(t.path, 0755, ::geteuid());
  std::ofstream(t.path + "/victim") << "precious\n";
  ASSERT_EQ(::symlink((t.path + "/victim").c_str(), (t.path + "/tuning.jsonl").c_str()), 0);
  EXPECT_THROW(append_line(fd.get(), "tuning.jsonl", "{}", 0644), std::exception);
  EXPECT_EQ(slurp(t.path + "/victim"), "precious\n");
}

TEST(SafeFile, ConcurrentAppendsKeepLinesWhole) {
  TempDir t;
  auto fd = ensure_directory(t.path, 0755, ::geteuid());
  const std::string payload(3000, 'x');  // longer than PIPE_BUF
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      for (int j = 0; j < 50; ++j) append_line(fd.get(), "log", std::to_string(i) + ":" + payload, 0644);
    });
  for (auto& th : threads) th.join();
  std::ifstream in(t.path + "/log");
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    ASSERT_EQ(line.size(), payload.size() + 2) << "line " << n;
  }
  EXPECT_EQ(n, 400);
}

TEST(SafeFile, ReadBoundedStopsAtTheLimitAndRefusesNonRegularFiles) {
  TempDir t;
  std::ofstream(t.path + "/big") << std::string(10000, 'y');
  bool truncated = false;
  EXPECT_EQ(read_bounded(t.path + "/big", 100, &truncated).size(), 100u);
  EXPECT_TRUE(truncated);
  EXPECT_EQ(read_bounded(t.path + "/big", 20000, &truncated).size(), 10000u);
  EXPECT_FALSE(truncated);
  ASSERT_EQ(::mkfifo((t.path + "/fifo").c_str(), 0644), 0);
  EXPECT_THROW(read_bounded(t.path + "/fifo", 100), std::runtime_error);  // and does not block
  ASSERT_EQ(::symlink((t.path + "/big").c_str(), (t.path + "/link").c_str()), 0);
  EXPECT_THROW(read_bounded(t.path + "/link", 100), std::exception);
}
