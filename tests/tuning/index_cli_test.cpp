// `paratune index rebuild|update|status` and `paratune log --source`, run as the built binary: a log answered from a
// current store prints exactly what streaming the files prints (stdout, stderr, exit status), for every filter;
// once lines are appended the store catches up with them, a rotation rebuilds it, and a store that cannot be
// brought up to date is read around.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "history.h"
#include "test_util.h"

using namespace paratune::tuning::testing;
namespace fs = std::filesystem;

namespace {

struct Result {
  int status = -1;
  std::string out, err;
};

class IndexCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("paratune-indexcli-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "logs");
  }
  void TearDown() override { fs::remove_all(dir_); }
  Result sh(const std::string& args) {
    const fs::path o = dir_ / "stdout", e = dir_ / "stderr";
    const std::string full = "(" + std::string(PARATUNE_CLI) + " " + args + ") >" + o.string() + " 2>" + e.string() +
                             " </dev/null";
    const int st = std::system(full.c_str());
    return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, slurp(o.string()), slurp(e.string())};
  }
  fs::path dir_;
};

}  // namespace

TEST_F(IndexCli, LogFromTheStoreIsLogFromTheFilesAndAStoreBehindIsCaughtUp) {
  const std::string csv = std::string(PARATUNE_SOURCE_ROOT) + "/data/calibration/published/measurements.csv";
  const std::string logs = (dir_ / "logs").string();
  const std::string published = published_history(csv);
  const size_t bad_line = count(published, "\n") + 1;  // the "not json" line after the published runs
  std::ofstream(logs + "/tuning.jsonl") << published << "not json\n" << synthetic_history(30);
  std::ofstream(logs + "/tuning.jsonl.1") << synthetic_history(12, {}, 3);  // copies of the same job ids
  const std::string on = "--log " + logs;

  const Result none = sh("index status " + on);
  EXPECT_EQ(none.status, 1);
  EXPECT_NE(none.out.find("no index at " + logs + "/tuning-index.sqlite"), std::string::npos) << none.out;
  const Result refused = sh("log --source index " + on);
  EXPECT_EQ(refused.status, 1);
  EXPECT_NE(refused.err.find("no index at"), std::string::npos) << refused.err;

  const Result built = sh("index rebuild " + on);
  ASSERT_EQ(built.status, 0) << built.err;
  EXPECT_NE(built.out.find("of 2 files"), std::string::npos) << built.out;
  EXPECT_TRUE(fs::exists(logs + "/tuning-index.sqlite"));
  EXPECT_EQ(sh("index status " + on).status, 0);

  const char* filters[] = {"",
                           "--json",
                           "--user alice",
                           "--partition a100",
                           "--job-id 5",
                           "--gpu a100-sxm4-80gb",
                           "--framework fsdp",
                           "--since 2025-01-02 --until 2025-01-03",
                           "--suspects --min-jobs 1",
                           "--oom",
                           "--user nobody"};
  for (const char* f : filters) {
    SCOPED_TRACE(f);
    const Result stream = sh("log --source stream " + on + " " + f);
    const Result index = sh("log --source index " + on + " " + f);
    EXPECT_EQ(index.status, stream.status);
    EXPECT_EQ(index.out, stream.out);
    EXPECT_EQ(index.err, stream.err);
    EXPECT_EQ(sh("log " + on + " " + f).out, stream.out);  // the default (auto) too
  }
  // positive controls: the filters select something, and the problems and merge summary are there to compare
  EXPECT_GT(count(sh("log --source index " + on + " --framework fsdp").out, "\n"), 5u);
  const Result all = sh("log --source index " + on);
  EXPECT_NE(all.err.find("tuning.jsonl:" + std::to_string(bad_line) + ": not valid JSON"), std::string::npos)
      << all.err;
  EXPECT_NE(all.err.find("duplicate"), std::string::npos) << all.err;

  // A job appended after the rebuild: the store is behind (status says so); `paratune log` catches it up with the
  // appended line and answers from it, as streaming would.
  std::ofstream(logs + "/tuning.jsonl", std::ios::app)
      << R"({"job_id":"777777","time":1900000000,"user":"late","partition":"p"})" << "\n";
  const Result stale = sh("index status " + on);
  EXPECT_EQ(stale.status, 1);
  EXPECT_NE(stale.out.find("stale: " + logs + "/tuning.jsonl"), std::string::npos) << stale.out;
  const Result caught = sh("log --source index " + on + " --user late");
  EXPECT_EQ(caught.status, 0) << caught.err;
  EXPECT_NE(caught.out.find("777777"), std::string::npos) << caught.out;
  EXPECT_EQ(caught.out, sh("log --source stream " + on + " --user late").out);
  EXPECT_EQ(sh("index status " + on).status, 0);  // caught up, and used as it is now

  // `index update`: the lines appended since, then nothing; a rotation (the file renamed away, a new one at its
  // name: another list of files here) rebuilds.
  std::ofstream(logs + "/tuning.jsonl", std::ios::app)
      << R"({"job_id":"777778","time":1900000100,"user":"late","partition":"p"})" << "\n";
  const Result up = sh("index update " + on);
  EXPECT_EQ(up.status, 0) << up.err;
  EXPECT_NE(up.out.find("caught up: 1 lines appended to 1 file"), std::string::npos) << up.out;
  EXPECT_NE(sh("index update " + on).out.find(": current"), std::string::npos);
  fs::rename(logs + "/tuning.jsonl", logs + "/tuning.jsonl.2");
  std::ofstream(logs + "/tuning.jsonl") << R"({"job_id":"777779","time":1900000200,"user":"late","partition":"p"})"
                                        << "\n";
  const Result rotated = sh("index update " + on);
  EXPECT_EQ(rotated.status, 0) << rotated.err;
  EXPECT_NE(rotated.out.find("rebuilt"), std::string::npos) << rotated.out;
  for (const char* f : filters) {
    SCOPED_TRACE(std::string("after the rotation: ") + f);
    const Result stream = sh("log --source stream " + on + " " + f);
    const Result index = sh("log --source index " + on + " " + f);
    EXPECT_EQ(index.status, stream.status);
    EXPECT_EQ(index.out, stream.out);
    EXPECT_EQ(index.err, stream.err);
  }
  EXPECT_EQ(count(sh("log --source index " + on + " --user late").out, "77777"), 3u);

  // A store that cannot be brought up to date (its lock cannot be taken: a directory in the way) is not used:
  // the default reads the logs and says why, --source index fails.
  std::ofstream(logs + "/tuning.jsonl", std::ios::app)
      << R"({"job_id":"777780","time":1900000300,"user":"late","partition":"p"})" << "\n";
  fs::remove(logs + "/tuning-index.sqlite.lock");
  fs::create_directories(logs + "/tuning-index.sqlite.lock/x");
  const Result around = sh("log " + on + " --user late");
  EXPECT_EQ(around.status, 0);
  EXPECT_EQ(around.out, sh("log --source stream " + on + " --user late").out);
  EXPECT_NE(around.out.find("777780"), std::string::npos) << around.out;
  EXPECT_NE(around.err.find("cannot bring the history store up to date"), std::string::npos) << around.err;
  EXPECT_EQ(sh("log --source index " + on + " --user late").status, 1);
  fs::remove_all(logs + "/tuning-index.sqlite.lock");
  EXPECT_EQ(sh("log --source index " + on + " --user late").status, 0);  // control: with the lock it catches up
}

TEST_F(IndexCli, RebuildRefusesWhenALogCannotBeReadAndKeepsTheOldStore) {
  const std::string logs = (dir_ / "logs").string();
  std::ofstream(logs + "/tuning.jsonl") << synthetic_history(5);
  ASSERT_EQ(sh("index rebuild --log " + logs + "/tuning.jsonl").status, 0);
  const auto before = fs::last_write_time(logs + "/tuning-index.sqlite");
  const Result r = sh("index rebuild --log " + logs + "/tuning.jsonl --log " + logs + "/missing.jsonl");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("missing.jsonl"), std::string::npos) << r.err;
  EXPECT_EQ(fs::last_write_time(logs + "/tuning-index.sqlite"), before);
  EXPECT_EQ(sh("index status --log " + logs + "/tuning.jsonl").status, 0);  // control: the old one still serves
}
