// The history store (tuning/scan/log_store.h) against the streaming reader: on the same files and filter, a
// query of a current store gives the same entries in the same order, the same problems, dropped copies and
// counts; a store that no longer matches the files (a line appended, another file list, no store) is not used.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "history.h"
#include "test_util.h"
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
  size_t selected = 0, jobs = 0, duplicates = 0;
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
    r.duplicates = st.duplicates;
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
    r.duplicates = st.duplicates;
    return r;
  }
  // Each filter the store answers (an empty one, each field, two together, one that matches nobody).
  static std::vector<std::pair<std::string, LogFilter>> every_filter() {
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
    return filters;
  }
  // The store's answers to every filter are the streaming reader's; returns how many filters (other than
  // "everything" and "nobody") selected some jobs but not all.
  size_t expect_same_answers(const std::vector<std::string>& files) {
    size_t narrowed = 0;
    for (const auto& [name, f] : every_filter()) {
      SCOPED_TRACE(name);
      const Read s = streamed(files, f), q = queried(files, f);
      EXPECT_EQ(q.entries.size(), s.entries.size());
      for (size_t i = 0; i < s.entries.size() && i < q.entries.size(); ++i)
        EXPECT_EQ(q.entries[i], s.entries[i]) << "entry " << i;
      EXPECT_EQ(q.first_pass, s.first_pass);
      EXPECT_EQ(q.selected, s.selected);
      EXPECT_EQ(q.jobs, s.jobs);
      if (name != "everything" && name != "nobody" && s.selected > 0) narrowed += s.selected < s.jobs;
    }
    return narrowed;
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
  const auto filters = every_filter();
  const size_t narrowed = expect_same_answers(files);
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

namespace {

// A hand-made line: a job, its end time and user, with or without achieved figures.
std::string line(const std::string& job, long long time, const std::string& user, bool achieved = true) {
  json j = {{"job_id", job}, {"time", time}, {"user", user}, {"partition", "p"}};
  if (achieved) j["achieved"] = {{"median_step_time_s", 1.5}};
  return j.dump() + "\n";
}

std::vector<std::string> job_ids(const std::vector<std::string>& described) {
  std::vector<std::string> out;
  for (const auto& d : described) out.push_back(json::parse(d)["job"].get<std::string>());
  return out;
}

}  // namespace

TEST_F(LogStoreTest, LinesAppendedToTheLastFileAreCaughtUpWithExactlyTheNewJobs) {
  const auto files = site();
  size_t jobs_before = 0, dups_before = 0;
  {
    auto opened = open(files);
    const auto r = scan::rebuild_store(store_, raw(opened));
    jobs_before = r.rows;
    dups_before = r.stats.duplicates;
  }
  LogFilter late;
  late.user = "late";
  {
    auto opened = open(files);
    auto s = scan::update_store(store_, raw(opened));
    EXPECT_EQ(s.kind, scan::UpdateResult::Kind::kCurrent);  // control: nothing appended, nothing done
    EXPECT_EQ(s.lines, 0u);
    EXPECT_EQ(queried(files, late).selected, 0u);
  }
  const std::string published = files.back();
  const size_t lines_before = count(slurp(published), "\n");
  // Five new jobs of user "late" (end times not in order), a copy of the published file's first job with a
  // later end time (it replaces the older copy: "later end time"), a line that is not JSON, a blank line.
  const std::string appended = line("late-3", 1900000300, "late") + line("late-1", 1900000100, "late") +
                         line("late-2", 1900000200, "late") + "not json\n" + "\n" +
                         line("late-5", 1900000500, "late") + line("late-4", 1900000400, "late") +
                         line("x1", 1900000600, "again");
  std::ofstream(published, std::ios::app) << appended;
  {
    auto opened = open(files);
    std::string why;
    EXPECT_FALSE(scan::LogStore::open_current(store_, raw(opened), &why));  // behind: not used as it is
    const auto u = scan::update_store(store_, raw(opened));
    EXPECT_EQ(u.kind, scan::UpdateResult::Kind::kCaughtUp) << u.why;
    EXPECT_EQ(u.lines, 7u);  // the non-blank lines appended
    EXPECT_EQ(u.files_grown, 1u);
    EXPECT_EQ(u.jobs, jobs_before + 5);  // x1 was there already
    EXPECT_TRUE(scan::LogStore::open_current(store_, raw(opened), &why)) << why;
  }
  const Read q = queried(files, late);
  EXPECT_EQ(job_ids(q.entries), (std::vector<std::string>{"late-1", "late-2", "late-3", "late-4", "late-5"}));
  // The bad line is reported at its own line number, the copy of x1 counted as a duplicate.
  EXPECT_NE(q.first_pass.find(published + ":" + std::to_string(lines_before + 4) + ": not valid JSON"),
            std::string::npos) << q.first_pass;
  EXPECT_EQ(q.jobs, jobs_before + 5);
  LogFilter again;
  again.user = "again";
  const Read x1 = queried(files, again);
  EXPECT_EQ(job_ids(x1.entries), std::vector<std::string>{"x1"});
  EXPECT_EQ(x1.duplicates, dups_before + 1);
  expect_same_answers(files);
  EXPECT_GT(dups_before, 0u);
}

// The merge reads file by file: a line appended to a file read before another that holds a copy of the same job
// is compared with that copy as a rebuild would (it is read first), and jobs of the same end time keep the order
// of their first copy.
TEST_F(LogStoreTest, LinesAppendedToAnEarlierFileAreMergedInReadOrder) {
  const std::string a = write("tuning.jsonl", line("1", 100, "u") + line("2", 200, "u", false));
  const std::string b = write("tuning.jsonl.1", line("2", 200, "u") + line("3", 100, "v"));
  {
    auto opened = open({a, b});
    scan::rebuild_store(store_, raw(opened));
  }
  EXPECT_EQ(job_ids(queried({a, b}, {}).entries), (std::vector<std::string>{"1", "3", "2"}));
  // A copy of job 3 as complete as b's (a tie: the copy read first wins, now a's), then a new job 4 at the same
  // end time.
  std::ofstream(a, std::ios::app) << line("3", 100, "w") << line("4", 100, "u");
  {
    auto opened = open({a, b});
    const auto u = scan::update_store(store_, raw(opened));
    EXPECT_EQ(u.kind, scan::UpdateResult::Kind::kCaughtUp) << u.why;
    EXPECT_EQ(u.lines, 2u);
  }
  const Read q = queried({a, b}, {});
  // Job 3 is first read in a (line 3), before job 4 (line 4): 1, 3, 4 at time 100, then 2.
  EXPECT_EQ(job_ids(q.entries), (std::vector<std::string>{"1", "3", "4", "2"}));
  EXPECT_EQ(json::parse(q.entries[1])["user"], "w");
  EXPECT_NE(q.first_pass.find("3 " + a + ":3 " + b + ":2 first read"), std::string::npos) << q.first_pass;
  EXPECT_NE(q.first_pass.find("2 " + b + ":1 " + a + ":2"), std::string::npos) << q.first_pass;  // unchanged
  expect_same_answers({a, b});
}

TEST_F(LogStoreTest, ARotatedTruncatedOrRewrittenFileRebuildsTheStore) {
  const std::string a = write("tuning.jsonl", synthetic_history(6));
  const std::string b = write("tuning.jsonl.1", synthetic_history(4, {}, 9));
  auto update = [&](const std::vector<std::string>& files) {
    auto opened = open(files);
    return scan::update_store(store_, raw(opened));
  };
  auto rebuilt_because = [&](const std::vector<std::string>& files, const std::string& why) {
    SCOPED_TRACE(why);
    const auto u = update(files);
    EXPECT_EQ(u.kind, scan::UpdateResult::Kind::kRebuilt);
    EXPECT_NE(u.why.find(why), std::string::npos) << u.why;
    expect_same_answers(files);
    EXPECT_EQ(update(files).kind, scan::UpdateResult::Kind::kCurrent);  // and then current
  };
  rebuilt_because({a, b}, "no index at");
  // Truncated (copytruncate): fewer bytes than were indexed.
  write("tuning.jsonl", synthetic_history(2));
  rebuilt_because({a, b}, "truncated");
  // Rotated: the file renamed away, a new one at its name (another inode).
  fs::rename(a, a + ".old");
  write("tuning.jsonl", line("9", 100, "u"));
  rebuilt_because({a, b}, "replaced");
  // Rewritten in place to a longer text: the bytes indexed are not there any more.
  std::string text = slurp(a);
  text[text.find("\"u\"") + 1] = 'z';
  write("tuning.jsonl", text + line("10", 200, "u"));
  rebuilt_because({a, b}, "not there any more");
  // The same size, modified: not an append.
  text = slurp(a);
  text[text.find("\"z\"") + 1] = 'y';
  write("tuning.jsonl", text);
  fs::last_write_time(a, fs::last_write_time(a) + std::chrono::seconds(5));
  rebuilt_because({a, b}, "rewritten");
  // Another list of files.
  rebuilt_because({a}, "not these");
  // A last line being written (no newline yet), then completed: the store read half a line, so it rebuilds.
  std::ofstream(a, std::ios::app) << R"({"job_id":"11","time":300,"us)";
  EXPECT_EQ(update({a}).kind, scan::UpdateResult::Kind::kCaughtUp);
  std::ofstream(a, std::ios::app) << R"(er":"u"})" << "\n";
  rebuilt_because({a}, "incomplete");
  // Positive control: an append after a complete line is caught up.
  std::ofstream(a, std::ios::app) << line("12", 400, "u");
  EXPECT_EQ(update({a}).kind, scan::UpdateResult::Kind::kCaughtUp);
  expect_same_answers({a});
}

