// What the fuzz targets (FuzzRegression.*) and the fault matrix (FaultRegression.*) found, one test per bug, in the
// normal build. The fuzz inputs that found them are in tests/fuzz/regressions/<target>/ and are replayed by
// fuzz.replay.<target> as well.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "paratune/planner/decision.h"
#include "paratune/common/safe_file.h"
#include "paratune/probe/detail.h"
#include "paratune/probe/probe.h"
#include "paratune/tuning/report.h"
#include "paratune/tuning/scenario_json.h"
#include "paratune/tuning/tuning_log.h"

using namespace paratune;

namespace {

// A hwloc 2.0 XML topology: one NUMA node, two PUs; `numa_attrs` and `pu1_attrs` complete their elements.
std::string small_xml(const std::string& numa_attrs, const std::string& pu1_attrs) {
  return R"(<?xml version="1.0" encoding="UTF-8"?>
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x00000003" complete_cpuset="0x00000003" allowed_cpuset="0x00000003" nodeset="0x00000001" complete_nodeset="0x00000001" allowed_nodeset="0x00000001" gp_index="1">
    <object type="NUMANode" os_index="0" cpuset="0x00000003" complete_cpuset="0x00000003" nodeset="0x00000001" )" +
         numa_attrs + R"( gp_index="2" local_memory="1000000"/>
    <object type="PU" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="3"/>
    <object type="PU" os_index="1" cpuset="0x00000002" )" +
         pu1_attrs + R"( nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="4"/>
  </object>
</topology>
)";
}

const std::string kGoodNuma = R"(complete_nodeset="0x00000001")";
const std::string kGoodPu = R"(complete_cpuset="0x00000002")";

std::string message_of(const std::string& xml) {
  try {
    probe::detail::load_hwloc_xml_text(xml, "t.xml");
  } catch (const probe::ProbeError& e) {
    return e.what();
  }
  return "<loaded>";
}

}  // namespace

// fuzz_hwloc_xml / fuzz_topology_file: hwloc 2.9.0 dereferences NULL (SIGSEGV in hwloc_bitmap_or) importing a
// NUMANode without complete_nodeset — one misspelt attribute in a topology= file crashed slurmd at start and every
// job step. Now the XML is tried in a child process first: a ProbeError, and the process lives on.
TEST(FuzzRegression, HwlocXmlNumaNodeWithoutCompleteNodesetIsAnErrorNotACrash) {
  EXPECT_EQ(message_of(small_xml(kGoodNuma, kGoodPu)), "<loaded>");
  const std::string m = message_of(small_xml(R"(complete_ngdeset="0x00000001")", kGoodPu));
  EXPECT_NE(m.find("t.xml: hwloc 2.x crashes on this XML"), std::string::npos) << m;
}

// Same class, other crash site (SIGSEGV in hwloc_bitmap_compare_first): a PU without complete_cpuset.
TEST(FuzzRegression, HwlocXmlPuWithoutCompleteCpusetIsAnErrorNotACrash) {
  const std::string m = message_of(small_xml(kGoodNuma, ""));
  EXPECT_NE(m.find("crashes on this XML"), std::string::npos) << m;
}

// The same through probe() with a topology file, as the plugin calls it.
TEST(FuzzRegression, ProbeOfACrashingHwlocXmlFileThrowsProbeError) {
  char path[] = "/tmp/paratune-fuzz-regression-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string xml = small_xml(R"(complete_ngdeset="0x00000001")", kGoodPu);
  ASSERT_EQ(::write(fd, xml.data(), xml.size()), static_cast<ssize_t>(xml.size()));
  ::close(fd);
  probe::ProbeOptions o;
  o.topology_file = path;
  EXPECT_THROW(probe::probe(o), probe::ProbeError);
  ::unlink(path);
}

// fuzz_tuning_log: a tuning-log line whose plan says "dp": 8805853726 — layout_from_json converted the double to
// int unchecked (UBSan: float-cast-overflow in tuning/src/scenario_json.cpp opt_num<int>). The header promises
// std::invalid_argument naming the field for a value that does not fit.
TEST(FuzzRegression, TuningLogPlanValueBeyondIntIsRejected) {
  EXPECT_THROW(tuning::layout_from_json(nlohmann::json{{"tp", 1}, {"pp", 1}, {"dp", 8805853726.0}, {"cp", 1}}),
               std::invalid_argument);
  const auto log = tuning::read_tuning_log(R"({"job_id":"1","plan":{"tp":1,"pp":1,"dp":8805853726,"cp":1}})"
                                           "\n");
  ASSERT_EQ(log.entries.size(), 1u);
  EXPECT_FALSE(log.entries[0].layout.has_value());
  EXPECT_NE(log.entries[0].scenario_problem.find("dp"), std::string::npos) << log.entries[0].scenario_problem;
}

