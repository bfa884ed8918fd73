// The tuning log's per-job index (plugin/job/tuning_index.h) as the writer makes it and `paratune summary` reads
// it (tuning/scan/job_index.h): found by marker, followed into a rotated file by inode, never trusted when it
// points at the wrong line; the bounded backwards scan when there is no marker. And the complete example line of
// docs/tuning-log.md, made here by the writer's own functions.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "paratune/planner/decision.h"
#include "paratune/planner/option_spec.h"
#include "paratune/common/safe_file.h"
#include "job/tuning_index.h"
#include "job/tuning_record.h"
#include "paratune/advisor/advisor.h"
#include "paratune/advisor/framework_args.h"
#include "paratune/tuning/calibrate.h"
#include "paratune/tuning/report.h"
#include "paratune/tuning/scan/job_index.h"
#include "paratune/tuning/tuning_log.h"

namespace fs = std::filesystem;
using namespace paratune;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A complete line as the plugin writes it at job end: the decision's record (a real plan), the environment it
// injected, the job's identity, the report's achieved figures.
std::string plugin_line(const std::string& job_id, long long end_time, double achieved_ratio) {
  advisor::Scenario s;
  s.model = advisor::model_preset("llama3-8b");
  s.training.global_batch = 128;
  s.cluster.gpu = "h100-sxm5-80gb";
  s.cluster.nodes = 2;
  s.cluster.gpus_per_node = 8;
  s.cluster.nvlink_domain = 8;
  s.cluster.nic_count = 8;
  s.cluster.nic_gbps = 400;
  s.cluster.fabric = advisor::Fabric::InfiniBand;
  s.cluster.gpu_nic_path = "PIX";
  advisor::SearchLimits lim;
  lim.top_n = 1;
  planner::Decision d;
  d.plan = advisor::advise(s, lim);
  s.training.framework = d.plan.framework;
  d.scenario = s;
  d.args = advisor::framework_args(d.scenario, d.plan, d.launch);  // as decide() makes them
  d.fingerprint = "7f3a9c2e41d05b86";
  d.notes = {"2 nodes x 8 GPUs, NVLink domain 8"};
  job::JobIdentity who;
  who.job_id = job_id;
  who.step_id = "batch";
  who.user = "alice";
  who.uid = 1000;
  who.gid = 1000;
  who.partition = "h100";
  who.hostname = "gpu001";
  who.nodes = 2;
  who.gpus_on_node = 8;
  who.nodelist = "gpu[001-002]";
  who.state = "completed";
  planner::EnvOutcome env;
  // Where the plugin puts a job's plan files: paratune-<jobid>/ in the submit directory (decision_child.cpp).
  env.set = planner::decision_env(d, "/home/alice/run/paratune-" + job_id + "/plan.json",
                                  "/home/alice/run/paratune-" + job_id + "/report.jsonl");
  auto record = job::tuning_record(who, planner::parse_option_spec("llama3-8b"), d, env, end_time);
  record["node_checks"] = {{"checked", 2}, {"mismatch", nlohmann::json::array()},
                           {"plan_unreadable", nlohmann::json::array()}};
  tuning::ReportSummary r;
  r.valid = true;
  const double step = d.plan.prediction.step_time_s / achieved_ratio;
  r.step_time = {step, step * 0.98, step * 1.03, 190};
  r.samples = 200;
  r.warmup_excluded = 10;
  tuning::add_achieved(record, r, tuning::SuspectRule{}, {"gpu001", "gpu002"});
  return job::tuning_line_text(std::move(record));
}

