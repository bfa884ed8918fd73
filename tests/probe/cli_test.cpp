// `paratune probe` (cli/cmd_probe.cpp + cli/main.cpp built into probe_cli_for_tests): exit codes and output.
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "helpers.h"

namespace {

struct CliRun {
  int rc = -1;
  std::string out;
};

CliRun run(const std::string& args) {
  CliRun r;
  const std::string cmd = std::string(PARATUNE_PROBE_CLI) + " probe " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = ::pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

}  // namespace

TEST(Cli, HumanSummaryOfBuiltin) {
  CliRun r = run("--topology builtin:lassen");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("v100-sxm2-16gb"), std::string::npos);
  EXPECT_NE(r.out.find("mlx5_3"), std::string::npos);
  EXPECT_NE(r.out.find("fingerprint"), std::string::npos);
  EXPECT_NE(r.out.find("GPU0   X     NVL"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("inferred"), std::string::npos);
}

TEST(Cli, JsonIsTheContractAndReadsBack) {
  CliRun r = run("--topology '" + probe_test::fixture("hwloc-xml/hwloc-2s-3gpu-cx4-normalio.xml") + "' --json --gpus 1");
  ASSERT_EQ(r.rc, 0) << r.out;
  auto t = paratune::probe::from_json(r.out);
  EXPECT_EQ(t.gpus.size(), 3u);
  EXPECT_FALSE(t.gpus[0].in_allocation);
  EXPECT_TRUE(t.gpus[1].in_allocation);
  probe_test::TempDir d;
  std::ofstream(d.path + "/t.json") << r.out;
  CliRun again = run("--topology " + d.path + "/t.json --json");
  EXPECT_EQ(again.rc, 0);
  EXPECT_EQ(paratune::probe::from_json(again.out).fingerprint, t.fingerprint);
}

TEST(Cli, BadFileIsOneLineNamingItExit2) {
  CliRun r = run("--topology /nonexistent/x.xml");
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.out, "paratune probe: /nonexistent/x.xml: cannot read: No such file or directory\n");
  probe_test::TempDir d;
  std::ofstream(d.path + "/bad.xml") << "<system version=\"1\"><cpu>";
  r = run("--topology " + d.path + "/bad.xml");
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.out.rfind("paratune probe: " + d.path + "/bad.xml:", 0), 0u) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1);
}

TEST(Cli, BadOptionsExit2) {
  EXPECT_EQ(run("--bogus").rc, 2);
  EXPECT_EQ(run("--topology").rc, 2);
  EXPECT_EQ(run("--gpus x").rc, 2);
  EXPECT_EQ(run("--topology a --fsroot b").rc, 2);
  EXPECT_EQ(run("--help").rc, 0);
}

TEST(Cli, LiveProbeRuns) {
  CliRun r = run("--json");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(paratune::probe::from_json(r.out).source, "hwloc-live");
}
