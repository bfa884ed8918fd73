// The site tuning log as slurmstepd writes it at a job's end (plugin/job/tuning_log_writer.h), against real files
// in a scratch directory: lines appended whole and in order, the file's mode capped, its group by name or gid,
// and the job's one claim on a line — including a marker that cannot be made, which must not cost the line.
// These tests run as root in CI (the writer's directories must be root's); permission bits do not stop root, so
// the failures used here are ones that stop root too: a removed directory, a path through a regular file, a
// group-writable log_dir that the writer itself refuses.
#include <fcntl.h>
#include <grp.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "job/job_files.h"
#include "job/tuning_log_writer.h"
#include "temp_dir.h"

using namespace paratune;
using paratune::fixtures::TempDir;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct stat stat_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// A gid that names no group on this machine (and no group is named by its digits): the writer can only have
// taken it as a number.
gid_t gid_without_group() {
  for (gid_t g = 4242; g < 60000; ++g)
    if (!::getgrgid(g) && !::getgrnam(std::to_string(g).c_str())) return g;
  return 0;
}

// A group of this machine's group database other than gid 0, so that "taken by name" is tellable from "left
// as root's".
std::optional<std::pair<std::string, gid_t>> group_other_than_root() {
  ::setgrent();
  std::optional<std::pair<std::string, gid_t>> found;
  while (const struct group* g = ::getgrent())
    if (g->gr_gid != 0) {
      found = std::pair{std::string(g->gr_name), g->gr_gid};
      break;
    }
  ::endgrent();
  return found;
}

policies::LogSettings log_settings(unsigned mode) {
  policies::LogSettings log;
  log.file_mode = mode;
  return log;
}

}  // namespace

TEST(TuningLogWriter, ThePathIsThePolicysElseTheLogDirs) {
  policies::LogSettings log;
  const auto by_default = job::tuning_log_path(log, "/var/log/paratune");
  EXPECT_EQ(by_default.dir, "/var/log/paratune");
  EXPECT_EQ(by_default.name, "tuning.jsonl");
  log.tuning_log = "/srv/logs/site.jsonl";
  const auto moved = job::tuning_log_path(log, "/var/log/paratune");
  EXPECT_EQ(moved.dir, "/srv/logs");
  EXPECT_EQ(moved.name, "site.jsonl");
  log.tuning_log = "/site.jsonl";
  EXPECT_EQ(job::tuning_log_path(log, "/var/log/paratune").dir, "/");
}

TEST(TuningLogWriter, TwoAppendsAreTwoLinesTheFirstUntouchedEachIndexed) {
  TempDir t;
  const std::string first = R"({"job_id":"101","mode":"advise"})", second = R"({"job_id":"102","mode":"tune"})";
  const auto a = job::append_tuning_line(log_settings(0640), t.path, "101", first);
  EXPECT_EQ(a.error, "");
  EXPECT_EQ(a.warnings.size(), 0u);
  EXPECT_EQ(slurp(t.path + "/tuning.jsonl"), first + "\n");
  const auto b = job::append_tuning_line(log_settings(0640), t.path, "102", second);
  EXPECT_EQ(b.error, "");
  EXPECT_EQ(slurp(t.path + "/tuning.jsonl"), first + "\n" + second + "\n");
  // The index markers (tuning_index.h): <name>.index/<last two digits of the job id>/<job id>.
  EXPECT_TRUE(exists(t.path + "/tuning.jsonl.index/01/101"));
  EXPECT_TRUE(exists(t.path + "/tuning.jsonl.index/02/102"));
}

// The lock held elsewhere for the whole wait (another job, or a stuck NFS lock): the line is still written, whole,
// and the write says so for the Slurm log (docs/operations.md: "A lock not had within 2 s is logged").
TEST(TuningLogWriter, ALockNotHadIsWrittenWithoutItAndSaysSo) {
  TempDir t;
  ASSERT_EQ(job::append_tuning_line(log_settings(0640), t.path, "201", "{}").error, "");  // makes the lock file
  const int held = ::open((t.path + "/.tuning.jsonl.lock").c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);  // another open file description: the writer's flock must wait on it
  const auto w = job::append_tuning_line(log_settings(0640), t.path, "202", R"({"job_id":"202"})");
  ::close(held);
  EXPECT_EQ(w.error, "");
  ASSERT_EQ(w.warnings.size(), 1u);
  EXPECT_NE(w.warnings[0].find("not had within 2 s"), std::string::npos) << w.warnings[0];
  EXPECT_NE(w.warnings[0].find("tuning.jsonl"), std::string::npos) << w.warnings[0];
  EXPECT_EQ(slurp(t.path + "/tuning.jsonl"), "{}\n" R"({"job_id":"202"})" "\n");
  // Positive control: with the lock free again, no warning.
  EXPECT_EQ(job::append_tuning_line(log_settings(0640), t.path, "203", "{}").warnings.size(), 0u);
}

