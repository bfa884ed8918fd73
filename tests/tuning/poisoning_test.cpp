// Calibration that one user cannot poison (docs/calibration.md, "One user cannot poison it"), each hostile case
// tried the way a user would, through the real `paratune calibrate` on a tuning log written as the plugin writes
// it: a report's {"event":"oom"} line in a job that then completed normally, five jobs of one user reporting 8x
// their predicted step time, and a group where one user's many slow jobs meet fewer honest ones. Each asserts what
// the command wrote; each failed on the calibrate before these rules (set PARATUNE_CLI_UNDER_TEST to another
// build's `paratune` to run the same cases against it). Positive controls show the same evidence counts when
// it is real (a failed step with the framework's message, a trusted user).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "history.h"
#include "paratune/advisor/advisor.h"
#include "paratune/advisor/calibration_file.h"
#include "paratune/advisor/catalog.h"
#include "paratune/advisor/model.h"
#include "test_util.h"

using namespace paratune::advisor;
using namespace paratune::tuning::testing;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// PyTorch 2.x's message (tests/fixtures/logs/oom.log line 2's wording) for a forged 40 GiB allocation.
constexpr const char* kTorchOom =
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 40.00 GiB. GPU 0 has a total capacity of 79.10 "
    "GiB of which 100.00 MiB is free. Including non-PyTorch memory, this process has 79.00 GiB memory in use.";

struct Job {
  Scenario s;
  Layout l;
  double predicted = 0;
};

// Llama 3 8B on `nodes` nodes of 8 H100 (InfiniBand), Megatron, planned by the advisor.
Job megatron_job(int nodes = 1) {
  Scenario s;
  s.model = model_preset("llama3-8b");
  s.training.global_batch = 128;
  s.training.framework = Framework::Megatron;
  s.cluster.gpu = "h100-sxm5-80gb";
  s.cluster.nodes = nodes;
  s.cluster.gpus_per_node = 8;
  s.cluster.nvlink_domain = 8;
  s.cluster.nic_count = 8;
  s.cluster.nic_gbps = 400;
  s.cluster.fabric = Fabric::InfiniBand;
  s.cluster.gpu_nic_path = "PIX";
  SearchLimits lim;
  lim.top_n = 1;
  const Plan p = advise(s, lim);
  return {s, p.layout, Evaluator(s, Framework::Megatron).evaluate(p.layout).step_s};
}

// One tuning-log line of `user`'s job `id` that ran `slowdown` x the predicted step time.
json line(const Job& j, int id, const std::string& user, double slowdown) {
  json l = json::parse(log_line(std::to_string(id), 1735689600LL + 60LL * id, "h100", {"gpu" + std::to_string(id % 7)},
                                j.s, j.l, j.predicted, j.predicted * slowdown));
  l["user"] = user;
  l["state"] = "completed";
  l.erase("suspect");
  return l;
}

struct Result {
  int status = -1;
  std::string out;
};

class Poisoning : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("paratune-poison-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // `paratune calibrate` on `lines` (plus `extra` options); the calibration it wrote, parsed (empty if none).
  Result calibrate(const std::vector<json>& lines, const std::string& extra, Calibration* out) {
    const fs::path log = dir_ / "tuning.jsonl", cal = dir_ / "calibration.toml";
    {
      std::ofstream f(log);
      for (const auto& l : lines) f << l.dump() << "\n";
    }
    fs::remove(cal);
    const char* under_test = std::getenv("PARATUNE_CLI_UNDER_TEST");
    const std::string cmd = std::string(under_test ? under_test : PARATUNE_CLI) + " calibrate --log " + log.string() +
                            " -o " + cal.string() + " " + extra + " >" + (dir_ / "out").string() + " 2>&1";
    const int st = std::system(cmd.c_str());
    Result r{WIFEXITED(st) ? WEXITSTATUS(st) : -1, slurp((dir_ / "out").string())};
    *out = fs::exists(cal) ? parse_calibration(slurp(cal.string()), cal.string()) : Calibration{};
    return r;
  }
  fs::path dir_;
};

const CalibrationEntry* megatron_entry(const Calibration& c) {
  for (const auto& e : c.entries)
    if (e.gpu == "h100-sxm5-80gb" && e.framework == "megatron") return &e;
  return nullptr;
}

double headroom(const Calibration& c) {
  for (const auto& m : c.memory)
    if (m.gpu == "h100-sxm5-80gb") return m.headroom_gib;
  return 0;
}

}  // namespace

