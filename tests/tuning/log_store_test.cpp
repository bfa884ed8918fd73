// The history store (tuning/scan/log_store.h) against the streaming reader: on the same files and filter, a
// query of a current store gives the same entries in the same order, the same problems, dropped copies and
// counts; a store that no longer matches the files (a line appended, another file list, no store) is not used.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "history.h"
#include "paratune/tuning/log_merge.h"
#include "paratune/tuning/scan/log_store.h"
#include "paratune/tuning/scan/log_stream.h"
#include "paratune/tuning/scenario_json.h"

using namespace paratune::tuning;
using namespace paratune::tuning::testing;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string describe(const LogEntry& e) {
  json j = {{"file", e.file}, {"line", e.line}, {"job", e.job_id}, {"time", e.time}, {"user", e.user},
            {"partition", e.partition}, {"host", e.host}, {"gpu", e.gpu_model}, {"report", e.report},
            {"nodes", e.node_names}, {"problem", e.scenario_problem}, {"pred", e.predicted_step_s},
            {"flagged", e.flagged}, {"fw", e.framework()}};
  j["achieved"] = e.achieved_step_s ? json(*e.achieved_step_s) : json(nullptr);
  j["scenario"] = e.scenario ? scenario_to_json(*e.scenario) : json(nullptr);
  j["layout"] = e.layout ? layout_to_json(*e.layout) : json(nullptr);
  return j.dump();
}

struct Read {
  std::vector<std::string> entries;
  std::string first_pass;  // problems, dropped copies and counts as after_first_pass saw them
  size_t selected = 0, jobs = 0;
};

std::string first_pass_text(const scan::StreamStats& s) {
  std::string out = scan::merge_summary(s) + "\n";
  for (const auto& p : s.problems) out += p.file + ":" + std::to_string(p.line) + ": " + p.message + "\n";
  for (const auto& d : s.dropped) out += d.job_id + " " + d.kept + " " + d.dropped + " " + d.why + "\n";
  out += std::to_string(s.unreadable) + " unreadable\n";
  return out;
}

class LogStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("paratune-store-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    store_ = (dir_ / "tuning-index.sqlite").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p.string(), std::ios::binary) << text;
    return p.string();
  }
  // The files opened afresh (their stamps as they are now).
  std::vector<std::unique_ptr<scan::FileSource>> open(const std::vector<std::string>& paths) {
    std::vector<std::unique_ptr<scan::FileSource>> out;
    for (const auto& p : paths) out.push_back(std::make_unique<scan::FileSource>(p));
    return out;
  }
  static std::vector<scan::FileSource*> raw(const std::vector<std::unique_ptr<scan::FileSource>>& v) {
    std::vector<scan::FileSource*> out;
    for (const auto& f : v) out.push_back(f.get());
    return out;
  }
  Read streamed(const std::vector<std::string>& paths, const LogFilter& f) {
    auto files = open(paths);
    std::vector<scan::ByteSource*> src;
    for (auto& x : files) src.push_back(x.get());
    Read r;
    const auto st = scan::stream_merged(src, f, [&](LogEntry& e) { r.entries.push_back(describe(e)); }, {},
                                        [&](const scan::StreamStats& s) { r.first_pass = first_pass_text(s); });
    r.selected = st.selected;
    r.jobs = st.jobs;
    return r;
  }
  Read queried(const std::vector<std::string>& paths, const LogFilter& f) {
    auto files = open(paths);
    std::string why;
    auto store = scan::LogStore::open_current(store_, raw(files), &why);
    EXPECT_TRUE(store) << why;
    Read r;
    if (!store) return r;
    const auto st = store->query(f, [&](LogEntry& e) { r.entries.push_back(describe(e)); },
                                 [&](const scan::StreamStats& s) { r.first_pass = first_pass_text(s); });
    r.selected = st.selected;
    r.jobs = st.jobs;
    return r;
  }
  // Three files: a synthetic site split in two with overlapping lines (copies of the same jobs), and the
  // published runs (several frameworks and GPUs) with bad lines among them.
  std::vector<std::string> site() {
    const std::string log = synthetic_history(80);
    const size_t half = log.find('\n', log.size() / 2) + 1;
    const std::string csv = std::string(PARATUNE_SOURCE_ROOT) + "/data/calibration/published/measurements.csv";
    const std::string published = "not json\n[1,2]\n" + published_history(csv) +
                                  R"({"job_id":"x1","user":"first","user":"second"})" "\n";
    return {write("node1/tuning.jsonl", log.substr(0, log.find('\n', half + 2000) + 1)),
            write("node2/tuning.jsonl", log.substr(half)), write("published.jsonl", published)};
  }
  fs::path dir_;
  std::string store_;
};

}  // namespace