// Past the listing limit (1000 problems per file), the problems appended are counted in the file's last message,
// at the file's last line, as the merge counts them.
TEST_F(LogStoreTest, ProblemsBeyondTheListingLimitAreCountedAcrossCatchUps) {
  std::string text = line("1", 100, "u");
  for (int i = 0; i < 1003; ++i) text += "not json " + std::to_string(i) + "\n";
  const std::string a = write("tuning.jsonl", text);
  {
    auto opened = open({a});
    scan::rebuild_store(store_, raw(opened));
  }
  EXPECT_NE(queried({a}, {}).first_pass.find(a + ":1004: 3 further problems not listed"), std::string::npos);
  std::ofstream(a, std::ios::app) << "bad\n" << line("2", 200, "u") << "\n" << "bad again\n";
  {
    auto opened = open({a});
    EXPECT_EQ(scan::update_store(store_, raw(opened)).kind, scan::UpdateResult::Kind::kCaughtUp);
  }
  const Read q = queried({a}, {});
  EXPECT_NE(q.first_pass.find(a + ":1008: 5 further problems not listed"), std::string::npos) << q.first_pass;
  EXPECT_EQ(q.first_pass.find("3 further problems"), std::string::npos);
  EXPECT_EQ(job_ids(q.entries), (std::vector<std::string>{"1", "2"}));
  expect_same_answers({a});
}