// The first attack: one {"event":"oom"} line in a report, and the job then completes normally. Before, it set
// the (H100, Megatron) head-room to half the GPU, so every other user's next plan read "nothing fits".
TEST_F(Poisoning, AnOomLineInTheReportOfAJobThatCompletedIsNotEvidence) {
  const Job j = megatron_job();
  json hostile = line(j, 1, "mallory", 1.0);
  hostile["oom"] = {{"kind", "cuda"}, {"tried_gib", 40.0}, {"capacity_gib", 79.1}, {"free_gib", 0.1},
                    {"message", kTorchOom}, {"predicted_memory_gib", 30.0}};
  Calibration cal;
  Result r = calibrate({hostile}, "", &cal);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(headroom(cal), 0) << r.out;
  EXPECT_TRUE(cal.memory.empty()) << r.out;
  EXPECT_NE(r.out.find("OOM record of a step that did not fail (state 'completed')"), std::string::npos) << r.out;

  // Not evidence either: a failed step whose record is not an out-of-memory message of PyTorch or NCCL.
  json prose = hostile;
  prose["state"] = "failed (exit 1)";
  prose["oom"]["message"] = "I think we ran out of memory";
  r = calibrate({prose}, "", &cal);
  EXPECT_TRUE(cal.memory.empty()) << r.out;
  EXPECT_NE(r.out.find("OOM record without PyTorch's or NCCL's out-of-memory message"), std::string::npos) << r.out;

  // Positive control: the step really failed with PyTorch's message: the death counts (one user's evidence sets at
  // most a quarter of the GPU's memory).
  json died = hostile;
  died["state"] = "failed (exit 1)";
  r = calibrate({died}, "", &cal);
  const double cap = gpu_spec("h100-sxm5-80gb").memory_gib;
  EXPECT_GT(headroom(cal), 0) << r.out;
  EXPECT_LE(headroom(cal), 0.25 * cap) << r.out;
  EXPECT_NE(r.out.find("held back: job 1 of mallory asked"), std::string::npos) << r.out;
  // A second user's death at that level, or an admin's trust, lifts the bound (never above half the GPU).
  json second = died;
  second["job_id"] = "2";
  second["user"] = "alice";
  r = calibrate({died, second}, "", &cal);
  EXPECT_GT(headroom(cal), 0.25 * cap) << r.out;
  EXPECT_LE(headroom(cal), 0.5 * cap) << r.out;
  r = calibrate({died}, "--trust-user mallory", &cal);
  EXPECT_GT(headroom(cal), 0.25 * cap) << r.out;
}

// The second attack: five jobs of one user at 8x their predicted step time. Before, they formed a group of
// their own and pinned compute_scale at its 0.2 bound for everybody (and blinded the suspect flags).
TEST_F(Poisoning, FiveSlowJobsOfOneUserSetNoScale) {
  const Job j = megatron_job();
  std::vector<json> slow;
  for (int i = 0; i < 5; ++i) slow.push_back(line(j, 10 + i, "mallory", 8.0));
  Calibration cal;
  Result r = calibrate(slow, "", &cal);
  // 8x slower is outside the physical range (no GEMM efficiency the fit may choose explains it): dropped, counted;
  // nothing usable is left (exit 3), no file is written.
  EXPECT_EQ(r.status, 3) << r.out;
  EXPECT_EQ(megatron_entry(cal), nullptr) << r.out;
  EXPECT_NE(r.out.find("skipped 5: outside the physical range"), std::string::npos) << r.out;

  // At 4x (inside the range) they are still the evidence of one user: no entry, and the output says why.
  for (auto& l : slow) l["achieved"]["median_step_time_s"] = 4.0 * j.predicted;
  r = calibrate(slow, "", &cal);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(megatron_entry(cal), nullptr) << r.out;
  EXPECT_NE(r.out.find("the jobs of 1 user (mallory) < 2 and none trusted"), std::string::npos) << r.out;

  // Positive control: an admin who trusts the user's jobs gets them fitted.
  r = calibrate(slow, "--trust-user mallory", &cal);
  const CalibrationEntry* e = megatron_entry(cal);
  ASSERT_NE(e, nullptr) << r.out;
  EXPECT_LT(e->compute_scale, 0.5) << r.out;
}

