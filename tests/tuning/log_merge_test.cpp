// One site log from many files: copies of a job merged to one line by the documented rules (log_merge.h).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "paratune/tuning/log_merge.h"

using namespace paratune::tuning;
using nlohmann::json;

namespace {

std::string line(const std::string& id, long long time, bool achieved, const std::string& step = "batch") {
  json j = {{"job_id", id}, {"time", time}, {"step_id", step}, {"partition", "gpu"},
            {"predicted", {{"step_time_s", 2.0}}}};
  if (achieved) j["achieved"] = {{"median_step_time_s", 2.5}};
  return j.dump() + "\n";
}

}  // namespace

TEST(LogMerge, IdenticalCopiesFromTwoNodesBecomeOneJob) {
  const std::string a = line("10", 100, true) + line("11", 200, true);
  const std::string b = line("11", 200, true) + line("12", 300, true);  // job 11 shipped twice
  const MergedLog m = merge_logs({{"node1/tuning.jsonl", a}, {"node2/tuning.jsonl", b}});
  ASSERT_EQ(m.entries.size(), 3u);
  EXPECT_EQ(m.duplicates, 1u);
  EXPECT_EQ(m.files, 2u);
  EXPECT_EQ(m.lines, 4u);
  ASSERT_EQ(m.dropped.size(), 1u);
  EXPECT_EQ(m.dropped[0].why, "first read");
  EXPECT_EQ(m.dropped[0].kept, "node1/tuning.jsonl:2");
  EXPECT_EQ(m.dropped[0].dropped, "node2/tuning.jsonl:1");
  EXPECT_EQ(m.entries[1].job_id, "11");
  EXPECT_EQ(m.entries[1].file, "node1/tuning.jsonl");
  EXPECT_NE(merge_summary(m).find("1 duplicate line dropped"), std::string::npos);
}

TEST(LogMerge, TheCopyWithAchievedFiguresWinsWhicheverIsReadFirst) {
  for (bool achieved_first : {true, false}) {
    const std::string with = line("7", 100, true, "0"), without = line("7", 150, false, "1");
    const MergedLog m = merge_logs({{"a", achieved_first ? with : without}, {"b", achieved_first ? without : with}});
    ASSERT_EQ(m.entries.size(), 1u);
    EXPECT_TRUE(m.entries[0].achieved_step_s) << achieved_first;
    EXPECT_EQ(m.entries[0].step_id, "0");
    EXPECT_EQ(m.dropped[0].why, "achieved figures");
  }
}

TEST(LogMerge, AnOomRecordThenTheLaterEndDecide) {
  json oom = json::parse(line("8", 100, false));
  oom["oom"] = {{"kind", "cuda"}};
  const MergedLog m = merge_logs({{"a", line("8", 500, false)}, {"b", oom.dump() + "\n"}});
  ASSERT_EQ(m.entries.size(), 1u);
  EXPECT_TRUE(m.entries[0].oom);
  EXPECT_EQ(m.dropped[0].why, "out-of-memory record");
  const MergedLog later = merge_logs({{"a", line("9", 100, true, "0")}, {"b", line("9", 300, true, "1")}});
  ASSERT_EQ(later.entries.size(), 1u);
  EXPECT_EQ(later.entries[0].step_id, "1");
  EXPECT_EQ(later.dropped[0].why, "later end time");
}

TEST(LogMerge, LinesWithoutAJobIdAreAllKeptAndProblemsNameTheirFile) {
  const std::string noid = json{{"time", 5}, {"partition", "x"}}.dump() + "\n";
  const MergedLog m = merge_logs({{"f1", noid + noid + "not json\n"}, {"f2", line("1", 9, true)}});
  EXPECT_EQ(m.entries.size(), 3u);
  EXPECT_EQ(m.duplicates, 0u);
  ASSERT_EQ(m.problems.size(), 1u);
  EXPECT_EQ(m.problems[0].file, "f1");
  EXPECT_EQ(m.problems[0].line, 3u);
  EXPECT_EQ(m.unreadable, 1u);
  // By end time across files.
  EXPECT_EQ(m.entries.front().time, 5);
  EXPECT_EQ(m.entries.back().job_id, "1");
}
