// What a site admin meets reading the tuning log with the CLI (issue: the tuning log documented and every reader
// naming what it cannot use; plots that say what they show; what-if names checked): run as the built binary.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "history.h"
#include "paratune/advisor/advisor.h"
#include "paratune/tuning/scenario_json.h"
#include "test_util.h"
#include "xml_check.h"

using namespace paratune::tuning;
using namespace paratune::tuning::testing;
namespace fs = std::filesystem;

namespace {

struct Result {
  int status = -1;
  std::string out, err;
};

class LogCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("paratune-logcli-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  Result sh(const std::string& args) {
    const fs::path o = dir_ / "stdout", e = dir_ / "stderr";
    const std::string full = "(" + std::string(PARATUNE_CLI) + " " + args + ") >" + o.string() + " 2>" + e.string() +
                             " </dev/null";
    const int st = std::system(full.c_str());
    return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, slurp(o.string()), slurp(e.string())};
  }
  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p.string()) << text;
    return p.string();
  }
  fs::path dir_;
};

// The SVG's <text> elements inside the panel's legend column (x beyond the plot area) with their font size.
struct TextAt {
  double x = 0, size = 12;
  std::string text;
};
std::vector<TextAt> legend_texts(const std::string& svg) {
  std::vector<TextAt> out;
  const std::regex re("<text x=\"([0-9.]+)\" y=\"[0-9.\\-]+\"([^>]*)>([^<]*)</text>");
  for (std::sregex_iterator it(svg.begin(), svg.end(), re), end; it != end; ++it) {
    TextAt t{std::stod((*it)[1]), 12, (*it)[3]};
    std::smatch fs;
    const std::string attrs = (*it)[2];
    if (std::regex_search(attrs, fs, std::regex("font-size=\"([0-9.]+)\""))) t.size = std::stod(fs[1]);
    if (attrs.find("text-anchor") == std::string::npos) out.push_back(t);
  }
  return out;
}

}  // namespace

