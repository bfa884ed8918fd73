// The streaming reader (tuning/scan) against the reference reader (merge_logs over read_tuning_log, nlohmann):
// the same entries in the same order, the same problems and counts, on the logs the other tests use and on lines
// made to differ (bad JSON, huge numbers, deep nesting, duplicate keys, copies of one job across files).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "history.h"
#include "paratune/tuning/log_merge.h"
#include "paratune/tuning/scan/log_stream.h"
#include "paratune/tuning/scenario_json.h"

using namespace paratune::tuning;
using namespace paratune::tuning::testing;
using nlohmann::json;

namespace {

// Everything an entry says, as text: two readers agree when these agree.
std::string describe(const LogEntry& e) {
  json j = {{"file", e.file}, {"line", e.line}, {"job", e.job_id}, {"step", e.step_id}, {"time", e.time},
            {"user", e.user}, {"partition", e.partition}, {"host", e.host}, {"gpu", e.gpu_model},
            {"state", e.state}, {"report", e.report}, {"nodes", e.nodes}, {"gpn", e.gpus_per_node},
            {"node_names", e.node_names}, {"problem", e.scenario_problem}, {"pred", e.predicted_step_s},
            {"pred_tps", e.predicted_tokens_per_s}, {"pred_gpu", e.predicted_tokens_per_s_per_gpu},
            {"pred_mem", e.predicted_memory_gib}, {"cal", e.predicted_calibrated}, {"steps", e.achieved_steps},
            {"flagged", e.flagged}, {"flagged_nodes", e.flagged_nodes}, {"basis", e.suspect_basis},
            {"truncated", e.truncated}, {"fw", e.plan_framework}, {"fwv", e.plan_framework_version}};
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  j["achieved"] = opt(e.achieved_step_s);
  j["p10"] = opt(e.achieved_p10_s);
  j["p90"] = opt(e.achieved_p90_s);
  j["peak"] = opt(e.peak_memory_gib);
  j["scenario"] = e.scenario ? scenario_to_json(*e.scenario) : json(nullptr);
  j["layout"] = e.layout ? layout_to_json(*e.layout) : json(nullptr);
  if (e.oom)
    j["oom"] = {e.oom->kind, opt(e.oom->tried_gib), opt(e.oom->capacity_gib), opt(e.oom->free_gib),
                opt(e.oom->predicted_gib), e.oom->message};
  return j.dump();
}

struct Streamed {
  std::vector<std::string> entries;
  scan::StreamStats stats;
};

Streamed stream(const std::vector<LogText>& texts, const LogFilter& filter = {}, const ReadLimits& limits = {}) {
  std::vector<scan::StringSource> sources;
  for (const auto& t : texts) sources.emplace_back(t.name, t.content);
  std::vector<scan::ByteSource*> ptrs;
  for (auto& s : sources) ptrs.push_back(&s);
  Streamed out;
  out.stats = scan::stream_merged(ptrs, filter, [&](LogEntry& e) { out.entries.push_back(describe(e)); }, limits);
  return out;
}

std::string problems_text(const std::vector<SourcedProblem>& ps) {
  std::string out;
  for (const auto& p : ps) out += p.file + ":" + std::to_string(p.line) + ": " + p.message + "\n";
  return out;
}

std::string dropped_text(const std::vector<DroppedCopy>& ds) {
  std::string out;
  for (const auto& d : ds) out += d.job_id + " " + d.kept + " " + d.dropped + " " + d.why + "\n";
  return out;
}

// The streaming reader gives what merge_logs gives, filter applied to merge_logs' entries afterwards.
void expect_same(const std::vector<LogText>& texts, const LogFilter& filter = {}, const ReadLimits& limits = {}) {
  const MergedLog ref = merge_logs(texts, limits);
  std::vector<std::string> want;
  for (const auto& e : ref.entries)
    if (filter.matches(e)) want.push_back(describe(e));
  const Streamed got = stream(texts, filter, limits);
  ASSERT_EQ(got.entries.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got.entries[i], want[i]) << "entry " << i;
  EXPECT_EQ(got.stats.lines, ref.lines);
  EXPECT_EQ(got.stats.unreadable, ref.unreadable);
  EXPECT_EQ(got.stats.duplicates, ref.duplicates);
  EXPECT_EQ(got.stats.jobs, ref.entries.size());
  EXPECT_EQ(got.stats.selected, want.size());
  EXPECT_EQ(problems_text(got.stats.problems), problems_text(ref.problems));
  EXPECT_EQ(dropped_text(got.stats.dropped), dropped_text(ref.dropped));
  EXPECT_EQ(scan::merge_summary(got.stats), merge_summary(ref));
}

std::string copy_line(const std::string& id, long long time, bool achieved, const std::string& host = "n1") {
  json j = {{"job_id", id}, {"time", time}, {"user", "alice"}, {"partition", "p"}, {"host", host},
            {"predicted", {{"step_time_s", 1.0}}}};
  if (achieved) j["achieved"] = {{"median_step_time_s", 1.25}};
  return j.dump() + "\n";
}

}  // namespace