TEST_F(LogStoreTest, QueriesGiveWhatStreamingGives) {
  const auto files = site();
  {
    auto opened = open(files);
    const scan::RebuildResult r = scan::rebuild_store(store_, raw(opened));
    ASSERT_GT(r.rows, 80u);
    EXPECT_EQ(r.rows, r.stats.jobs);
    EXPECT_GT(r.stats.duplicates, 0u);  // the overlap: the merge had copies to choose between
  }
  std::vector<std::pair<std::string, LogFilter>> filters(1);
  filters[0].first = "everything";
  auto add = [&](std::string name, auto set) {
    LogFilter f;
    set(f);
    filters.emplace_back(std::move(name), f);
  };
  add("since", [](LogFilter& f) { f.since = 1735689600LL + 3600LL * 30; });
  add("until", [](LogFilter& f) { f.until = 1735689600LL + 3600LL * 50; });
  add("user", [](LogFilter& f) { f.user = "alice"; });
  add("partition", [](LogFilter& f) { f.partition = "a100"; });
  add("job", [](LogFilter& f) { f.job_id = "x1"; });
  add("gpu", [](LogFilter& f) { f.gpu = "h100-sxm5-80gb"; });
  add("framework", [](LogFilter& f) { f.framework = "fsdp"; });
  add("framework and since", [](LogFilter& f) {
    f.framework = "megatron";
    f.since = 1735689600LL + 3600LL * 30;
  });
  add("nobody", [](LogFilter& f) { f.user = "nobody"; });
  size_t narrowed = 0;
  for (const auto& [name, f] : filters) {
    SCOPED_TRACE(name);
    const Read s = streamed(files, f), q = queried(files, f);
    ASSERT_EQ(q.entries.size(), s.entries.size());
    for (size_t i = 0; i < s.entries.size(); ++i) EXPECT_EQ(q.entries[i], s.entries[i]) << "entry " << i;
    EXPECT_EQ(q.first_pass, s.first_pass);
    EXPECT_EQ(q.selected, s.selected);
    EXPECT_EQ(q.jobs, s.jobs);
    if (name != "everything" && name != "nobody") {
      EXPECT_GT(s.selected, 0u) << "the filter matches some jobs";
      narrowed += s.selected < s.jobs;
    }
  }
  EXPECT_EQ(narrowed, filters.size() - 2) << "every filter but 'everything' left some jobs out";
  EXPECT_EQ(streamed(files, filters.back().second).selected, 0u);
  EXPECT_NE(streamed(files, {}).first_pass.find("not a JSON object"), std::string::npos);  // problems were there
}

TEST_F(LogStoreTest, AStoreThatNoLongerMatchesTheFilesIsNotUsed) {
  const std::string a = write("tuning.jsonl", synthetic_history(10));
  const std::string b = write("tuning.jsonl.1", synthetic_history(5, {}, 9));
  std::string why;
  {
    auto files = open({a, b});
    EXPECT_FALSE(scan::LogStore::open_current(store_, raw(files), &why));
    EXPECT_NE(why.find("no index at"), std::string::npos) << why;
    scan::rebuild_store(store_, raw(files));
    EXPECT_TRUE(scan::LogStore::open_current(store_, raw(files), &why)) << why;  // positive control
  }
  {
    auto fewer = open({a});
    EXPECT_FALSE(scan::LogStore::open_current(store_, raw(fewer), &why));
    EXPECT_NE(why.find("stale"), std::string::npos) << why;
    auto swapped = open({b, a});
    EXPECT_FALSE(scan::LogStore::open_current(store_, raw(swapped), &why));
    EXPECT_NE(why.find("another file"), std::string::npos) << why;
  }
  std::ofstream(a, std::ios::app) << synthetic_history(1, {}, 11);
  {
    auto files = open({a, b});
    EXPECT_FALSE(scan::LogStore::open_current(store_, raw(files), &why));
    EXPECT_NE(why.find("changed since"), std::string::npos) << why;
    scan::rebuild_store(store_, raw(files));
    EXPECT_TRUE(scan::LogStore::open_current(store_, raw(files), &why)) << why;
  }
  write("tuning-index.sqlite", "not an sqlite file at all, but long enough to have a header of some kind........");
  auto files = open({a, b});
  EXPECT_FALSE(scan::LogStore::open_current(store_, raw(files), &why));
  EXPECT_FALSE(why.empty());
}

TEST(LogStorePath, BesideTheFirstLogOrInItsDirectory) {
  EXPECT_EQ(scan::default_store_path({"/var/log/paratune/tuning.jsonl"}), "/var/log/paratune/tuning-index.sqlite");
  EXPECT_EQ(scan::default_store_path({"tuning.jsonl"}), "./tuning-index.sqlite");
  EXPECT_EQ(scan::default_store_path({fs::temp_directory_path().string()}),
            (fs::temp_directory_path() / "tuning-index.sqlite").string());
}