// fuzz_tuning_log (second finding): "time": 1.7e93, "nodes": 1e10 — entry_from() casts num() (any finite double)
// to long long / int unchecked (UBSan float-cast-overflow, tuning/src/tuning_log.cpp). A value that does not fit
// must be treated like a missing or bad one, not converted.
TEST(FuzzRegression, TuningLogTimeAndCountsBeyondIntegerAreNotConverted) {
  const auto log = tuning::read_tuning_log(R"({"job_id":"1","time":1.7e93,"nodes":1e10,"gpus_per_node":-1e10})"
                                           "\n");
  ASSERT_EQ(log.entries.size() + log.problems.size(), 1u);
  if (!log.entries.empty()) {
    const auto& e = log.entries[0];
    EXPECT_GE(e.time, 0);  // not the INT64_MIN an undefined conversion gives on x86
    EXPECT_GE(e.nodes, 0);
    EXPECT_LE(e.nodes, 1 << 20);
    EXPECT_GE(e.gpus_per_node, 0);
  }
}

// fuzz_nccl_topo: a <net name="..."> that is not UTF-8 reached to_json(), whose nlohmann dump() threw
// json::type_error (not a ProbeError) — and probe_cached() could not write the cache. Now replaced by U+FFFD.
TEST(FuzzRegression, NcclTopoNameNotUtf8StillSerialises) {
  const std::string xml =
      "<system version=\"1\">\n  <cpu numaid=\"0\">\n"
      "    <pci busid=\"0000:07:00.0\" class=\"0x030200\" vendor=\"0x10de\" device=\"0x20b0\"/>\n"
      "    <nic>\n      <net name=\"mlx5_\xa2\xcf\" dev=\"0\" speed=\"200000\" port=\"1\" gdr=\"1\"/>\n    </nic>\n"
      "  </cpu>\n</system>\n";
  const probe::Topology t = probe::detail::parse_nccl_topo(xml, "t.xml");
  std::string j;
  ASSERT_NO_THROW(j = probe::to_json(t, -1));
  EXPECT_NE(j.find("mlx5_\xef\xbf\xbd"), std::string::npos) << j;  // U+FFFD
  EXPECT_NO_THROW(probe::from_json(j, "round-trip"));
}

// fuzz_topology_json: a number beyond double (22E2222) made nlohmann throw json::out_of_range from parse(), which
// from_json() did not turn into a ProbeError.
TEST(FuzzRegression, TopologyJsonNumberBeyondDoubleIsAProbeError) {
  EXPECT_THROW(probe::from_json(R"({"source": "json", "gpus": [], "nics": [], "numa_nodes": 22E2222})", "t.json"),
               probe::ProbeError);
}

// fuzz_decision: --paratune=@FILE with a file name that is not UTF-8 (any byte but NUL and '/' is a valid name):
// decide() succeeds, then decision_files() (plan.json: its notes name the file) threw json::type_error — the job
// ran untouched although its scenario was fine, and the tuning-log line (job/tuning_record.cpp: tuning_line_text) would throw
// the same way. Plan files and the log line must be written (invalid bytes replaced).
TEST(FuzzRegression, ScenarioFileNameNotUtf8StillGivesPlanFiles) {
  planner::DecisionInput in;
  probe::ProbeOptions o;
  o.topology_file = "builtin:nvidia-dgx2";
  in.topology = probe::probe(o);
  in.spec = planner::parse_option_spec("@s\xff.toml");
  in.scenario_text = "[model]\npreset = \"gpt3-1.3b\"\n[training]\nglobal_batch = 64\n";
  in.alloc.gpus_on_node = 8;
  for (auto& g : in.topology.gpus) g.in_allocation = g.index < 8;
  const planner::Decision d = planner::decide(in);
  EXPECT_NO_THROW(planner::decision_files(d));
}

