// The site tuning log at scale (Google Benchmark): the `paratune` commands a site runs on its log, each run as
// the real command on generated logs of 100k and 1M lines (site_log.h), timed end to end with the command's peak
// resident memory (getrusage of the child); and the JSON parsers the streaming reader could use, on lines of the
// same log. docs/operations.md "The tuning log at site scale" quotes these.
//
//   bench_tuning_log [--benchmark_filter=...]
// Environment: PARATUNE_CLI          the command to measure (default: the one built with this benchmark; set it
//                                    to an older build to compare)
//              PARATUNE_BENCH_LOGS   where the generated logs are kept between runs (default /tmp/paratune-bench-logs)
//              PARATUNE_BENCH_SIZES  line counts, comma-separated (default 100000,1000000)
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <simdjson.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "paratune/tuning/scan/line_parser.h"
#include "paratune/tuning/tuning_log.h"
#include "site_log.h"

namespace fs = std::filesystem;
using paratune::bench::SiteLogFacts;

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

struct Log {
  std::string path;
  SiteLogFacts facts;
};

// The generated log of `lines` lines, made once and kept (a 1M-line log is about 1.1 GB).
const Log& site_log(size_t lines) {
  static std::map<size_t, Log> logs;
  if (auto it = logs.find(lines); it != logs.end()) return it->second;
  const fs::path dir = env_or("PARATUNE_BENCH_LOGS", "/tmp/paratune-bench-logs");
  fs::create_directories(dir);
  Log l;
  l.path = (dir / ("site-" + std::to_string(lines) + ".jsonl")).string();
  const std::string facts_path = l.path + ".facts";
  std::ifstream in(facts_path);
  if (in && fs::exists(l.path)) {
    in >> l.facts.lines >> l.facts.jobs >> l.facts.bytes >> l.facts.configurations >> l.facts.first_job >>
        l.facts.last_job >> l.facts.first_time >> l.facts.last_time;
  } else {
    paratune::bench::SiteLogOptions o;
    o.lines = lines;
    l.facts = paratune::bench::write_site_log(l.path, o);
    std::ofstream(facts_path) << l.facts.lines << ' ' << l.facts.jobs << ' ' << l.facts.bytes << ' '
                              << l.facts.configurations << ' ' << l.facts.first_job << ' ' << l.facts.last_job << ' '
                              << l.facts.first_time << ' ' << l.facts.last_time << '\n';
  }
  return logs[lines] = l;
}

struct RunResult {
  double seconds = 0, cpu_seconds = 0;  // wall; user + system of the command
  long peak_kib = 0;
  int status = -1;
};

