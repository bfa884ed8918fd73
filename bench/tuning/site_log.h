// A generated site tuning log for the benchmarks (bench_tuning_log) and by hand (paratune_gen_log): lines shaped
// as the plugin writes them (plugin/job/tuning_record.cpp + the report's fields), about 1.1 kB each, from a few
// hundred real configurations (model presets x GPUs x node counts x frameworks, each planned by the advisor), with
// what a site's log holds besides: OOM deaths, suspect jobs, lines a shipper delivered twice, a few broken lines.
#pragma once

#include <cstddef>
#include <string>

namespace paratune::bench {

struct SiteLogOptions {
  size_t lines = 100000;
  unsigned seed = 1;
  size_t index_last = 10000;  // write the per-job index markers of the last N jobs (as the plugin does); 0: none
  double oom_share = 0.01, suspect_share = 0.03, duplicate_share = 0.005, broken_share = 0.0005;
  long long first_id = 1000001, start_time = 1735689600;  // the first job's id; end times start after this
};

struct SiteLogFacts {
  size_t lines = 0, jobs = 0, configurations = 0, bytes = 0;
  std::string first_job, last_job;  // job ids, for the look-ups
  long long first_time = 0, last_time = 0;
};

// Writes the log to `path` (replacing it) and the markers under path.index/. Throws std::runtime_error.
SiteLogFacts write_site_log(const std::string& path, const SiteLogOptions& o);

}  // namespace paratune::bench