// Issue 14: `--paratune=@deep.toml` with one 100 kB table header [a.a.a...] (50,000 segments): TOML++ recursed
// once per segment and slurmstepd died of SIGSEGV. The depth is checked before TOML++ sees the text (the same
// inputs, and deep dotted keys, inline tables and arrays, are replayed from the generated seeds: seedgen.cpp).
TEST(FuzzRegression, ScenarioFileNestedDeepIsAnErrorNotACrash) {
  planner::DecisionInput in;
  probe::ProbeOptions o;
  o.topology_file = "builtin:nvidia-dgx2";
  in.topology = probe::probe(o);
  in.spec = planner::parse_option_spec("@deep.toml");
  in.scenario_text = "[a";
  for (int i = 1; i < 50000; ++i) in.scenario_text += ".a";
  in.scenario_text += "]\n";
  in.alloc.gpus_on_node = 8;
  for (auto& g : in.topology.gpus) g.in_allocation = g.index < 8;
  try {
    (void)planner::decide(in);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("deep.toml:1:130: syntax: nested deeper than 64 levels", 0), 0u) << m.substr(0, 300);
    EXPECT_LT(m.size(), 300u);
  }
}

// fuzz_topology_json / fuzz_topology_file given inputs up to 1 MiB (issue 14): {"topology": {"x": [[[...]]]}}
// 400,000 levels deep parsed (nlohmann's parser is iterative), then copying j.at("topology") recursed once per
// level: SIGSEGV. Nesting past 64 levels is now a ProbeError while parsing.
TEST(FuzzRegression, TopologyJsonNestedDeepIsAProbeErrorNotACrash) {
  const std::string deep = std::string(400000, '[') + std::string(400000, ']');
  try {
    (void)probe::from_json(R"({"topology": {"x": )" + deep + "}}", "t.json");
    FAIL() << "no error";
  } catch (const probe::ProbeError& e) {
    EXPECT_STREQ(e.what(), "t.json: not valid JSON: nested deeper than 64 levels");
  }
  // 64 containers are not refused for their depth (the keys are what is wrong with this one)
  const std::string at_cap = R"({"gpus": )" + std::string(63, '[') + std::string(63, ']') + "}";
  try {
    (void)probe::from_json(at_cap, "t.json");
  } catch (const probe::ProbeError& e) {
    EXPECT_EQ(std::string(e.what()).find("nested deeper"), std::string::npos) << e.what();
  }
}

// The same nesting in the user's and the site's JSON lines reads fine (nothing copies or dumps what it parsed):
// kept so that it stays that way.
TEST(FuzzRegression, TuningLogAndReportLinesNestedDeepAreNotACrash) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');  // twice in a line under 1 MiB
  const auto log = tuning::read_tuning_log(R"({"job_id":"1","plan":)" + deep + R"(,"scenario":)" + deep + "}\n");
  ASSERT_EQ(log.entries.size(), 1u);
  EXPECT_FALSE(log.entries[0].layout.has_value());
  tuning::ReportLimits lim;
  lim.max_line_bytes = 1 << 21;
  const auto r = tuning::parse_report(R"({"step_time_s": 1.5, "x": )" + deep + "}\n", lim);
  EXPECT_EQ(r.samples.size(), 1u);
}

// Found by the fault matrix (tests/integration/test_fault_log_dir.sh, tuning log on a full tmpfs), not by a fuzzer:
// append_line() on a full file system writes part of the line, throws "short write", and leaves the partial line
// in the log; the next job's line is then glued to it and both are lost to every reader. RLIMIT_FSIZE gives the
// same short write without a mount: the first append (in a child limited to a few bytes more than the file) fails,
// the second (unlimited) must give a log whose every line is whole.
TEST(FaultRegression, AppendAfterAShortWriteLeavesNoPartialLine) {
  char dir[] = "/tmp/paratune-append-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/tuning.jsonl";
  const std::string first = "{\"job_id\":\"1\"}\n";
  std::ofstream(path) << first;
  const std::string long_line = "{\"job_id\":\"2\",\"pad\":\"" + std::string(200, 'x') + "\"}";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const struct rlimit lim {first.size() + 20, first.size() + 20};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    paratune::common::UniqueFd d(::open(dir, O_RDONLY | O_DIRECTORY));
    try {
      paratune::common::append_line(d.get(), "tuning.jsonl", long_line, 0644);
    } catch (const std::exception&) {
      ::_exit(0);  // the expected failure
    }
    ::_exit(3);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the limited append did not fail";
  paratune::common::UniqueFd d(::open(dir, O_RDONLY | O_DIRECTORY));
  paratune::common::append_line(d.get(), "tuning.jsonl", "{\"job_id\":\"3\"}", 0644);
  std::ifstream in(path);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    EXPECT_TRUE(nlohmann::json::accept(line)) << "line " << n << ": " << line;
  }
  EXPECT_EQ(n, 2) << "expected job 1 and job 3, whole";
  ::unlink(path.c_str());
  ::rmdir(dir);
}