TEST(LogStream, SameAsMergeLogsOnASyntheticSite) {
  SiteTruth truth;
  truth.calibrated = true;
  const std::string log = synthetic_history(80, truth);
  ASSERT_GT(log.size(), 1000u);
  expect_same({{"tuning.jsonl", log}});
  // the same log split in two files with overlapping lines (a shipper that delivered some twice)
  const size_t half = log.find('\n', log.size() / 2) + 1;
  expect_same({{"node1/tuning.jsonl", log.substr(0, half + 2000 > log.size() ? half : log.find('\n', half + 2000) + 1)},
               {"node2/tuning.jsonl", log.substr(half)}});
}

TEST(LogStream, FiltersAreAppliedToTheChosenCopy) {
  const std::string log = synthetic_history(60);
  LogFilter since;
  since.since = 1735689600LL + 3600LL * 30;
  expect_same({{"t", log}}, since);
  LogFilter user;
  user.user = "alice";
  expect_same({{"t", log}}, user);
  LogFilter part;
  part.partition = "a100";
  expect_same({{"t", log}}, part);
  LogFilter none;
  none.user = "nobody";
  const Streamed s = stream({{"t", log}}, none);
  EXPECT_TRUE(s.entries.empty());
  EXPECT_EQ(s.stats.jobs, 60u);  // positive control: the jobs were read, the filter left none
}

TEST(LogStream, JobGpuFrameworkAndUntilFiltersAgreeWithTheReference) {
  // The published runs: several GPUs and frameworks (the framework is read from the scenario, which the first
  // pass keeps only as parsed_scenario).
  const std::string csv = std::string(PARATUNE_SOURCE_ROOT) + "/data/calibration/published/measurements.csv";
  const std::string log = published_history(csv) + synthetic_history(20);
  const MergedLog ref = merge_logs({{"t", log}});
  ASSERT_GT(ref.entries.size(), 40u);
  std::vector<LogFilter> filters(4);
  filters[0].until = ref.entries[ref.entries.size() / 2].time;
  filters[1].job_id = ref.entries[7].job_id;
  filters[2].gpu = "a100-sxm4-80gb";
  filters[3].framework = "fsdp";
  for (const auto& f : filters) {
    size_t n = 0;
    for (const auto& e : ref.entries) n += f.matches(e);
    EXPECT_GT(n, 0u);                    // the filter selects some entries
    EXPECT_LT(n, ref.entries.size());    // and leaves some out
    expect_same({{"t", log}}, f);
  }
}

TEST(LogStream, CopiesOfAJobChooseAsMergeLogsDoes) {
  // achieved figures win over a later copy without; the later of two equal copies wins; first read breaks ties
  const std::string a = copy_line("7", 100, false) + copy_line("8", 200, true) + copy_line("9", 300, true);
  const std::string b = copy_line("7", 90, true, "n2") + copy_line("8", 250, true, "n2") + copy_line("9", 300, true, "n2");
  expect_same({{"a", a}, {"b", b}});
  const Streamed s = stream({{"a", a}, {"b", b}});
  EXPECT_EQ(s.stats.duplicates, 3u);
  ASSERT_EQ(s.stats.dropped.size(), 3u);
  EXPECT_EQ(s.stats.dropped[0].why, "achieved figures");
  EXPECT_EQ(s.stats.dropped[1].why, "later end time");
  EXPECT_EQ(s.stats.dropped[2].why, "first read");
}