// A reader that opened the files before another appended and caught the store up sees the store ahead of its
// view: nothing is written (no rebuild of a store that is right), and it is told to open the files again.
TEST_F(LogStoreTest, AReaderWithAnOlderViewLeavesAStoreThatIsAheadAlone) {
  const std::string a = write("tuning.jsonl", line("1", 100, "u"));
  {
    auto opened = open({a});
    scan::rebuild_store(store_, raw(opened));
  }
  std::ofstream(a, std::ios::app) << line("2", 200, "u");
  auto older = open({a});
  std::ofstream(a, std::ios::app) << line("3", 300, "u");
  auto newer = open({a});
  const auto caught = scan::update_store(store_, raw(newer));
  EXPECT_EQ(caught.kind, scan::UpdateResult::Kind::kCaughtUp);
  EXPECT_EQ(caught.lines, 2u);
  const auto ahead = scan::update_store(store_, raw(older));
  EXPECT_EQ(ahead.kind, scan::UpdateResult::Kind::kAhead) << ahead.why;
  std::string why;
  EXPECT_TRUE(scan::LogStore::open_current(store_, raw(newer), &why)) << why;  // as the newer reader left it
  EXPECT_EQ(job_ids(queried({a}, {}).entries), (std::vector<std::string>{"1", "2", "3"}));
  // Control: a file that is now shorter than the store read is truncated, whoever looks.
  write("tuning.jsonl", line("1", 100, "u"));
  const auto truncated = scan::update_store(store_, raw(older));
  EXPECT_EQ(truncated.kind, scan::UpdateResult::Kind::kRebuilt);
  EXPECT_NE(truncated.why.find("truncated"), std::string::npos) << truncated.why;
}

TEST_F(LogStoreTest, OneWriterAtATime) {
  const std::string a = write("tuning.jsonl", synthetic_history(6));
  {
    auto opened = open({a});
    scan::rebuild_store(store_, raw(opened));
  }
  std::ofstream(a, std::ios::app) << line("new", 100, "u");
  {
    // Another writer holds the lock: this one waits, then gives up naming it; the store is as it was.
    const int fd = ::open((store_ + ".lock").c_str(), O_RDWR | O_CREAT, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::flock(fd, LOCK_EX), 0);
    auto opened = open({a});
    try {
      scan::update_store(store_, raw(opened), 200);
      ADD_FAILURE() << "updated while another writer held the lock";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("held by another process"), std::string::npos) << e.what();
    }
    std::string why;
    EXPECT_FALSE(scan::LogStore::open_current(store_, raw(opened), &why));
    ::close(fd);
  }
  // Two at once: one catches up, the other finds it current.
  std::vector<scan::UpdateResult::Kind> kinds(2);
  auto opened1 = open({a}), opened2 = open({a});
  std::thread t1([&] { kinds[0] = scan::update_store(store_, raw(opened1)).kind; });
  std::thread t2([&] { kinds[1] = scan::update_store(store_, raw(opened2)).kind; });
  t1.join();
  t2.join();
  std::sort(kinds.begin(), kinds.end());
  EXPECT_EQ(kinds, (std::vector<scan::UpdateResult::Kind>{scan::UpdateResult::Kind::kCurrent,
                                                          scan::UpdateResult::Kind::kCaughtUp}));
  expect_same_answers({a});
}

TEST(LogStorePath, BesideTheFirstLogOrInItsDirectory) {
  EXPECT_EQ(scan::default_store_path({"/var/log/paratune/tuning.jsonl"}), "/var/log/paratune/tuning-index.sqlite");
  EXPECT_EQ(scan::default_store_path({"tuning.jsonl"}), "./tuning-index.sqlite");
  EXPECT_EQ(scan::default_store_path({fs::temp_directory_path().string()}),
            (fs::temp_directory_path() / "tuning-index.sqlite").string());
}
