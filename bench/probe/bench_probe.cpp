// Probe latency: what the plugin pays per step. Run: bench_probe --benchmark_repetitions=10
//   --benchmark_report_aggregates_only=true   (docs/probe.md reports the medians)
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "paratune/probe/probe.h"

using namespace paratune::probe;

namespace {

std::string fixture(const char* rel) { return std::string(PARATUNE_FIXTURES_DIR) + "/" + rel; }

void BM_ColdLoad(benchmark::State& state, std::string file) {
  ProbeOptions o;
  o.topology_file = file;
  for (auto _ : state) {
    Topology t = probe(o);
    benchmark::DoNotOptimize(t.fingerprint);
  }
}

void BM_Live(benchmark::State& state) {
  ProbeOptions o;
  for (auto _ : state) {
    Topology t = probe(o);
    benchmark::DoNotOptimize(t.fingerprint);
  }
}

void BM_CachedHit(benchmark::State& state, std::string file) {
  char dir[] = "/tmp/paratune-bench-XXXXXX";
  if (!::mkdtemp(dir)) {
    state.SkipWithError("mkdtemp failed");
    return;
  }
  CacheOptions c;
  c.path = std::string(dir) + "/topology.json";
  c.boot_id_file = std::string(dir) + "/boot_id";
  c.owner_uid = ::geteuid();
  std::ofstream(c.boot_id_file) << "bench-boot\n";
  ProbeOptions o;
  o.topology_file = file;
  o.use_nvml = false;
  CacheResult r;
  (void)probe_cached(o, c, &r);  // fill
  for (auto _ : state) {
    Topology t = probe_cached(o, c, &r);
    benchmark::DoNotOptimize(t.fingerprint);
  }
  if (!r.hit) state.SkipWithError(("cache not hit: " + r.reason).c_str());
  std::string cmd = std::string("rm -rf '") + dir + "'";
  if (std::system(cmd.c_str()) != 0) {
  }
}

}  // namespace

BENCHMARK_CAPTURE(BM_ColdLoad, dgx2, fixture("hwloc-xml/hwloc-nvidia-dgx2.xml"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ColdLoad, power8, fixture("hwloc-xml/hwloc-power8-4gpu-nvlink.xml"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ColdLoad, cx4_normalio, fixture("hwloc-xml/hwloc-2s-3gpu-cx4-normalio.xml"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ColdLoad, cx3, fixture("hwloc-xml/hwloc-2s-3gpu-cx3.xml"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ColdLoad, lassen, fixture("hwloc-xml/mpibind-lassen-p9-4xv100.xml"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ColdLoad, corona, fixture("hwloc-xml/mpibind-corona-8xmi50-rsmi.xml"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ColdLoad, builtin_dgx2, std::string("builtin:nvidia-dgx2"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ColdLoad, nccl_azure_ndv4, fixture("nccl-topo/azure-ndv4-topo.xml"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ColdLoad, nccl_aws_p5, fixture("nccl-topo/aws-p5.48xl-topo.xml"))->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Live)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CachedHit, dgx2, fixture("hwloc-xml/hwloc-nvidia-dgx2.xml"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CachedHit, lassen, fixture("hwloc-xml/mpibind-lassen-p9-4xv100.xml"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CachedHit, live, std::string())->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
