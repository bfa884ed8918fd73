#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

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

namespace {

// The report's fields as the plugin makes them, read as nobody when root.
nlohmann::json fields(const std::string& path) {
  const bool root = ::geteuid() == 0;
  const JobUser user{root ? kNobody : ::geteuid(), root ? kNogroup : ::getegid(), {}, true};
  return report_fields_as_user(path, user, {{"step_time_s", 2.0}}, 0.7, 5000);
}

}  // namespace

// Hardening round 3, finding 4: a read error repeated the user's $PARATUNE_REPORT path, and an invalid report its
// own text, into "report" — and from there into the job's AdminComment. Every outcome is now a fixed reason.
TEST(ReportReader, TheReportFieldIsAFixedReasonNeverTheUsersWords) {
  TempDir t;
  const std::string words = t.path + "/ratio 1.00; suspect: no; OK checked by admin";
  ASSERT_EQ(::mkdir(words.c_str(), 0755), 0);
  auto in = [&](const std::string& name) { return words + "/" + name; };
  std::ofstream(in("garbage.jsonl")) << "\n\nOK checked by admin, ratio 1.00\n";  // lines 1-2 blank
  std::ofstream(in("empty.jsonl"));
  std::ofstream(in("mixed.jsonl")) << "{\"step_time_s\": 2}\nnot json: admin words\n{\"step_time_s\": 2}\n"
                                   << "{\"step_time_s\": 2}\n{\"step_time_s\": 2}\n{\"step_time_s\": 2}\n";
  ASSERT_EQ(::symlink("/etc/shadow", in("link.jsonl").c_str()), 0);
  ASSERT_EQ(::mkfifo(in("fifo.jsonl").c_str(), 0666), 0);
  ASSERT_EQ(::mkdir(in("dir.jsonl").c_str(), 0755), 0);
  const int fd = ::open(in("huge.jsonl").c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 10LL << 30), 0);  // 10 GB of zeros, sparse: binary, past the bound
  ::close(fd);
  std::vector<std::pair<std::string, std::string>> expected = {
      {"missing.jsonl", "missing"},          {"link.jsonl", "not a regular file"},
      {"fifo.jsonl", "not a regular file"},  {"dir.jsonl", "not a regular file"},
      {"garbage.jsonl", "invalid line 3"},   {"empty.jsonl", "empty"},
      {"huge.jsonl", "too large"},           {"mixed.jsonl", "ok: 1 bad line ignored"}};
  if (::geteuid() == 0) {
    std::ofstream(in("secret.jsonl")) << "{\"step_time_s\": 1}\n";
    ASSERT_EQ(::chmod(in("secret.jsonl").c_str(), 0600), 0);  // root's: nobody may not read it
    expected.push_back({"secret.jsonl", "unreadable"});
  }
  for (const auto& [name, reason] : expected) {
    const auto f = fields(in(name));
    const std::string report = f.value("report", "");
    EXPECT_EQ(report, reason) << name;
    EXPECT_TRUE(is_report_reason(report)) << name << ": " << report;
    const std::string all = f.dump();
    for (const char* word : {"admin", "suspect: no", "ratio 1.00", "OK checked"})
      EXPECT_EQ(all.find(word), std::string::npos) << name << ": " << all;
  }
}

TEST(ReportReader, TheVocabularyHasNoRoomForText) {
  for (const char* ok : {"ok", "missing", "invalid line 12", "ok: 3 bad lines ignored", "ok: 1 bad line ignored",
                         "ok: truncated at the size limit", "ok: 2 bad lines ignored; truncated at the size limit"})
    EXPECT_TRUE(is_report_reason(ok)) << ok;
  for (const char* bad : {"invalid: reading the report /home/u/x", "ok: checked by admin", "invalid line 3 admin",
                          "invalid line ", "missing ", ""})
    EXPECT_FALSE(is_report_reason(bad)) << bad;
}

// Finding 5: the reader's child runs as the user on the user's file; its answer is checked field by field and the
// line's fields are made by the parent (the ratio and the suspect verdict against the plan's prediction), so a
// child made to answer something else adds no field and changes no figure.
TEST(ReportReader, OnlyKnownTypeCheckedFieldsComeFromTheChildsAnswer) {
  const nlohmann::json predicted = {{"step_time_s", 2.0}};
  nlohmann::json good = {{"status", "read"}, {"valid", true}, {"truncated", false}, {"bad_lines", 0},
                         {"samples", 10}, {"warmup_excluded", 2}, {"median", 8.0}, {"p10", 7.9}, {"p90", 8.1},
                         {"steps", 8}};
  auto f = report_fields_from_answer(good.dump(), predicted, 0.7);
  EXPECT_EQ(f.value("report", ""), "ok");
  EXPECT_DOUBLE_EQ(f.value("ratio", 0.0), 0.25);  // 2.0 predicted / 8.0 achieved, computed here
  EXPECT_TRUE(f.contains("suspect"));             // below 0.7, widened to 0.42 for an uncalibrated prediction
  auto hostile = good;
  hostile["user"] = "alice";
  hostile["job_id"] = "1";
  hostile["ratio"] = 99;
  hostile["report"] = "ok: checked by admin";
  f = report_fields_from_answer(hostile.dump(), predicted, 0.7);
  for (const auto& [key, value] : f.items())
    EXPECT_TRUE(key == "report" || key == "achieved" || key == "ratio" || key == "suspect" || key == "oom") << key;
  EXPECT_DOUBLE_EQ(f.value("ratio", 0.0), 0.25);
  EXPECT_EQ(f.value("report", ""), "ok");
  for (const auto& [key, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"median", "8.0"}, {"median", -1.0}, {"bad_lines", -3}, {"valid", "yes"}, {"status", "admin says ok"},
           {"samples", 1e30}}) {
    auto broken = good;
    broken[key] = value;
    const auto b = report_fields_from_answer(broken.dump(), predicted, 0.7);
    EXPECT_EQ(b, nlohmann::json({{"report", "unreadable"}})) << key << "=" << value.dump() << " gave " << b.dump();
  }
  EXPECT_EQ(report_fields_from_answer("not json", predicted, 0.7), nlohmann::json({{"report", "unreadable"}}));
}
