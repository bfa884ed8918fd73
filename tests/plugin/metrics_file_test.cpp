// The node_exporter textfile (metrics_file.h): counters carried from step to step in the state file, the ratio
// histogram, label escaping and bounds, the file-safety rules of the tuning log, and `promtool check metrics`
// (Debian's prometheus package) on what is written.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "job/metrics_file.h"
#include "paratune/common/safe_file.h"
#include "temp_dir.h"

using namespace paratune::job;
using paratune::fixtures::TempDir;

namespace {

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool has_promtool() { return std::system("command -v promtool >/dev/null 2>&1") == 0; }

// promtool check metrics reads the exposition text on stdin; its output (lint problems) on failure.
int promtool(const std::string& path, std::string* out) {
  const std::string cmd = "promtool check metrics < " + path + " > " + path + ".out 2>&1";
  const int st = std::system(cmd.c_str());
  *out = slurp(path + ".out");
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

MetricsEvents job_events(double ratio, bool suspect) {
  MetricsEvents e;
  e.partition = "gpu";
  e.decision_mode = "apply";
  e.decision_framework = "megatron";
  e.policy_changes = 2;
  e.ratio = ratio;
  e.suspect = suspect;
  return e;
}

}  // namespace

TEST(MetricsFile, CountsAccumulateAndTheHistogramIsCumulative) {
  nlohmann::json st = add_events({}, job_events(0.95, false));
  st = add_events(st, job_events(0.3, true));
  MetricsEvents f;
  f.partition = "gpu";
  f.failures = {"probe", "probe", "report_missing"};
  f.oom_gpu = "h100-sxm5-80gb";
  f.oom_framework = "fsdp";
  st = add_events(st, f);
  const std::string text = render_metrics(st, 1700000000);
  EXPECT_NE(text.find("paratune_decisions_total{partition=\"gpu\",mode=\"apply\",framework=\"megatron\"} 2\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("paratune_policy_changes_total{partition=\"gpu\"} 4\n"), std::string::npos);
  EXPECT_NE(text.find("paratune_failures_total{kind=\"probe\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("paratune_failures_total{kind=\"report_missing\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("paratune_suspect_jobs_total{partition=\"gpu\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("paratune_oom_jobs_total{gpu=\"h100-sxm5-80gb\",framework=\"fsdp\"} 1\n"), std::string::npos);
  // 0.3 <= 0.42 and 0.95 <= 1: cumulative buckets; +Inf = count; sum = 1.25.
  EXPECT_NE(text.find("paratune_ratio_bucket{partition=\"gpu\",le=\"0.25\"} 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("paratune_ratio_bucket{partition=\"gpu\",le=\"0.42\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("paratune_ratio_bucket{partition=\"gpu\",le=\"1\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("paratune_ratio_bucket{partition=\"gpu\",le=\"+Inf\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("paratune_ratio_sum{partition=\"gpu\"} 1.25\n"), std::string::npos);
  EXPECT_NE(text.find("paratune_ratio_count{partition=\"gpu\"} 2\n"), std::string::npos);
}

TEST(MetricsFile, LabelValuesAreEscapedAndFamiliesBounded) {
  MetricsEvents e = job_events(1.0, false);
  e.partition = "we\"ird\\part\nition";
  const std::string text = render_metrics(add_events({}, e), 1);
  EXPECT_NE(text.find("partition=\"we\\\"ird\\\\part\\nition\""), std::string::npos) << text;
  nlohmann::json st;
  for (size_t i = 0; i < kMaxSeries + 50; ++i) {
    MetricsEvents p = job_events(1.0, false);
    p.partition = "p" + std::to_string(i);
    st = add_events(st, p);
  }
  EXPECT_EQ(st["counters"]["paratune_decisions_total"].size(), kMaxSeries);
}

TEST(MetricsFile, FailureKindsAreAClosedSet) {
  EXPECT_EQ(failure_kind("user_init", "nothing fits in 32.0 GiB per GPU"), "nothing_fits");
  EXPECT_EQ(failure_kind("user_init", "deciding did not finish within 10000 ms; stopped it"), "timeout");
  EXPECT_EQ(failure_kind("user_init", "scenario: bad"), "decide");
  EXPECT_EQ(failure_kind("init_post_opt", "probe: hwloc failed"), "probe");
  EXPECT_EQ(failure_kind("init_post_opt", "Slurm did not give the job's uid"), "other");
  EXPECT_EQ(failure_kind("policy", "x"), "policy");
  EXPECT_EQ(failure_kind("admin_comment", "slurmctld refused the update"), "admin_comment");
}

TEST(MetricsFile, WrittenAtomicallyWithTheTuningLogsFileRulesAndPromtoolPasses) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: the metrics directory must be root's, as in slurmstepd";
  TempDir t;
  const std::string dir = t.path + "/textfile", path = dir + "/paratune.prom";
  update_metrics_file(path, job_events(0.8, false), 1700000000);
  update_metrics_file(path, job_events(0.5, true), 1700000100);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);  // node_exporter runs as its own user
  ASSERT_EQ(::stat((dir + "/.paratune.prom.state").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  const std::string text = slurp(path);
  EXPECT_NE(text.find("paratune_decisions_total{partition=\"gpu\",mode=\"apply\",framework=\"megatron\"} 2\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("paratune_metrics_updated_seconds 1700000100\n"), std::string::npos);
  // No temporary file is left for node_exporter to see.
  for (const auto& e : std::filesystem::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
  if (!has_promtool()) {
    GTEST_SKIP() << "promtool not installed (Debian package prometheus; scripts/install-deps.sh installs it)";
  }
  std::string out;
  EXPECT_EQ(promtool(path, &out), 0) << out;
  // Positive control: promtool does reject a malformed file.
  std::ofstream(t.path + "/bad.prom") << "# TYPE x counter\nx{a=\"1\"} one\n";
  EXPECT_NE(promtool(t.path + "/bad.prom", &out), 0);
}

TEST(MetricsFile, RefusesAGroupWritableDirectoryAndAPlantedStateLink) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: the metrics directory must be root's, as in slurmstepd";
  TempDir t;
  const std::string open_dir = t.path + "/open";
  ::mkdir(open_dir.c_str(), 0775);
  ::chmod(open_dir.c_str(), 0775);
  EXPECT_THROW(update_metrics_file(open_dir + "/p.prom", job_events(1, false), 1), std::runtime_error);
  const std::string dir = t.path + "/d";
  ::mkdir(dir.c_str(), 0755);
  ASSERT_EQ(::symlink("/etc/passwd", (dir + "/.p.prom.state").c_str()), 0);
  EXPECT_THROW(update_metrics_file(dir + "/p.prom", job_events(1, false), 1), std::exception);
  EXPECT_FALSE(std::filesystem::exists(dir + "/p.prom"));  // nothing written
  // A hard link planted as the state file (another file's second name) is refused too.
  ::unlink((dir + "/.p.prom.state").c_str());
  std::ofstream(dir + "/other") << "{}";
  ASSERT_EQ(::link((dir + "/other").c_str(), (dir + "/.p.prom.state").c_str()), 0);
  EXPECT_THROW(update_metrics_file(dir + "/p.prom", job_events(1, false), 1), std::runtime_error);
}