TEST_F(LogCli, SvgForAJobThatIsNotThereIsAnErrorAndWritesNothing) {
  const std::string log = write("t.jsonl", synthetic_history(12));
  const fs::path svg = dir_ / "p.svg";
  const Result bad = sh("log --log " + log + " --svg " + svg.string() + " --job 424242");
  EXPECT_EQ(bad.status, 3);
  EXPECT_NE(bad.err.find("--job 424242: no such job"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(svg));
  // positive control: a job that is there
  const Result ok = sh("log --log " + log + " --svg " + svg.string() + " --job 1003");
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_NE(ok.err.find("wrote " + svg.string()), std::string::npos) << ok.err;
  EXPECT_NE(slurp(svg.string()).find("Step-time breakdown of job 1003"), std::string::npos);
}

TEST_F(LogCli, SvgColoursAreDistinctLegendsFitAndTheAppliedThresholdsAreDrawn) {
  const std::string log = write("t.jsonl", synthetic_history(24));  // uncalibrated predictions
  const fs::path svg = dir_ / "p.svg";
  ASSERT_EQ(sh("log --log " + log + " --svg " + svg.string()).status, 0);
  const std::string doc = slurp(svg.string());
  EXPECT_EQ(xml_problem(doc), "");
  // every breakdown term its own colour
  std::set<std::string> fills;
  size_t terms = 0;
  const std::regex term("<rect class=\"term\"[^>]*fill=\"(#[0-9a-f]+)\"");
  for (std::sregex_iterator it(doc.begin(), doc.end(), term), end; it != end; ++it, ++terms) fills.insert((*it)[1]);
  EXPECT_GE(terms, 4u);
  EXPECT_EQ(fills.size(), terms);
  // legend texts end inside the 800-pixel panel at 0.6 em a character
  const auto width = std::stod(std::regex_replace(doc.substr(doc.find("width=\"") + 7, 10), std::regex("\".*"), ""));
  size_t legends = 0;
  for (const auto& t : legend_texts(doc)) {
    if (t.x <= width - 260) continue;
    ++legends;
    EXPECT_LE(t.x + 0.6 * t.size * double(t.text.size()), width) << t.text;
  }
  EXPECT_GE(legends, 6u);  // the check saw the legends
  // uncalibrated jobs are judged against 0.7 widened to 0.42: that is the line drawn, not 0.7
  EXPECT_NE(doc.find("suspect below 0.42 (uncalibrated prediction)"), std::string::npos);
  EXPECT_EQ(doc.find("suspect below 0.7 (calibrated"), std::string::npos);
  EXPECT_EQ(doc.find("nan"), std::string::npos);
}

TEST_F(LogCli, ABreakdownWithoutAModelNameHasNoEmptyParenthesis) {
  const auto base = nlohmann::json::parse(synthetic_history(1));
  auto j = base;
  j["scenario"]["model"].erase("name");
  j["scenario"]["model"]["name"] = "";
  const std::string log = write("t.jsonl", j.dump() + "\n");
  const fs::path svg = dir_ / "p.svg";
  const Result r = sh("log --log " + log + " --svg " + svg.string());
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string doc = slurp(svg.string());
  EXPECT_NE(doc.find("Step-time breakdown of job "), std::string::npos);
  EXPECT_EQ(doc.find("(, tp"), std::string::npos);
  EXPECT_EQ(doc.find("nan"), std::string::npos);
}

TEST_F(LogCli, CalibrateNamesTheFieldThatMadeItSkipALine) {
  auto j = nlohmann::json::parse(synthetic_history(1));
  std::string text = synthetic_history(6);
  auto unknown_gpu = j;
  unknown_gpu["job_id"] = "77";
  unknown_gpu["scenario"]["cluster"]["gpu"] = "tpu-v5";
  auto no_achieved = j;
  no_achieved["job_id"] = "78";
  no_achieved.erase("achieved");
  no_achieved["report"] = "missing";
  text += unknown_gpu.dump() + "\n" + no_achieved.dump() + "\n";
  const std::string log = write("t.jsonl", text);
  const Result r = sh("calibrate --log " + log + " -o " + (dir_ / "c.toml").string() + " --min-samples 1");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("1: no achieved figures (job 78: no achieved.median_step_time_s nor achieved.tokens_per_s "
                       "(report: missing))"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("scenario.cluster.gpu 'tpu-v5'"), std::string::npos) << r.out;
}

TEST_F(LogCli, PortabilityWarnsAboutPartitionsThePolicyLacksAndLeavesDisabledOnesOutOfP) {
  const std::string scenario = write("s.toml",
                                     "[model]\npreset = \"gpt3-1.3b\"\n[training]\nglobal_batch = 512\n"
                                     "[cluster]\ngpu = \"a100-sxm4-80gb\"\nnodes = 1\ngpus_per_node = 8\n"
                                     "nvlink_domain = 8\nfabric = \"infiniband\"\n");
  const std::string policy = write("p.toml",
                                   "[partition.a100.facts]\ngpu = \"a100-sxm4-80gb\"\n"
                                   "[partition.h100.facts]\ngpu = \"h100-sxm5-80gb\"\n"
                                   "[partition.old]\nenabled = false\n");
  fs::permissions(policy, fs::perms(0644));
  const std::string base = "portability --scenario " + scenario + " --policy " + policy;
  const Result typo = sh(base + " --partitions a100,h10O");
  EXPECT_EQ(typo.status, 0) << typo.err;
  EXPECT_NE(typo.err.find("warning: partition 'h10O' is not in"), std::string::npos) << typo.err;
  const Result strict = sh(base + " --partitions a100,h10O --strict");
  EXPECT_EQ(strict.status, 2);
  EXPECT_NE(strict.err.find("error: partition 'h10O'"), std::string::npos) << strict.err;
  const Result known = sh(base + " --partitions a100,h100 --strict");  // positive control
  EXPECT_EQ(known.status, 0) << known.err;
  EXPECT_EQ(known.err.find("warning"), std::string::npos) << known.err;
  // the disabled partition is listed, left out of P, and said so; P over the two it tunes is not 0
  const Result all = sh(base + " --json");
  ASSERT_EQ(all.status, 0) << all.err;
  const auto w = nlohmann::json::parse(all.out);
  EXPECT_EQ(w["partitions"].size(), 3u);
  EXPECT_EQ(w["excluded_disabled"], nlohmann::json::array({"old"}));
  EXPECT_GT(w["P_arch"].get<double>(), 0.0);
  const Result table = sh(base);
  EXPECT_NE(table.out.find("over 2 partitions; paratune is disabled on old: not counted"), std::string::npos)
      << table.out;
}
