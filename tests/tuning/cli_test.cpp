// The `paratune run`, `log` and `calibrate` commands, run as the built binary (PARATUNE_CLI).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "history.h"
#include "paratune/advisor/calibration_file.h"
#include "paratune/tuning/report.h"
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

// Run a shell command line with stdout and stderr captured in files.
Result sh(const std::string& cmdline, const fs::path& dir) {
  const fs::path o = dir / "stdout", e = dir / "stderr";
  const std::string full = "(" + cmdline + ") >" + o.string() + " 2>" + e.string() + " </dev/null";
  const int st = std::system(full.c_str());
  Result r;
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = slurp(o.string());
  r.err = slurp(e.string());
  return r;
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("paratune-tuning-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string cli() const { return PARATUNE_CLI; }
  fs::path dir_;
};

}  // namespace

TEST_F(Cli, RunPassesOutputThroughPreservesStatusAndWritesTheReport) {
  const fs::path report = dir_ / "report.jsonl";
  const fs::path script = dir_ / "train.sh";
  {
    // real Megatron lines from the fixtures, a line without a newline at the end, binary bytes, stderr
    std::ofstream s(script);
    s << "cat '" << fixture("megatron.log") << "'\n"
      << "echo 'to stderr' >&2\n"
      << "printf 'bin\\001\\377\\n'\n"
      << "printf 'no newline'\n"
      << "exit 3\n";
  }
  const Result r = sh("PARATUNE_REPORT=" + report.string() + " " + cli() + " run -- sh " + script.string(), dir_);
  EXPECT_EQ(r.status, 3);
  EXPECT_EQ(r.out, slurp(fixture("megatron.log")) + "bin\001\377\nno newline");  // byte for byte
  // the child's stderr, then our one summary line (4 Megatron steps, written where)
  EXPECT_EQ(r.err.substr(0, 10), "to stderr\n");
  EXPECT_EQ(count(r.err, "\n"), 2u) << r.err;
  EXPECT_NE(r.err.find("paratune run: 4 steps"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("4 lines appended to " + report.string() + "\n"), std::string::npos) << r.err;
  const std::string rep = slurp(report.string());
  EXPECT_EQ(count(rep, "\n"), 4u);
  const ReportSummary s = summarize_report(rep);
  ASSERT_TRUE(s.valid) << s.invalid_reason;
  EXPECT_EQ(s.samples, 4u);
  EXPECT_EQ(s.bad_lines, 0u);
  EXPECT_NE(rep.find("{\"source\":\"megatron\",\"step\":71,\"step_time_s\":5.3616,\"tflops_per_gpu\":243.6}"),
            std::string::npos)
      << rep;
}

TEST_F(Cli, RunReportsSignalsAsStatusAndForwardsThem) {
  EXPECT_EQ(sh(cli() + " run -- sh -c 'kill -KILL $$'", dir_).status, 128 + 9);
  // SIGTERM sent to `paratune run` reaches the child, whose trap decides the status
  const fs::path pidf = dir_ / "pid";
  const std::string child = "trap 'echo got TERM; exit 42' TERM; echo ready; while :; do sleep 0.05; done";
  const Result r = sh(cli() + " run -- sh -c \"" + child + "\" & echo $! > " + pidf.string() +
                          "; while ! grep -q ready " + (dir_ / "stdout").string() +
                          " 2>/dev/null; do sleep 0.05; done; kill -TERM $(cat " + pidf.string() + "); wait $!",
                      dir_);
  EXPECT_EQ(r.status, 42);
  EXPECT_NE(r.out.find("got TERM"), std::string::npos);
}

TEST_F(Cli, RunWithoutReportOrCommand) {
  const Result ok = sh("env -u PARATUNE_REPORT " + cli() + " run -- sh -c 'echo hi'", dir_);
  EXPECT_EQ(ok.status, 0);
  EXPECT_EQ(ok.out, "hi\n");
  EXPECT_EQ(sh(cli() + " run", dir_).status, 2);
  EXPECT_EQ(sh(cli() + " run -- /nonexistent/cmd", dir_).status, 127);
  // the report path is a symlink: not followed, nothing written there, the command still runs
  const fs::path target = dir_ / "target", link = dir_ / "link";
  { std::ofstream(target.string()) << ""; }
  fs::create_symlink(target, link);
  const Result r = sh("PARATUNE_REPORT=" + link.string() + " " + cli() + " run -- cat '" + fixture("nemo.log") + "'", dir_);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, slurp(fixture("nemo.log")));
  EXPECT_EQ(slurp(target.string()), "");
  EXPECT_NE(r.err.find("cannot append"), std::string::npos);
}

