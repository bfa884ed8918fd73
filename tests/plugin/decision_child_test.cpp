#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>

#include <gtest/gtest.h>

#include "job/decide_request.h"
#include "job/decision_child.h"
#include "temp_dir.h"
#include "test_topologies.h"

using namespace paratune;
using namespace paratune::job;
using namespace paratune::planner;
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
  d.wanted = {{"PARATUNE_TP", "2", "tensor-parallel degree"}};
  d.record = {{"plan", {{"tp", 2}}}};
  d.summary = "s";
  d.changes = {"c"};
  d.notes = {"n"};
  const auto back = decided_job_from_json(to_json(d), policies::EffectivePolicy{});
  EXPECT_EQ(to_json(back), to_json(d));
  ASSERT_EQ(back.injection.assignments.size(), 1u);  // no policy: the decision's variable as it is
  EXPECT_EQ(back.injection.assignments[0].name, "PARATUNE_TP");
}

namespace {

// A site policy that forces NCCL_IB_HCA and forbids NCCL_NVLS_ENABLE.
policies::EffectivePolicy forcing_policy() {
  return policies::resolve(policies::parse_policy("[defaults.env]\nforce = { NCCL_IB_HCA = \"mlx5_0:1\" }\n"
                                                  "forbid = [\"NCCL_NVLS_ENABLE\"]\n", "site.toml"), "");
}

bool sets(const EnvInjection& inj, const std::string& name, const std::string& value) {
  for (const auto& a : inj.assignments)
    if (a.name == name && a.value == value) return true;
  return false;
}

}  // namespace

// Hardening round 3, finding 5: the decision child runs the user's input, so what it answers about the site's
// variable rules is not taken — the parent applies the policy to the variables the child names. A reply as a
// compromised child could send it: the forbidden variable set, the forced one left out, and the earlier reply
// format's own say on what to force and remove.
TEST(DecisionChild, TheParentAppliesThePolicyWhateverTheChildAnswers) {
  const auto policy = forcing_policy();
  const nlohmann::json reply = {
      {"dir", "/x/paratune-1"},
      {"wanted", {{{"name", "NCCL_NVLS_ENABLE"}, {"value", "1"}, {"reason", "child says"}},
                  {{"name", "PARATUNE_TP"}, {"value", "8"}, {"reason", "tp"}}}},
      {"assignments", {{{"name", "NCCL_NVLS_ENABLE"}, {"value", "1"}, {"reason", "child says"}}}},
      {"force", nlohmann::json::array()}, {"unset", nlohmann::json::array()},
      {"injection_changes", nlohmann::json::array()},
      {"record", nlohmann::json::object()}, {"summary", "s"}, {"changes", nlohmann::json::array()},
      {"notes", nlohmann::json::array()}};
  const auto d = decided_job_from_json(reply, policy);
  EXPECT_FALSE(sets(d.injection, "NCCL_NVLS_ENABLE", "1"));
  EXPECT_NE(std::find(d.injection.unset.begin(), d.injection.unset.end(), "NCCL_NVLS_ENABLE"), d.injection.unset.end());
  EXPECT_TRUE(sets(d.injection, "NCCL_IB_HCA", "mlx5_0:1"));
  EXPECT_NE(std::find(d.injection.force.begin(), d.injection.force.end(), "NCCL_IB_HCA"), d.injection.force.end());
  EXPECT_TRUE(sets(d.injection, "PARATUNE_TP", "8"));  // control: the decision's own variable is kept
}

TEST(DecisionChild, AReplyNamingAVariableThatIsNotAPlainNameIsRefused) {
  for (const std::string& bad : std::vector<std::string>{"LD_PRELOAD=/tmp/x.so", "A B", "", "1ABC", std::string(200, 'A')}) {
    const nlohmann::json reply = {{"dir", "/x"}, {"wanted", {{{"name", bad}, {"value", "1"}, {"reason", "r"}}}},
                                  {"record", nlohmann::json::object()}, {"summary", "s"},
                                  {"changes", nlohmann::json::array()}, {"notes", nlohmann::json::array()}};
    EXPECT_THROW(decided_job_from_json(reply, policies::EffectivePolicy{}), std::exception) << bad;
  }
}

namespace {

mode_t mode_of(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 07777;
}

}  // namespace