class Index : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "the index directories are root's (the writer runs as root in slurmstepd)";
    dir_ = fs::temp_directory_path() / ("paratune-index-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::permissions(dir_, fs::perms(0755));
    fd_ = common::UniqueFd(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY));
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  // Appends the job's line as the plugin does and indexes it; the writer's problem ("" when indexed).
  std::string write(const std::string& id, long long t, double ratio = 0.8) {
    const std::string line = plugin_line(id, t, ratio);
    common::append_line(fd_.get(), "tuning.jsonl", line, 0640);
    return job::index_tuning_line(dir_.string(), fd_.get(), "tuning.jsonl", id, line, 0640, -1);
  }
  std::string log() const { return (dir_ / "tuning.jsonl").string(); }
  fs::path dir_;
  common::UniqueFd fd_;
};

}  // namespace

TEST_F(Index, TheWriterIndexesEachLineAndSummaryReadsItThere) {
  for (int i = 0; i < 20; ++i) ASSERT_EQ(write(std::to_string(4200 + i), 1735689600 + i), "");
  const fs::path marker = dir_ / job::index_marker_path("tuning.jsonl", "4207");
  ASSERT_TRUE(fs::exists(marker)) << marker;
  EXPECT_EQ(fs::status(marker).permissions() & fs::perms::all, fs::perms(0640));  // the log's mode
  const auto m = nlohmann::json::parse(slurp(marker));
  const std::string text = slurp(log());
  const std::string at = text.substr(m["offset"].get<size_t>(), m["length"].get<size_t>());
  EXPECT_EQ(nlohmann::json::parse(at)["job_id"], "4207");
  const auto found = tuning::scan::find_job({log()}, "4207");
  ASSERT_TRUE(found.entry);
  EXPECT_EQ(found.entry->job_id, "4207");
  EXPECT_EQ(found.how.rfind("index: ", 0), 0u) << found.how;
}

TEST_F(Index, ARotatedLineIsFoundThroughTheInode) {
  ASSERT_EQ(write("501", 1000), "");
  ASSERT_EQ(write("502", 2000), "");
  fs::rename(dir_ / "tuning.jsonl", dir_ / "tuning.jsonl-20250301");  // logrotate: rename, no copy
  ASSERT_EQ(write("503", 3000), "");
  // --log names only the live file: the marker's inode is the rotated one, beside it
  const auto found = tuning::scan::find_job({log()}, "502");
  ASSERT_TRUE(found.entry);
  EXPECT_NE(found.how.find("tuning.jsonl-20250301"), std::string::npos) << found.how;
  EXPECT_TRUE(tuning::scan::find_job({log()}, "503").entry);
}

TEST_F(Index, AMarkerThatPointsAtAnotherLineIsNotBelieved) {
  ASSERT_EQ(write("601", 1000), "");
  ASSERT_EQ(write("602", 2000), "");
  // Make 602's marker point at 601's line: the reader checks the job id, then scans.
  const fs::path m601 = dir_ / job::index_marker_path("tuning.jsonl", "601");
  const fs::path m602 = dir_ / job::index_marker_path("tuning.jsonl", "602");
  fs::copy_file(m601, m602, fs::copy_options::overwrite_existing);
  const auto found = tuning::scan::find_job({log()}, "602");
  ASSERT_TRUE(found.entry);
  EXPECT_EQ(found.entry->job_id, "602");
  EXPECT_EQ(found.how.rfind("scan: ", 0), 0u) << found.how;
  // a marker that is not JSON: a problem, and the scan still answers
  std::ofstream(m602) << "garbage";
  const auto again = tuning::scan::find_job({log()}, "602");
  ASSERT_TRUE(again.entry);
  EXPECT_FALSE(again.problems.empty());
}

TEST_F(Index, WithoutAMarkerTheScanIsBounded) {
  for (int i = 0; i < 50; ++i) ASSERT_EQ(write(std::to_string(700 + i), 1000 + i), "");
  fs::remove_all(dir_ / "tuning.jsonl.index");
  const auto all = tuning::scan::find_job({log()}, "700");
  ASSERT_TRUE(all.entry);  // positive control: the first line, found by reading everything
  EXPECT_TRUE(all.scanned_everything);
  const auto bounded = tuning::scan::find_job({log()}, "700", 8192);  // the first line is further back
  EXPECT_FALSE(bounded.entry);
  EXPECT_FALSE(bounded.scanned_everything);
  EXPECT_TRUE(tuning::scan::find_job({log()}, "749", 8192).entry);  // the last one is within reach
}