// Runs the command with stdout and stderr to /dev/null; its wall time and peak RSS.
RunResult run_command(const std::vector<std::string>& args) {
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int st = 0;
  struct rusage ru {};
  ::wait4(pid, &st, 0, &ru);
  RunResult r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.peak_kib = ru.ru_maxrss;
  r.cpu_seconds = double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1e-6 * double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string cli() { return env_or("PARATUNE_CLI", PARATUNE_CLI_PATH); }

// One command on the log of state.range(0) lines.
void command(benchmark::State& state, const std::string& what) {
  const Log& log = site_log(size_t(state.range(0)));
  const fs::path work = fs::temp_directory_path() / ("paratune-bench-" + std::to_string(::getpid()));
  fs::create_directories(work);
  std::vector<std::string> args = {cli()};
  if (what == "log") args.insert(args.end(), {"log", "--log", log.path});
  if (what == "log_since") args.insert(args.end(), {"log", "--log", log.path, "--since", "@" + std::to_string(log.facts.last_time + 1)});
  if (what == "calibrate")
    args.insert(args.end(), {"calibrate", "--log", log.path, "-o", (work / "cal.toml").string()});
  if (what == "portability") args.insert(args.end(), {"portability", "--log", log.path});
  if (what == "summary_index") args.insert(args.end(), {"summary", "--job", log.facts.last_job, "--log", log.path});
  if (what == "summary_scan")  // a job the index has no marker for: the bounded backwards scan
    args.insert(args.end(), {"summary", "--job", "999999999", "--log", log.path});
  // The history store (`paratune index`), kept beside the log under a name `log` does not look for by default,
  // so that the other benchmarks stream. The index_* queries need index_rebuild to have run (it comes first).
  const std::string store = log.path + "-index.sqlite";
  if (what == "index_rebuild") args.insert(args.end(), {"index", "rebuild", "--log", log.path, "--index", store});
  if (what == "log_user") args.insert(args.end(), {"log", "--log", log.path, "--user", "user17"});
  if (what == "index_log_user")
    args.insert(args.end(), {"log", "--log", log.path, "--index", store, "--source", "index", "--user", "user17"});
  if (what == "index_log_job")
    args.insert(args.end(),
                {"log", "--log", log.path, "--index", store, "--source", "index", "--job-id", log.facts.last_job});
  RunResult last;
  for (auto _ : state) {
    last = run_command(args);
    state.SetIterationTime(last.seconds);
  }
  state.counters["lines_per_s"] = double(log.facts.lines) / last.seconds;
  // On a shared machine the wall time includes waiting for a core: the command's own CPU time says what it costs.
  state.counters["cpu_s"] = last.cpu_seconds;
  state.counters["lines_per_cpu_s"] = double(log.facts.lines) / std::max(last.cpu_seconds, 1e-6);
  state.counters["peak_rss_MB"] = double(last.peak_kib) / 1024.0;
  state.counters["exit"] = last.status;
  state.counters["log_MB"] = double(log.facts.bytes) / 1e6;
  fs::remove_all(work);
}

// The history store caught up with 1,000 lines appended (new jobs, as the plugin appends them) to a store of the
// whole log of state.range(0) lines: `paratune index update` over [the generated log, a second file the lines are
// appended to]. Each iteration starts from the same store (copied) and the same empty second file (truncated,
// its modification time set back to what the store recorded); only the update is timed.
void catch_up(benchmark::State& state) {
  const Log& log = site_log(size_t(state.range(0)));
  const fs::path dir = fs::path(log.path).parent_path() / ("catch-up-" + std::to_string(state.range(0)));
  fs::create_directories(dir);
  const std::string tail = (dir / "tail.jsonl").string(), base = (dir / "base.sqlite").string(),
                    store = (dir / "store.sqlite").string(), more = (dir / "appended.jsonl").string();
  static std::map<int64_t, fs::file_time_type> built;  // once per size and process: the base store
  if (!built.count(state.range(0))) {
    paratune::bench::SiteLogOptions o;
    o.lines = 1000;
    o.index_last = 0;
    o.first_id = std::stoll(log.facts.last_job) + 1;
    o.start_time = log.facts.last_time;
    o.seed = 2;
    paratune::bench::write_site_log(more, o);
    std::ofstream(tail, std::ios::trunc);
    built[state.range(0)] = fs::last_write_time(tail);
    const RunResult r = run_command({cli(), "index", "rebuild", "--log", log.path, "--log", tail, "--index", base});
    if (r.status != 0) state.SkipWithError("index rebuild failed");
  }
  std::ifstream in(more, std::ios::binary);
  const std::string lines((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  RunResult last;
  for (auto _ : state) {
    fs::copy_file(base, store, fs::copy_options::overwrite_existing);
    fs::resize_file(tail, 0);
    std::ofstream(tail, std::ios::app | std::ios::binary) << lines;
    last = run_command({cli(), "index", "update", "--log", log.path, "--log", tail, "--index", store});
    state.SetIterationTime(last.seconds);
    fs::resize_file(tail, 0);
    fs::last_write_time(tail, built[state.range(0)]);
  }
  state.counters["cpu_s"] = last.cpu_seconds;
  state.counters["peak_rss_MB"] = double(last.peak_kib) / 1024.0;
  state.counters["exit"] = last.status;
  state.counters["lines_appended"] = 1000;
}

// ---- the parsers: what reading one line costs ----

std::vector<std::string> sample_lines(size_t n) {
  std::ifstream in(site_log(100000).path);
  std::vector<std::string> out;
  for (std::string l; out.size() < n && std::getline(in, l);) out.push_back(l);
  return out;
}

// The fields the first pass reads (job_id, time, user, partition, achieved median), by each parser.
void BM_Parse_Nlohmann(benchmark::State& state) {
  const auto lines = sample_lines(2000);
  size_t bytes = 0;
  for (auto _ : state)
    for (const auto& l : lines) {
      const auto j = nlohmann::json::parse(l, nullptr, false);
      if (j.is_discarded() || !j.is_object()) continue;
      benchmark::DoNotOptimize(j.value("job_id", std::string()));
      benchmark::DoNotOptimize(j.value("time", 0LL));
      benchmark::DoNotOptimize(j.value("user", std::string()));
      benchmark::DoNotOptimize(j.value("partition", std::string()));
      if (auto a = j.find("achieved"); a != j.end() && a->is_object()) benchmark::DoNotOptimize(a->value("median_step_time_s", 0.0));
      bytes += l.size();
    }
  state.SetBytesProcessed(int64_t(bytes));
  state.counters["lines_per_s"] = benchmark::Counter(double(lines.size()) * double(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_Parse_SimdjsonDom(benchmark::State& state) {
  const auto lines = sample_lines(2000);
  simdjson::dom::parser parser;
  size_t bytes = 0;
  for (auto _ : state)
    for (const auto& l : lines) {
      simdjson::dom::element doc;
      if (parser.parse(l).get(doc) || !doc.is_object()) continue;
      std::string_view s;
      int64_t t = 0;
      double m = 0;
      int bad = 0;
      bad += int(doc["job_id"].get(s));
      bad += int(doc["time"].get(t));
      bad += int(doc["user"].get(s));
      bad += int(doc["partition"].get(s));
      bad += int(doc["achieved"]["median_step_time_s"].get(m));
      benchmark::DoNotOptimize(s);
      benchmark::DoNotOptimize(m);
      benchmark::DoNotOptimize(bad);
      bytes += l.size();
    }
  state.SetBytesProcessed(int64_t(bytes));
  state.counters["lines_per_s"] = benchmark::Counter(double(lines.size()) * double(state.iterations()), benchmark::Counter::kIsRate);
}

// On-Demand reads only what is asked: fastest, but it does not validate the rest of the line, so a line that
// is not JSON past the fields read would be taken (read_tuning_log refuses it). Measured for the choice.
void BM_Parse_SimdjsonOnDemand(benchmark::State& state) {
  const auto lines = sample_lines(2000);
  std::vector<simdjson::padded_string> padded;
  for (const auto& l : lines) padded.emplace_back(l);
  simdjson::ondemand::parser parser;
  size_t bytes = 0;
  for (auto _ : state)
    for (auto& l : padded) {
      simdjson::ondemand::document doc;
      if (parser.iterate(l).get(doc)) continue;
      std::string_view s;
      int64_t t = 0;
      double m = 0;
      int bad = 0;
      bad += int(doc["time"].get(t));
      bad += int(doc["job_id"].get(s));
      bad += int(doc["user"].get(s));
      bad += int(doc["partition"].get(s));
      bad += int(doc["achieved"]["median_step_time_s"].get(m));
      benchmark::DoNotOptimize(s);
      benchmark::DoNotOptimize(m);
      benchmark::DoNotOptimize(bad);
      bytes += l.size();
    }
  state.SetBytesProcessed(int64_t(bytes));
  state.counters["lines_per_s"] = benchmark::Counter(double(lines.size()) * double(state.iterations()), benchmark::Counter::kIsRate);
}

// A whole LogEntry, as the commands need it: the reference reader (nlohmann) and the streaming one (simdjson,
// scenario and plan parsed once per distinct text).
void BM_Entry_Nlohmann(benchmark::State& state) {
  const auto lines = sample_lines(2000);
  for (auto _ : state)
    for (const auto& l : lines) benchmark::DoNotOptimize(paratune::tuning::read_tuning_log(l));
  state.counters["lines_per_s"] = benchmark::Counter(double(lines.size()) * double(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_Entry_Simdjson(benchmark::State& state) {
  const auto lines = sample_lines(2000);
  paratune::tuning::scan::LineParser parser;
  std::string why;
  for (auto _ : state)
    for (size_t i = 0; i < lines.size(); ++i)
      benchmark::DoNotOptimize(parser.parse(lines[i], false, i + 1, paratune::tuning::detail::Depth::kFull, &why));
  state.counters["lines_per_s"] = benchmark::Counter(double(lines.size()) * double(state.iterations()), benchmark::Counter::kIsRate);
}

std::vector<int64_t> sizes() {
  std::vector<int64_t> out;
  std::stringstream ss(env_or("PARATUNE_BENCH_SIZES", "100000,1000000"));
  for (std::string s; std::getline(ss, s, ',');) out.push_back(std::stoll(s));
  return out;
}

void register_commands() {
  for (const char* what : {"log", "log_since", "calibrate", "portability", "summary_index", "summary_scan", "log_user",
                           "index_rebuild", "index_log_user", "index_log_job"}) {
    auto* b = benchmark::RegisterBenchmark((std::string("Command/") + what).c_str(),
                                           [what](benchmark::State& s) { command(s, what); });
    for (int64_t n : sizes()) b->Arg(n);
    b->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(3)->ReportAggregatesOnly(true);
  }
  auto* b = benchmark::RegisterBenchmark("Command/index_catch_up_1000", catch_up);
  for (int64_t n : sizes()) b->Arg(n);
  b->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(3)->ReportAggregatesOnly(true);
}

}  // namespace

BENCHMARK(BM_Parse_Nlohmann)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Parse_SimdjsonDom)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Parse_SimdjsonOnDemand)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Entry_Nlohmann)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Entry_Simdjson)->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
  register_commands();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