TEST(LogStream, BadLinesAreProblemsLikeTheReferenceReader) {
  const std::string deep = std::string(3000, '[') + std::string(3000, ']');
  std::string log;
  log += "not json\n";
  log += "[1,2]\n";
  log += "\n   \t\r\n";                                                      // blank: not counted
  log += R"({"job_id":"1","time":"2025-03-01T12:00:00+02:00","user":"u"})" "\n";  // ISO time with a zone
  log += R"({"job_id":"2","time":1e400})" "\n";                              // beyond double: absent
  log += R"({"job_id":"3","nodes":123456789012345678901234567890})" "\n";   // beyond 64 bits
  log += R"({"job_id":"4","plan":)" + deep + "}\n";                         // deeper than simdjson's limit
  log += R"({"job_id":"5","user":"first","user":"second"})" "\n";           // a duplicate key: the last wins
  log += R"({"job_id":"6","scenario":{"model":1},"plan":{"tp":"x"}})" "\n";  // kept without scenario and plan
  log += R"({"job_id":18446744073709551615,"time":12})" "\n";               // an unsigned id
  log += R"({"job_id":"7","s":"\ud800"})" "\n";                             // a lone surrogate
  log += R"({"job_id":"8"} trailing)" "\n";
  log += R"({"job_id":"9","node_list":"gpu[01-03,07]","achieved":{"tokens_per_s":5000,"tokens_per_step":10000}})";
  expect_same({{"t", log}});
  const Streamed s = stream({{"t", log}});
  EXPECT_GE(s.stats.unreadable, 3u);  // not json, [1,2], trailing (and whatever nlohmann refuses besides)
}

TEST(LogStream, LongLinesAreSkippedAndNumberedAcrossReadBuffers) {
  ReadLimits lim;
  lim.max_line_bytes = 64;
  const std::string longer_than_the_buffer(lim.max_line_bytes + (size_t(1) << 20) + 12345, 'x');
  const std::string log = copy_line("1", 1, true) + "{\"job_id\":\"2\",\"pad\":\"" + std::string(100, 'p') +
                          "\"}\n" + longer_than_the_buffer + "\n" + std::string(2 << 20, ' ') + "\n" +
                          copy_line("3", 3, true) + copy_line("4", 4, true).substr(0, 40);
  expect_same({{"t", log}}, {}, lim);
  const Streamed s = stream({{"t", log}}, {}, lim);
  // line 2 (over 64 bytes) and line 3 (over the buffer) are problems; line 4 (blank, 2 MiB) is not counted
  ASSERT_GE(s.stats.problems.size(), 3u);
  EXPECT_EQ(s.stats.problems[0].line, 1u);  // copy_line is longer than 64 bytes too
  EXPECT_EQ(s.stats.problems[1].line, 2u);
  EXPECT_EQ(s.stats.problems[2].line, 3u);
  EXPECT_EQ(s.stats.lines, 5u);
}

TEST(LogStream, ManyProblemsAreCappedPerFile) {
  std::string log;
  for (int i = 0; i < 30; ++i) log += "bad " + std::to_string(i) + "\n";
  ReadLimits lim;
  lim.max_problems = 10;
  expect_same({{"a", log}, {"b", log}}, {}, lim);
}

// Job ids are unique only within one Slurm cluster (docs/tuning-log.md "Shipping lines"): lines that carry
// "cluster" are one job per (cluster, id), in the streamed reader and the reference merge alike; copies within a
// cluster still merge, and lines without it merge by id as before (control).
TEST(LogStream, TheSameJobIdOnTwoClustersIsTwoJobs) {
  const auto on = [](const std::string& cluster, const std::string& id, long long time) {
    return R"({"job_id":")" + id + R"(","time":)" + std::to_string(time) + R"(,"cluster":")" + cluster +
           R"(","user":"u","achieved":{"median_step_time_s":2.0}})" "\n";
  };
  const std::string a = on("east", "17", 100) + on("west", "17", 200) + on("east", "17", 100);
  expect_same({{"a", a}});
  const Streamed s = stream({{"a", a}});
  EXPECT_EQ(s.stats.duplicates, 1u) << "east's two copies merge; west's job is its own";
  EXPECT_EQ(merge_logs({{"a", a}}).entries.size(), 2u);
  const std::string plain = R"({"job_id":"17","time":100})" "\n" R"({"job_id":"17","time":200})" "\n";
  EXPECT_EQ(merge_logs({{"p", plain}}).entries.size(), 1u) << "control: no cluster, one job per id";
}
