#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include <gtest/gtest.h>

#include "job/decision_child.h"
#include "temp_dir.h"
#include "test_topologies.h"

using namespace paratune;
using namespace paratune::job;
using paratune::fixtures::TempDir;

namespace {

constexpr uid_t kNobody = 65534;
constexpr gid_t kNogroup = 65534;

// A request for a small job on 8 GPUs; as nobody when root (the child must become someone else), else as ourselves.
DecideRequest request(const std::string& spec, const std::string& plan_base) {
  DecideRequest r;
  r.input.spec = parse_option_spec(spec);
  r.input.alloc.nodes = 1;
  r.input.alloc.gpus_on_node = 8;
  r.input.topology = fixtures::dgx_a100_like();
  r.input.mode = decide_job_mode(&r.input.spec, r.input.config, r.input.policy, 8).mode;
  const bool root = ::geteuid() == 0;
  r.user = JobUser{root ? kNobody : ::getuid(), root ? kNogroup : ::getgid(), {}, true};
  r.job_id = "77";
  r.dir_bases = {plan_base};
  r.timeout_ms = 10000;
  return r;
}

// A directory the job's user may write to.
std::string writable_dir(const TempDir& t) {
  const std::string d = t.path + "/submit";
  ::mkdir(d.c_str(), 0777);
  ::chmod(d.c_str(), 01777);
  return d;
}

}  // namespace

TEST(DecisionChild, DecidesWritesThePlanAsTheUserAndAnswers) {
  TempDir t;
  const auto base = writable_dir(t);
  const auto d = decide_in_child(request("gpt3-1.3b,gbs=64", base));
  EXPECT_EQ(d.dir, base + "/paratune-77");
  struct stat st {};
  ASSERT_EQ(::stat((d.dir + "/plan.json").c_str(), &st), 0);
  if (::geteuid() == 0) {
    EXPECT_EQ(st.st_uid, kNobody);  // written by the user, not by root
  }
  bool has_tp = false, has_plan = false;
  for (const auto& a : d.injection.assignments) {
    has_tp |= a.name == "PARATUNE_TP";
    has_plan |= a.name == "PARATUNE_PLAN" && a.value == d.dir + "/plan.json";
  }
  EXPECT_TRUE(has_tp);
  EXPECT_TRUE(has_plan);
  EXPECT_GT(d.record["predicted"]["step_time_s"].get<double>(), 0);
  EXPECT_NE(d.summary.find("tp="), std::string::npos);
}

TEST(DecisionChild, AMissingScenarioFileIsAClearError) {
  TempDir t;
  auto r = request("@nope.toml", writable_dir(t));
  r.scenario_path = t.path + "/nope.toml";
  try {
    decide_in_child(r);
    FAIL() << "decided without the scenario file";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("nope.toml"), std::string::npos) << e.what();
  }
}

TEST(DecisionChild, AScenarioThatNestsFiftyThousandTablesCostsOnlyTheChild) {
  // The finding: one 100 kB table header [a.a.a....] overflowed slurmstepd's stack inside TOML++.
  TempDir t;
  const std::string path = t.path + "/deep.toml";
  {
    std::ofstream f(path);
    f << "[a";
    for (int i = 0; i < 50000; ++i) f << ".a";
    f << "]\n";
  }
  ::chmod(path.c_str(), 0644);
  auto r = request("@deep.toml", writable_dir(t));
  r.scenario_path = path;
  EXPECT_THROW(decide_in_child(r), std::exception);
  // This process is still here to say so, and a normal decision right after works (positive control).
  EXPECT_NO_THROW(decide_in_child(request("gpt3-1.3b,gbs=64", writable_dir(t))));
}

TEST(DecisionChild, ADecisionPastItsDeadlineIsStopped) {
  // A FIFO is refused outright (read_bounded: not a regular file), so the deadline is shown on a real search:
  // Llama 3 70B over 256 nodes evaluates thousands of layouts, far more than the 1 ms allowed here.
  TempDir t;
  auto r = request("llama3-70b,gbs=4096", writable_dir(t));
  r.input.alloc.nodes = 256;
  r.timeout_ms = 1;
  const auto start = std::chrono::steady_clock::now();
  try {
    decide_in_child(r);
    FAIL() << "a 256-node search finished within 1 ms";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("did not finish within 1 ms"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  // Positive control: the same search with time to spare decides.
  r.timeout_ms = 20000;
  EXPECT_NO_THROW(decide_in_child(r));
}

TEST(DecisionChild, AFifoScenarioIsRefusedWithoutBlocking) {
  TempDir t;
  const std::string fifo = t.path + "/scenario.toml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0666), 0);  // opening it for reading would block: nobody writes
  auto r = request("@scenario.toml", writable_dir(t));
  r.scenario_path = fifo;
  try {
    decide_in_child(r);
    FAIL() << "a FIFO scenario returned";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
  }
}

TEST(DecisionChild, ReplyRoundTripsThroughJson) {
  DecidedJob d;
  d.dir = "/x/paratune-1";
  d.injection.assignments = {{"PARATUNE_TP", "2", "tensor-parallel degree"}};
  d.injection.force = {"NCCL_IB_HCA"};
  d.injection.unset = {"NCCL_NVLS_ENABLE"};
  d.injection.changes = {{"what", "why"}};
  d.record = {{"plan", {{"tp", 2}}}};
  d.summary = "s";
  d.changes = {"c"};
  d.notes = {"n"};
  const auto back = decided_job_from_json(to_json(d));
  EXPECT_EQ(to_json(back), to_json(d));
}