TEST_F(Cli, RunDerivesStepTimesFromThroughputWithTheJobEnvironment) {
  const fs::path report = dir_ / "r.jsonl";
  const Result r = sh("PARATUNE_REPORT=" + report.string() + " PARATUNE_GLOBAL_BATCH=8 PARATUNE_TP=1 PARATUNE_PP=1 "
                      "PARATUNE_DP=2 PARATUNE_CP=1 " + cli() + " run --seq-len 1024 -- cat '" + fixture("hf_trainer.log") + "' '" +
                      fixture("torchtitan.log") + "'",
                      dir_);
  EXPECT_EQ(r.status, 0);
  const ParsedReport p = parse_report(slurp(report.string()));
  // 2 HF Trainer run averages (no step) + torchtitan steps 14 and 15; its step 4 (another run, printed after
  // step 15) is taken for a repeat from another rank and not recorded twice
  ASSERT_EQ(p.samples.size(), 4u);
  EXPECT_NEAR(p.samples[0].step_time_s, 8 / 1.808, 1e-9);                   // global batch / samples per s
  EXPECT_NEAR(p.samples[2].step_time_s, 8.0 * 1024 / (7282.0 * 2), 1e-9);   // tokens per step / (tps * GPUs)
  EXPECT_EQ(p.samples[2].step, 14);
  EXPECT_NEAR(*p.samples[2].tokens, 8.0 * 1024, 1e-9);
}

// Recognised lines that the context cannot turn into a step time are not lost without a word: one warning per
// kind (framework, figure, what is missing) naming what is missing and what to pass; with the context, none.
TEST_F(Cli, RunWarnsOncePerKindAboutLinesItCannotUse) {
  const fs::path report = dir_ / "r.jsonl";
  const std::string logs = " '" + fixture("torchtitan.log") + "' '" + fixture("hf_trainer.log") + "' '" +
                           fixture("torchtitan.log") + "'";
  const std::string no_ctx = "env -u PARATUNE_GLOBAL_BATCH -u PARATUNE_TP -u PARATUNE_PP -u PARATUNE_DP -u PARATUNE_CP "
                             "-u PARATUNE_PLAN PARATUNE_REPORT=" + report.string() + " ";
  const Result r = sh(no_ctx + cli() + " run -- cat" + logs, dir_);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, slurp(fixture("torchtitan.log")) + slurp(fixture("hf_trainer.log")) + slurp(fixture("torchtitan.log")));
  // torchtitan's per-GPU tokens/s needs all three; the HF Trainer's samples/s only the global batch
  EXPECT_EQ(count(r.err, "warning: torchtitan lines"), 1u) << r.err;
  EXPECT_EQ(count(r.err, "warning: hf-trainer lines"), 1u) << r.err;
  const size_t tt = r.err.find("warning: torchtitan lines"), hf = r.err.find("warning: hf-trainer lines");
  const std::string tt_line = r.err.substr(tt, r.err.find('\n', tt) - tt);
  const std::string hf_line = r.err.substr(hf, r.err.find('\n', hf) - hf);
  for (const char* s : {"global batch", "sequence length", "world size", "--global-batch N", "--seq-len N", "--world-size N"})
    EXPECT_NE(tt_line.find(s), std::string::npos) << s << " in " << tt_line;
  EXPECT_NE(hf_line.find("--global-batch N"), std::string::npos) << hf_line;
  EXPECT_EQ(hf_line.find("--seq-len"), std::string::npos) << hf_line;
  EXPECT_NE(r.err.find("not usable"), std::string::npos) << r.err;  // the summary counts them too
  // positive control: with the context, the same lines are recorded and nothing is warned about
  fs::remove(report);
  const Result ok = sh(no_ctx + cli() + " run --global-batch 8 --seq-len 1024 --world-size 2 -- cat" + logs, dir_);
  EXPECT_EQ(ok.status, 0);
  EXPECT_EQ(ok.err.find("warning"), std::string::npos) << ok.err;
  EXPECT_EQ(parse_report(slurp(report.string())).samples.size(), 4u);
}