// A mixed group: three honest users (four jobs each, within 3 % of the prediction) and one user with twenty jobs at
// 3x the predicted step time. Before, the hostile user held 20 of 32 jobs and the fit followed them (compute_scale
// about 0.4). Now the user weighs at most a third, the first fit leans 5 % their way, the trimmed fit leaves them
// out, and the honest users' 1.0 comes back.
TEST_F(Poisoning, HonestUsersWinAMixedGroup) {
  const Job j = megatron_job();
  std::vector<json> lines;
  int id = 100;
  const double honest[] = {0.97, 1.0, 1.03, 1.01};
  for (const char* user : {"alice", "bob", "carol"})
    for (double x : honest) lines.push_back(line(j, id++, user, x));
  for (int i = 0; i < 20; ++i) lines.push_back(line(j, id++, "mallory", 3.0));
  Calibration cal;
  const Result r = calibrate(lines, "", &cal);
  ASSERT_EQ(r.status, 0) << r.out;
  const CalibrationEntry* e = megatron_entry(cal);
  ASSERT_NE(e, nullptr) << r.out;
  EXPECT_NEAR(e->compute_scale, 1.0, 0.05) << r.out;
  EXPECT_EQ(e->samples, 12) << r.out;  // the fit used the honest jobs
  EXPECT_NE(r.out.find("share capped: mallory: 20 jobs weighted as 33 %"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dropped: 20 trimmed"), std::string::npos) << r.out;

  // Positive control: the rules bound each user's weight, they do not throw slow jobs away. The same twenty slow
  // jobs run by four users (the majority of users and of weight) are the site's truth, and the fit follows them.
  for (int i = 0; i < 20; ++i) lines[size_t(12 + i)]["user"] = "user" + std::to_string(i % 4);
  calibrate(lines, "", &cal);
  const CalibrationEntry* slow_site = megatron_entry(cal);
  ASSERT_NE(slow_site, nullptr);
  EXPECT_LT(slow_site->compute_scale, 0.5);
}

// --dry-run prints what would change and leaves the file in force as it was.
TEST_F(Poisoning, DryRunShowsTheChangeAndWritesNothing) {
  const Job j = megatron_job();
  std::vector<json> lines;
  for (int i = 0; i < 6; ++i) lines.push_back(line(j, 200 + i, i % 2 ? "alice" : "bob", 1.25));
  Calibration cal;
  ASSERT_EQ(calibrate(lines, "", &cal).status, 0);
  ASSERT_NE(megatron_entry(cal), nullptr);
  const fs::path file = dir_ / "calibration.toml", keep = dir_ / "in-force.toml";
  // The file in force: the entry at 1.0 (written by hand); the dry run must show 1.000 -> ~0.8 and not touch it.
  Calibration in_force = cal;
  in_force.entries[0].compute_scale = 1.0;
  in_force.memory.push_back({"h100-sxm5-80gb", "megatron", 2.0, 1, 0});
  const std::string text = to_toml(in_force);
  std::ofstream(keep) << text;
  fs::remove(file);
  const char* under_test = std::getenv("PARATUNE_CLI_UNDER_TEST");
  const fs::path log = dir_ / "tuning.jsonl";
  const std::string cmd = std::string(under_test ? under_test : PARATUNE_CLI) + " calibrate --log " + log.string() +
                          " -o " + keep.string() + " --dry-run >" + (dir_ / "out").string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string out = slurp((dir_ / "out").string());
  EXPECT_EQ(slurp(keep.string()), text) << out;  // not written
  const std::string moved = "h100-sxm5-80gb/infiniband/megatron: compute_scale 1.000 -> ";
  const size_t at = out.find(moved);
  ASSERT_NE(at, std::string::npos) << out;
  EXPECT_NEAR(std::stod(out.substr(at + moved.size(), 5)), megatron_entry(cal)->compute_scale, 0.0005) << out;
  // The in-force head-room this log does not relearn is kept (--replace would drop it, and says so).
  EXPECT_NE(out.find("memory head-room h100-sxm5-80gb megatron (not relearned from this log"), std::string::npos)
      << out;
  EXPECT_EQ(out.find("entry removed"), std::string::npos) << out;
  EXPECT_NE(out.find("dry run: nothing written"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(file)) << "calibrate wrote " << file;
  ASSERT_EQ(std::system((cmd.substr(0, cmd.find(" >")) + " --replace >" + (dir_ / "out").string() + " 2>&1").c_str()),
            0);
  const std::string replaced = slurp((dir_ / "out").string());
  EXPECT_NE(replaced.find("memory h100-sxm5-80gb/megatron: entry removed (head-room 2.0 GiB -> 0)"),
            std::string::npos) << replaced;
  EXPECT_EQ(slurp(keep.string()), text) << "a dry run with --replace writes nothing either";
}

// Jobs whose step time does not measure the logged plan are not fitted: a user's own PARATUNE_TP kept (their script
// read it), nodes unlike the plan's, a report that counted another batch, and a job killed after two steps (its
// median is start-up). Each is skipped with its reason; the fit is the honest jobs' alone. Control: the same lines
// without the marks move the fit (they ran at 3x).
TEST_F(Poisoning, JobsThatDidNotRunThePlanAreNotFitted) {
  const Job j = megatron_job();
  std::vector<json> honest;
  for (int i = 0; i < 6; ++i) honest.push_back(line(j, 300 + i, i % 3 == 0 ? "alice" : i % 3 == 1 ? "bob" : "carol", 1.25));
  Calibration fair;
  ASSERT_EQ(calibrate(honest, "", &fair).status, 0);
  ASSERT_NE(megatron_entry(fair), nullptr);
  std::vector<json> off_plan;
  for (int i = 0; i < 8; ++i) off_plan.push_back(line(j, 400 + i, i % 2 ? "dave" : "erin", 3.0));
  off_plan[0]["env_kept"] = {{"PARATUNE_TP", "8"}};
  off_plan[1]["env_kept"] = {{"PARATUNE_MICRO_BATCH", "4"}, {"NCCL_DEBUG", "INFO"}};
  off_plan[2]["node_checks"] = {{"checked", 1}, {"mismatch", json::array({{{"host", "gpu9"}}})}};
  off_plan[3]["node_checks"] = {{"checked", 9}, {"mismatch", json::array()}, {"mismatch_count", 700}};
  off_plan[4]["achieved"]["tokens_per_step"] = 2.0 * 128 * 8192;
  for (int i = 5; i < 8; ++i) off_plan[i]["achieved"]["steps"] = 2;
  std::vector<json> all = honest;
  all.insert(all.end(), off_plan.begin(), off_plan.end());
  Calibration with;
  const Result r = calibrate(all, "", &with);
  ASSERT_EQ(r.status, 0) << r.out;
  ASSERT_NE(megatron_entry(with), nullptr) << r.out;
  EXPECT_DOUBLE_EQ(megatron_entry(with)->compute_scale, megatron_entry(fair)->compute_scale) << r.out;
  EXPECT_NE(r.out.find("5: did not run the logged plan"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3: too few timed steps"), std::string::npos) << r.out;

  for (auto& l : off_plan) {
    l.erase("env_kept");
    l.erase("node_checks");
    l["achieved"].erase("tokens_per_step");
    l["achieved"]["steps"] = 50;
  }
  std::vector<json> unmarked = honest;
  unmarked.insert(unmarked.end(), off_plan.begin(), off_plan.end());
  Calibration moved;
  ASSERT_EQ(calibrate(unmarked, "--max-user-share 1", &moved).status, 0);
  ASSERT_NE(megatron_entry(moved), nullptr);
  EXPECT_NE(megatron_entry(moved)->compute_scale, megatron_entry(fair)->compute_scale) << "control";
}

// The network's evidence is the multi-node jobs alone, so the user rules apply to them again: four honest users'
// single-node jobs and one user's five 2-node jobs at 1.4x their predicted time (inside the trimming cut) leave
// network_scale at 1 (it was fitted to mallory's jobs alone); with two more users' multi-node jobs the network is
// fitted (control).
TEST_F(Poisoning, OneUserCannotSetTheNetworkAlone) {
  const Job one = megatron_job(1);
  Job two = megatron_job(2);  // its gradient all-reduce across the nodes exposed: the network shows in its time
  two.s.training.overlap_dp_comm = false;
  two.predicted = Evaluator(two.s, Framework::Megatron).evaluate(two.l).step_s;
  std::vector<json> lines;
  const char* honest[] = {"alice", "bob", "carol", "dave"};
  for (int i = 0; i < 8; ++i) lines.push_back(line(one, 500 + i, honest[i % 4], 1.0));
  for (int i = 0; i < 5; ++i) lines.push_back(line(two, 600 + i, "mallory", 1.4));
  Calibration cal;
  const Result r = calibrate(lines, "", &cal);
  ASSERT_EQ(r.status, 0) << r.out;
  ASSERT_NE(megatron_entry(cal), nullptr) << r.out;
  EXPECT_DOUBLE_EQ(megatron_entry(cal)->network_scale, 1.0) << r.out;
  EXPECT_NE(r.out.find("network_scale kept (the multi-node jobs of 1 user < 2, none trusted)"), std::string::npos)
      << r.out;

  for (int i = 0; i < 5; ++i) lines.push_back(line(two, 700 + i, honest[i % 2], 1.3));
  const Result both = calibrate(lines, "", &cal);
  ASSERT_EQ(both.status, 0) << both.out;
  ASSERT_NE(megatron_entry(cal), nullptr) << both.out;
  EXPECT_EQ(both.out.find("network_scale kept"), std::string::npos) << "control: fitted\n" << both.out;
}