TEST(TuningLogWriter, ThePolicysPathGetsTheLineAndTheLogDirNone) {
  TempDir t;
  auto log = log_settings(0640);
  log.tuning_log = t.path + "/site/other.jsonl";
  const auto w = job::append_tuning_line(log, t.path + "/logdir", "7", "{}");
  EXPECT_EQ(w.error, "");
  EXPECT_EQ(slurp(t.path + "/site/other.jsonl"), "{}\n");
  EXPECT_EQ(stat_of(t.path + "/site").st_mode & 07777, 0755u);  // made root's, readable, not writable by others
  EXPECT_FALSE(exists(t.path + "/logdir/tuning.jsonl"));
}

TEST(TuningLogWriter, TheModeIsThePolicysNeverWritableByOthers) {
  EXPECT_EQ(job::tuning_log_mode(0666), 0664u);
  EXPECT_EQ(job::tuning_log_mode(0777), 0664u);
  EXPECT_EQ(job::tuning_log_mode(0640), 0640u);
  const std::pair<unsigned, unsigned> cases[] = {{0666, 0664}, {0777, 0664}, {0640, 0640}, {0604, 0604}};
  for (const auto& [policy, expected] : cases) {
    TempDir t;
    ASSERT_EQ(job::append_tuning_line(log_settings(policy), t.path, "5", "{}").error, "");
    const mode_t mode = stat_of(t.path + "/tuning.jsonl").st_mode & 07777;
    EXPECT_EQ(mode, expected) << std::oct << "policy mode 0" << policy;
    EXPECT_EQ(mode & S_IWOTH, 0u);
  }
}

TEST(TuningLogWriter, AnExistingLogTakesThePolicysModeOnTheNextLine) {
  TempDir t;
  ASSERT_EQ(job::append_tuning_line(log_settings(0600), t.path, "5", "{}").error, "");
  ASSERT_EQ(stat_of(t.path + "/tuning.jsonl").st_mode & 07777, 0600u);
  ASSERT_EQ(job::append_tuning_line(log_settings(0666), t.path, "6", "{}").error, "");
  EXPECT_EQ(stat_of(t.path + "/tuning.jsonl").st_mode & 07777, 0664u);
}

TEST(TuningLogWriter, AnAllDigitGroupIsThatGid) {
  const gid_t gid = gid_without_group();
  ASSERT_NE(gid, 0u) << "every gid from 4242 to 59999 has a group here";
  const auto g = job::tuning_log_group(std::to_string(gid));
  EXPECT_EQ(g.gid, static_cast<long>(gid));
  EXPECT_EQ(g.problem, "");
  TempDir t;
  auto log = log_settings(0640);
  log.group = std::to_string(gid);
  const auto w = job::append_tuning_line(log, t.path, "4711", "{}");
  EXPECT_EQ(w.error, "");
  EXPECT_TRUE(w.warnings.empty());
  EXPECT_EQ(stat_of(t.path + "/tuning.jsonl").st_gid, gid);
  EXPECT_EQ(stat_of(t.path + "/tuning.jsonl.index/11/4711").st_gid, gid);  // the marker: the log's group too
}

TEST(TuningLogWriter, AGroupNameIsLookedUp) {
  const auto g = group_other_than_root();
  if (!g) GTEST_SKIP() << "this machine's group database has no group other than gid 0";
  const auto& [name, gid] = *g;
  EXPECT_EQ(job::tuning_log_group(name).gid, static_cast<long>(gid));
  TempDir t;
  auto log = log_settings(0640);
  log.group = name;
  ASSERT_EQ(job::append_tuning_line(log, t.path, "5", "{}").error, "");
  EXPECT_EQ(stat_of(t.path + "/tuning.jsonl").st_gid, gid);
}

TEST(TuningLogWriter, AnUnknownGroupLeavesTheGroupAndSaysSo) {
  for (const std::string name : {"paratune-no-such-group", "12a", "12345678901"}) {
    ASSERT_EQ(::getgrnam(name.c_str()), nullptr) << name << " exists here";
    const auto g = job::tuning_log_group(name);
    EXPECT_EQ(g.gid, -1) << name;
    EXPECT_NE(g.problem.find("group " + name + " not found"), std::string::npos) << g.problem;
  }
  TempDir t;
  const std::string control = t.path + "/control";
  ::close(::open(control.c_str(), O_WRONLY | O_CREAT, 0600));  // the group a new file gets here
  auto log = log_settings(0640);
  log.group = "paratune-no-such-group";
  const auto w = job::append_tuning_line(log, t.path, "5", "{}");
  EXPECT_EQ(w.error, "");
  ASSERT_EQ(w.warnings.size(), 1u);
  EXPECT_NE(w.warnings[0].find("paratune-no-such-group"), std::string::npos) << w.warnings[0];
  EXPECT_EQ(slurp(t.path + "/tuning.jsonl"), "{}\n");  // the line is written all the same
  EXPECT_EQ(stat_of(t.path + "/tuning.jsonl").st_gid, stat_of(control).st_gid);
}