TEST_F(Cli, RunWarnsWithoutAReportPathAndQuietSilencesIt) {
  const Result r = sh("env -u PARATUNE_REPORT " + cli() + " run -- cat '" + fixture("megatron.log") + "'", dir_);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, slurp(fixture("megatron.log")));
  EXPECT_NE(r.err.find("paratune run: warning: no report path (--report FILE or $PARATUNE_REPORT)"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("nothing written: no report path"), std::string::npos) << r.err;  // and the summary says so
  // control: with a path, no such warning; --quiet: nothing of ours at all
  const Result with = sh("env -u PARATUNE_REPORT " + cli() + " run --report " + (dir_ / "r").string() + " -- true", dir_);
  EXPECT_EQ(with.err.find("no report path"), std::string::npos) << with.err;
  const Result quiet = sh("env -u PARATUNE_REPORT " + cli() + " run -q -- cat '" + fixture("megatron.log") + "'", dir_);
  EXPECT_EQ(quiet.out, slurp(fixture("megatron.log")));
  EXPECT_EQ(quiet.err, "");
}

// The summary at exit: steps, the median step time after the warm-up (the rule the plugin records with), tokens/s
// (global batch x sequence length / median) and where the lines went. NeMo-format lines with known step times: a
// 9 s first step (the warm-up) and five of 2 s: median 2 s, 8 x 1024 / 2 = 4096 tokens/s.
TEST_F(Cli, RunEndsWithASummaryLine) {
  const fs::path report = dir_ / "r.jsonl", script = dir_ / "train.sh";
  {
    std::ofstream s(script);
    s << "echo 'global_step: 1 | train_step_timing in s: 9.0'\n";
    for (int i = 2; i <= 6; ++i) s << "echo 'global_step: " << i << " | train_step_timing in s: 2.0'\n";
    s << "printf 'no newline on stderr' >&2\n";
  }
  const Result r = sh("PARATUNE_REPORT=" + report.string() + " " + cli() +
                          " run --global-batch 8 --seq-len 1024 -- sh " + script.string(), dir_);
  EXPECT_EQ(r.status, 0);
  // our line starts on a line of its own after the child's unterminated stderr
  EXPECT_EQ(r.err, "no newline on stderr\nparatune run: 6 steps (1 warm-up), median step time 2.000 s, 4096 tokens/s; "
                   "6 lines appended to " + report.string() + "\n");
  EXPECT_EQ(parse_report(slurp(report.string())).samples.size(), 6u);
}

