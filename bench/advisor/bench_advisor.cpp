// Advisor speed: one candidate evaluation, and whole searches (Llama 3.1 405B on 2,048 x 8 H100, all frameworks;
// DeepSeek-V3 on 256 x 8 H100 with expert parallelism, expert TP and the dispatcher searched: issue 16 asks < 1 s).
// Run: build/bench/advisor/bench_advisor --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include "paratune/advisor/advisor.h"
#include "paratune/advisor/model.h"

using namespace paratune::advisor;

namespace {
Scenario scenario(const char* model, int nodes, int gbs) {
  Scenario s;
  s.model = model_preset(model);
  s.training.global_batch = gbs;
  s.cluster.gpu = "h100-sxm5-80gb";
  s.cluster.nodes = nodes;
  s.cluster.gpus_per_node = 8;
  s.cluster.nvlink_domain = 8;
  s.cluster.nic_count = 8;
  s.cluster.nic_gbps = 400;
  s.cluster.nvls = true;
  return s;
}
}  // namespace

// One candidate: memory check + full time evaluation (what the search does per surviving layout).
static void BM_EvaluateCandidate(benchmark::State& st) {
  const Scenario s = scenario("llama3-70b", 64, 1024);
  const Evaluator ev(s, Framework::Megatron);
  Layout l;
  l.tp = 4; l.pp = 4; l.dp = 32; l.virtual_stages = 5; l.micro_batch = 1; l.zero_stage = 1;
  l.recompute = Recompute::Selective; l.sequence_parallel = true;
  for (auto _ : st) {
    benchmark::DoNotOptimize(ev.memory_gib(l));
    benchmark::DoNotOptimize(ev.evaluate(l));
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_EvaluateCandidate);

static void BM_Advise(benchmark::State& st, const char* model, int nodes, int gbs, bool all) {
  const Scenario s = scenario(model, nodes, gbs);
  SearchLimits lim;
  lim.all_frameworks = all;
  long long n = 0;
  for (auto _ : st) {
    const Plan p = advise(s, lim);
    n = p.candidates_evaluated;
    // A non-const lvalue: Google Benchmark 1.9 (Debian 13) deprecates DoNotOptimize on a const reference.
    double step_time_s = p.prediction.step_time_s;
    benchmark::DoNotOptimize(step_time_s);
  }
  st.counters["candidates"] = double(n);
  // seconds of search per evaluated candidate (memory-pruned layouts are not counted, so this is an upper bound)
  st.counters["s_per_candidate"] =
      benchmark::Counter(double(n), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK_CAPTURE(BM_Advise, llama31_405b_2048x8_all_frameworks, "llama3.1-405b", 2048, 2048, true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Advise, llama3_70b_64x8_megatron, "llama3-70b", 64, 1024, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Advise, llama3_8b_1x8_all_frameworks, "llama3-8b", 1, 256, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Advise, deepseek_v3_256x8_megatron, "deepseek-v3", 256, 8192, false)
    ->Unit(benchmark::kMillisecond);

// One MoE candidate (DeepSeek-V3, EP 64 across nodes, flex dispatcher): the generalised layer's cost.
static void BM_EvaluateMoeCandidate(benchmark::State& st) {
  const Scenario s = scenario("deepseek-v3", 256, 8192);
  const Evaluator ev(s, Framework::Megatron);
  Layout l;
  l.tp = 2; l.pp = 8; l.dp = 128; l.virtual_stages = 4; l.micro_batch = 1; l.zero_stage = 1; l.ep = 64;
  l.dispatcher = Dispatcher::Flex; l.recompute = Recompute::Selective; l.sequence_parallel = true;
  for (auto _ : st) {
    benchmark::DoNotOptimize(ev.memory_gib(l));
    benchmark::DoNotOptimize(ev.evaluate(l));
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_EvaluateMoeCandidate);

BENCHMARK_MAIN();