// Hardening round 3, finding 2: plan directories were 0755 and plan files 0644 whatever the umask, so a plan in
// /tmp was every user's to read. Now 0700/0600, or 0750/0640 where the site lets the group read them.
TEST(DecisionChild, ThePlanDirectoryIsPrivateWhateverTheUmask) {
  TempDir t;
  const mode_t old_umask = ::umask(0);  // the most permissive umask: the modes must not come from it
  const auto d = decide_in_child(request("gpt3-1.3b,gbs=64", writable_dir(t)));
  ::umask(old_umask);
  EXPECT_EQ(mode_of(d.dir), 0700u);
  EXPECT_EQ(mode_of(d.dir + "/plan.json"), 0600u);
  EXPECT_EQ(mode_of(d.dir + "/torchrun.args"), 0600u);
  auto r = request("gpt3-1.3b,gbs=64", writable_dir(t));
  r.job_id = "78";
  r.group_readable = true;
  const auto g = decide_in_child(r);
  EXPECT_EQ(mode_of(g.dir), 0750u);
  EXPECT_EQ(mode_of(g.dir + "/plan.json"), 0640u);
}

// The /tmp fallback: another user who made /tmp/paratune-<jobid> first (the name was predictable) made the plan
// write fail, and under on_error = "closed" the victim's job exit 1. Now the fallback is a fresh mkdtemp directory.
TEST(DecisionChild, APlanNameTakenByAnotherUserGivesAFreshDirectoryNotAFailure) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: another user's directory must be made";
  TempDir t;
  const std::string fallback = t.path + "/tmp";
  ASSERT_EQ(::mkdir(fallback.c_str(), 01777), 0);
  ASSERT_EQ(::chmod(fallback.c_str(), 01777), 0);
  const std::string taken = fallback + "/paratune-77";
  ASSERT_EQ(::mkdir(taken.c_str(), 0755), 0);
  ASSERT_EQ(::chown(taken.c_str(), 1, 1), 0);  // daemon's: the attacker got there first
  auto r = request("gpt3-1.3b,gbs=64", t.path + "/not-writable");  // the submit directory cannot take it
  r.dir_bases = {t.path + "/not-writable", taken.substr(0, taken.rfind('/'))};  // nor the taken name
  r.fallback_base = fallback;
  const auto d = decide_in_child(r);
  EXPECT_NE(d.dir, taken);
  EXPECT_EQ(d.dir.rfind(fallback + "/paratune-77-", 0), 0u) << d.dir;
  EXPECT_EQ(mode_of(d.dir), 0700u);
  struct stat st {};
  ASSERT_EQ(::stat((d.dir + "/plan.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kNobody);
  EXPECT_EQ(::access((taken + "/plan.json").c_str(), F_OK), -1);  // nothing written into the attacker's directory
}

// A requeued job reuses paratune-<job>: the earlier attempt's report is moved aside, so the new plan's report holds
// only the new attempt's steps (its summary mixed both, and kept the first attempt's OOM).
TEST(DecisionChild, ARequeuedJobStartsANewReport) {
  TempDir t;
  const auto base = writable_dir(t);
  const auto first = decide_in_child(request("gpt3-1.3b,gbs=64", base));
  const std::string report = first.dir + "/report.jsonl";
  {
    std::ofstream f(report);
    f << "{\"step\": 1, \"step_time_s\": 9.0}\n";
  }
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(report.c_str(), kNobody, kNogroup), 0);  // the job's user wrote it
  }
  const auto again = decide_in_child(request("gpt3-1.3b,gbs=64", base));
  ASSERT_EQ(again.dir, first.dir);
  struct stat st {};
  EXPECT_NE(::stat(report.c_str(), &st), 0) << "the earlier report is not the new plan's";
  std::ifstream prev(first.dir + "/report.prev.jsonl");
  std::string line;
  EXPECT_TRUE(std::getline(prev, line));
  EXPECT_EQ(line, "{\"step\": 1, \"step_time_s\": 9.0}");
}

// torchrun's rendezvous host is the first node of Slurm's node list; without the list, the batch step's own node
// (Slurm runs the batch script on the allocation's first node); any other step without it knows none.
TEST(DecideRequest, TheRendezvousHostIsTheFirstNodeOrTheBatchHost) {
  paratune::job::StepFacts f;
  f.node_names = {"gpu07", "gpu08"};
  f.batch_host = "gpu07";
  EXPECT_EQ(paratune::job::decide_request(f).input.alloc.first_node, "gpu07");
  f.node_names.clear();
  EXPECT_EQ(paratune::job::decide_request(f).input.alloc.first_node, "gpu07");
  f.batch_host.clear();
  EXPECT_EQ(paratune::job::decide_request(f).input.alloc.first_node, "");
}