TEST_F(Cli, LogTableJsonSvgAndSuspects) {
  const fs::path log = dir_ / "tuning.jsonl";
  {
    SiteTruth t;
    std::ofstream(log.string()) << synthetic_history(40, t) << "not json\n";
  }
  const Result table = sh(cli() + " log --log " + log.string(), dir_);
  EXPECT_EQ(table.status, 0);
  EXPECT_NE(table.out.find("40 jobs, 40 with an achieved step time"), std::string::npos) << table.out;
  EXPECT_NE(table.err.find("tuning.jsonl:41: not valid JSON"), std::string::npos) << table.err;

  const Result js = sh(cli() + " log --log " + log.string() + " --json --partition a100 --since 2025-01-01T05:00", dir_);
  EXPECT_EQ(js.status, 0);
  const auto j = nlohmann::json::parse(js.out);
  ASSERT_TRUE(j.is_array());
  EXPECT_EQ(j.size(), 15u);  // jobs 5..39 with i%8 in {5,6,7}
  for (const auto& row : j) {
    EXPECT_EQ(row["partition"], "a100");
    EXPECT_TRUE(row["ratio"].is_number());
  }

  const fs::path svg = dir_ / "plots.svg";
  const Result s = sh(cli() + " log --log " + log.string() + " --svg " + svg.string() + " --job 1003", dir_);
  EXPECT_EQ(s.status, 0);
  const std::string doc = slurp(svg.string());
  EXPECT_EQ(xml_problem(doc), "");
  EXPECT_EQ(count(doc, "<circle class=\"job"), 40u);
  EXPECT_NE(doc.find("Step-time breakdown of job 1003"), std::string::npos);

  // suspect_ratio = 0 is a site's "never flag" (docs/policy.md); the epilog passes it on as --threshold 0.
  EXPECT_EQ(sh(cli() + " log --log " + log.string() + " --threshold 0", dir_).status, 0);
  const Result sus = sh(cli() + " log --log " + log.string() + " --suspects --threshold 0.8", dir_);
  EXPECT_EQ(sus.status, 0);
  // the slow node halves throughput on a site already 0.6-0.9x of the model: its uncalibrated jobs fall below the
  // 0.8 widened by the model's out-of-sample error (to 0.48), the healthy ones do not
  EXPECT_EQ(sus.out.rfind("node", 0), 0u) << sus.out;
  EXPECT_NE(sus.out.find("gpu017"), std::string::npos) << sus.out;

  EXPECT_EQ(sh(cli() + " log --log " + (dir_ / "missing").string(), dir_).status, 1);
  EXPECT_EQ(sh(cli() + " log --since yesterday --log " + log.string(), dir_).status, 2);
}