TEST(TuningLogWriter, ALineThatCannotBeAppendedSaysWhyAfterTheGroupsWarning) {
  TempDir t;
  ASSERT_EQ(::mkdir((t.path + "/tuning.jsonl").c_str(), 0755), 0);  // a directory where the log should be
  auto log = log_settings(0640);
  log.group = "paratune-no-such-group";
  const auto w = job::append_tuning_line(log, t.path, "5", "{}");
  EXPECT_NE(w.error.find("tuning.jsonl"), std::string::npos) << w.error;
  ASSERT_EQ(w.warnings.size(), 1u);
  EXPECT_NE(w.warnings[0].find("group"), std::string::npos);
  EXPECT_FALSE(exists(t.path + "/tuning.jsonl.index"));
}

TEST(TuningLogWriter, OneClaimPerJob) {
  TempDir t;
  const auto first = job::claim_tuning_line(t.path, "7");
  EXPECT_TRUE(first.write);
  EXPECT_EQ(first.problem, "");
  EXPECT_TRUE(exists(t.path + "/jobs/7/line"));
  const auto second = job::claim_tuning_line(t.path, "7");
  EXPECT_FALSE(second.write);
  EXPECT_EQ(second.problem, "");
  const auto other_job = job::claim_tuning_line(t.path, "8");
  EXPECT_TRUE(other_job.write);
  EXPECT_EQ(other_job.problem, "");
}

// A step that claimed the line but could not write it gives the claim back: the next deciding step writes it.
TEST(TuningLogWriter, AClaimGivenBackLetsALaterStepWriteTheLine) {
  TempDir t;
  ASSERT_TRUE(job::claim_tuning_line(t.path, "7").write);
  EXPECT_FALSE(job::claim_tuning_line(t.path, "7").write);  // control: held, a later step writes none
  EXPECT_EQ(job::release_tuning_line(t.path, "7"), "");
  EXPECT_FALSE(exists(t.path + "/jobs/7/line"));
  const auto again = job::claim_tuning_line(t.path, "7");
  EXPECT_TRUE(again.write);
  EXPECT_EQ(again.problem, "");
  EXPECT_EQ(job::release_tuning_line(t.path, "8"), "");  // nothing to give back: nothing to say
}

TEST(TuningLogWriter, AMarkerThatCannotBeMadeMeansWriteAnyway) {
  TempDir t;
  auto live = job::open_job_dir_in(t.path, "8");
  auto removed = job::open_job_dir_in(t.path, "9");
  ASSERT_EQ(::rmdir((t.path + "/jobs/9").c_str()), 0);  // nothing is created in a removed directory, not by root
  const auto claim = job::claim_tuning_line_at(removed.get(), "9");
  EXPECT_TRUE(claim.write);
  EXPECT_EQ(claim.problem.rfind("jobs/9/line: ", 0), 0u) << claim.problem;
  // Control: the same call in a directory that is still there makes the marker and has nothing to say.
  const auto control = job::claim_tuning_line_at(live.get(), "8");
  EXPECT_TRUE(control.write);
  EXPECT_EQ(control.problem, "");
  EXPECT_TRUE(exists(t.path + "/jobs/8/line"));
}

TEST(TuningLogWriter, AJobDirectoryThatCannotBeHadMeansWriteAnyway) {
  TempDir t;
  std::ofstream(t.path + "/file") << "x\n";
  const auto through_a_file = job::claim_tuning_line(t.path + "/file/logs", "7");  // mkdir fails: ENOTDIR
  EXPECT_TRUE(through_a_file.write);
  EXPECT_NE(through_a_file.problem.find(t.path + "/file/logs"), std::string::npos) << through_a_file.problem;
  const std::string open_dir = t.path + "/group-writable";
  ASSERT_EQ(::mkdir(open_dir.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(open_dir.c_str(), 0775), 0);  // a user of the group could plant a link: the writer refuses it
  const auto refused = job::claim_tuning_line(open_dir, "7");
  EXPECT_TRUE(refused.write);
  EXPECT_NE(refused.problem.find("group/world-writable"), std::string::npos) << refused.problem;
  EXPECT_FALSE(exists(open_dir + "/jobs"));
}