TEST_F(Index, OnlySlurmJobIdsAreIndexed) {
  const std::string line = plugin_line("1", 1, 0.8);
  common::append_line(fd_.get(), "tuning.jsonl", line, 0640);
  EXPECT_NE(job::index_tuning_line(dir_.string(), fd_.get(), "tuning.jsonl", "../../etc/x", line, 0640, -1), "");
  EXPECT_FALSE(fs::exists(dir_ / "tuning.jsonl.index"));
  EXPECT_EQ(job::index_tuning_line(dir_.string(), fd_.get(), "tuning.jsonl", "1", line, 0640, -1), "");
}

// The keys of a JSON value, recursively ("achieved.median_step_time_s", "env_set.NCCL_NET_GDR_LEVEL", ...).
void key_paths(const nlohmann::json& j, const std::string& at, std::set<std::string>* out) {
  if (!j.is_object()) return;
  for (auto it = j.begin(); it != j.end(); ++it) {
    out->insert(at + it.key());
    key_paths(*it, at + it.key() + ".", out);
  }
}

// docs/tuning-log.md shows one complete line: this one, made by the writer's functions. PARATUNE_UPDATE_DOCS=1
// rewrites it there. Otherwise the page's line must have exactly the fields the writer writes (the values follow
// the model, which is refitted: they are the writer's at the time the page was last regenerated).
TEST(TuningLogDoc, TheExampleLineIsWhatThePluginWrites) {
  const std::string line = plugin_line("4242", 1740830400, 0.8);
  const auto log = tuning::read_tuning_log(line + "\n");
  ASSERT_EQ(log.entries.size(), 1u);
  EXPECT_TRUE(log.problems.empty());
  const auto& e = log.entries.front();
  EXPECT_TRUE(e.scenario && e.layout && e.achieved_step_s && e.ratio());
  tuning::SkipTally skipped;
  EXPECT_EQ(tuning::usable_samples(log.entries, {}, &skipped).size(), 1u) << tuning::skipped_summary(skipped);
  const fs::path doc = fs::path(PARATUNE_SOURCE_ROOT) / "docs/tuning-log.md";
  std::string text = slurp(doc);
  const std::string begin = "<!-- example line: tests/plugin/tuning_index_test.cpp -->\n```json\n", end = "```\n";
  const size_t a = text.find(begin);
  ASSERT_NE(a, std::string::npos) << "docs/tuning-log.md has no example line marker";
  const size_t from = a + begin.size(), b = text.find(end, from);
  ASSERT_NE(b, std::string::npos);
  if (std::getenv("PARATUNE_UPDATE_DOCS")) {
    text.replace(from, b - from, line + "\n");
    std::ofstream(doc, std::ios::trunc) << text;
    return;
  }
  const std::string shown = text.substr(from, b - from);
  const auto shown_json = nlohmann::json::parse(shown, nullptr, false);
  ASSERT_FALSE(shown_json.is_discarded()) << "the page's example is not one JSON line; PARATUNE_UPDATE_DOCS=1 "
                                             "tuning_index_tests --gtest_filter=TuningLogDoc.* regenerates it";
  std::set<std::string> want, have;
  key_paths(nlohmann::json::parse(line), "", &want);
  key_paths(shown_json, "", &have);
  EXPECT_EQ(have, want) << "regenerate: PARATUNE_UPDATE_DOCS=1 tuning_index_tests --gtest_filter=TuningLogDoc.*";
  EXPECT_EQ(std::count(shown.begin(), shown.end(), '\n'), 1) << "one line";
}