// A FIFO planted at the report path (no reader) used to hold `paratune run` in open(): the child's output was not
// drained and Slurm's SIGTERM not forwarded. Now it is refused at once as not a regular file and the child runs on.
TEST_F(Cli, RunRefusesAFifoReportWithoutBlocking) {
  const fs::path fifo = dir_ / "report.jsonl";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const Result r = sh("timeout 20 " + cli() + " run --report " + fifo.string() +
                          " -- sh -c \"printf ' [x] iteration 100/1000 | elapsed time per iteration (ms): 9000.0 |\\n'; "
                          "exit 3\"",
                      dir_);
  EXPECT_EQ(r.status, 3) << "the child's own status, not timeout's 124\n" << r.err;
  EXPECT_NE(r.err.find("cannot append to " + fifo.string() + ": not a regular file"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("elapsed time per iteration"), std::string::npos) << "the child's output passed through";
}

// Our warning about a line whose chunk left the child's stderr mid-line waits for the end of that line: the
// child's "part" + "ial" stays one line (the warning used to land between them).
TEST_F(Cli, RunWarningsNeverSplitAChildsLine) {
  const Result r = sh("env -u PARATUNE_GLOBAL_BATCH " + cli() + " run --report " + (dir_ / "r.jsonl").string() +
                          " -- sh -c \"printf \\\"{'train_samples_per_second': 5.0}\\npart\\\" >&2; sleep .5; "
                          "printf 'ial\\n' >&2\"",
                      dir_);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("\npartial\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("paratune run: warning"), std::string::npos) << "positive control: a warning was written\n"
                                                                     << r.err;
}

TEST_F(Cli, CalibrateWritesAFileTheAdvisorReads) {
  const fs::path log = dir_ / "tuning.jsonl", out = dir_ / "calibration.toml";
  std::ofstream(log.string()) << synthetic_history(80);
  const Result r = sh(cli() + " calibrate --log " + log.string() + " -o " + out.string() + " --holdout 0.5", dir_);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("holdout: fitted on the earliest 40 jobs, checked on the latest 40"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("h100-sxm5-80gb"), std::string::npos);
  const auto cal = paratune::advisor::parse_calibration(slurp(out.string()), out.string());
  ASSERT_EQ(cal.entries.size(), 2u);
  for (const auto& e : cal.entries) EXPECT_LT(e.error_after, e.error_before);
  EXPECT_EQ(sh(cli() + " calibrate --log " + log.string(), dir_).status, 2);
  std::ofstream(log.string()) << "{\"job_id\": \"1\"}\n";
  EXPECT_EQ(sh(cli() + " calibrate --log " + log.string() + " -o " + out.string(), dir_).status, 3);
}

// A refit from a thin log (the day after rotation) keeps the entries it cannot refit instead of wiping the site's
// calibration; --replace drops them. The file is replaced whole, keeps the admin's permission bits, and a target
// that is not a regular file (/dev/full: every write fails) is refused with nothing written.
TEST_F(Cli, CalibrateKeepsWhatAThinLogCannotRefitAndWritesWholeOrNothing) {
  const fs::path log = dir_ / "tuning.jsonl", thin = dir_ / "thin.jsonl", out = dir_ / "calibration.toml";
  const std::string history = synthetic_history(80);
  std::ofstream(log.string()) << history;
  std::ofstream(thin.string()) << history.substr(0, history.find('\n') + 1);
  ASSERT_EQ(sh(cli() + " calibrate --log " + log.string() + " -o " + out.string(), dir_).status, 0);
  const auto full = paratune::advisor::parse_calibration(slurp(out.string()), out.string());
  ASSERT_EQ(full.entries.size(), 2u) << "positive control: the full log fits two groups";
  fs::permissions(out, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);

  const Result r = sh(cli() + " calibrate --log " + thin.string() + " -o " + out.string(), dir_);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("kept from " + out.string() + ": h100-sxm5-80gb"), std::string::npos) << r.out;
  const auto kept = paratune::advisor::parse_calibration(slurp(out.string()), out.string());
  ASSERT_EQ(kept.entries.size(), 2u);
  EXPECT_DOUBLE_EQ(kept.entries[0].compute_scale, full.entries[0].compute_scale);
  EXPECT_EQ(fs::status(out).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);

  EXPECT_EQ(sh(cli() + " calibrate --log " + thin.string() + " -o " + out.string() + " --replace", dir_).status, 0);
  EXPECT_TRUE(paratune::advisor::parse_calibration(slurp(out.string()), out.string()).entries.empty());

  const Result full_disk = sh(cli() + " calibrate --log " + log.string() + " -o /dev/full", dir_);
  EXPECT_EQ(full_disk.status, 1);
  EXPECT_NE(full_disk.err.find("cannot write /dev/full: not a regular file"), std::string::npos) << full_disk.err;
  EXPECT_EQ(full_disk.out.find("wrote"), std::string::npos) << full_disk.out;
}

// Issue 14: a scenario of one 100 kB table header `[a.a.a....]` (50,000 levels) overflowed TOML++'s stack and
// `paratune predict` died of SIGSEGV (139). Now the depth is checked first: a bad-input exit naming the place.
TEST_F(Cli, PredictRejectsADeeplyNestedScenarioInsteadOfCrashing) {
  const fs::path deep = dir_ / "deep.toml";
  {
    std::ofstream f(deep);
    f << "[a";
    for (int i = 1; i < 50000; ++i) f << ".a";
    f << "]\n";
  }
  const Result r = sh(cli() + " predict --scenario " + deep.string(), dir_);
  EXPECT_EQ(r.status, 2) << r.err.substr(0, 500);  // kBadInput; 139 was the crash
  EXPECT_NE(r.err.find("deep.toml:1:130: syntax: nested deeper than 64 levels"), std::string::npos)
      << r.err.substr(0, 500);
  EXPECT_LT(r.err.size(), 1000u);  // the message does not echo the file
}
