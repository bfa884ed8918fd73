// `paratune summary --job ID [--log ...]`: the job's one-line summary (plan, predicted vs achieved, suspect, OOM)
// for the job's AdminComment: packaging/slurmctld-epilog-paratune.sh calls it once per finished job, so it reads
// the job's line through the writer's index, or else a bounded part of the log backwards
// (tuning/scan/job_index.h), never the whole log.
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "command.h"
#include "log_input.h"
#include "options.h"
#include "paratune/tuning/job_summary.h"
#include "paratune/tuning/report.h"
#include "paratune/tuning/scan/byte_source.h"
#include "paratune/tuning/scan/job_index.h"

namespace paratune::cli {
namespace {

const char* kDescription =
    "Print the one-line summary of job ID from the tuning log (default /var/log/paratune/tuning.jsonl):\n"
    "  paratune: megatron tp=2 pp=1 dp=4 cp=1 mb=2 zero=1 rc=selective; predicted 1.234 s/step, achieved\n"
    "  1.402 s (ratio 0.88); suspect: no\n"
    "printable ASCII, at most 400 bytes: what the slurmctld epilog writes into the job's AdminComment.\n"
    "The line is found through the log's per-job index (NAME.index/, written with each line), else by reading\n"
    "the log backwards, newest file first, up to --scan-limit MiB (the job just ended: its line is near the end).\n"
    "--threshold is the site's suspect_ratio (default 0.7; widened when the prediction was uncalibrated).";
const char* kFooter = "exit status: 0 printed, 1 the log cannot be read, 2 bad option, 3 the job has no line (yet)";

struct SummaryArgs {
  std::vector<std::string> paths;
  std::string job;
  double threshold = tuning::kDefaultSuspectThreshold;
  unsigned long long scan_limit_mib = tuning::scan::kDefaultScanLimit >> 20;
  bool verbose = false;
};

// Whether any of the files can be opened (else the log "cannot be read": status 1, not 3).
bool any_readable(const std::vector<std::string>& files) {
  bool any = false;
  for (const auto& f : files) {
    try {
      tuning::scan::FileSource src(f);
      any = true;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "paratune summary: %s\n", e.what());
    }
  }
  return any;
}

int run(const SummaryArgs& a) {
  const auto files = expand_logs(a.paths, "paratune summary");
  if (!any_readable(files)) return kFailure;
  const auto found = tuning::scan::find_job(files, a.job, uint64_t(a.scan_limit_mib) << 20);
  if (a.verbose) {
    for (const auto& p : found.problems) std::fprintf(stderr, "paratune summary: %s\n", p.c_str());
    std::fprintf(stderr, "paratune summary: job %s: %s\n", a.job.c_str(), found.how.c_str());
  }
  if (found.entry) {
    std::printf("%s\n", tuning::job_summary(*found.entry, a.threshold).c_str());
    return kOk;
  }
  const std::string bounded = found.scanned_everything
                                  ? ""
                                  : " (none indexed, none in the last " + std::to_string(a.scan_limit_mib) +
                                        " MiB read; --scan-limit 0 reads everything)";
  std::fprintf(stderr, "paratune summary: job %s: no line in the tuning log%s\n", a.job.c_str(), bounded.c_str());
  return kNothingFits;
}

Action setup(CLI::App& app, const std::vector<std::string>&) {
  auto a = std::make_shared<SummaryArgs>();
  describe(app, kDescription);
  app.footer(kFooter);
  app.add_option("--job", a->job, "the Slurm job id")
      ->type_name("ID")
      ->required()
      ->check(options::parsed_by([](const std::string& v) {
        if (v.empty() || v.find_first_not_of("0123456789_") != std::string::npos)
          throw std::invalid_argument("'" + v + "': expected a Slurm job id (digits, '_' for array tasks)");
      }));
  app.add_option("--log", a->paths,
                 "a tuning log, a directory of per-node logs or a quoted pattern (repeatable; default\n"
                 "/var/log/paratune/tuning.jsonl)")
      ->type_name("FILE");
  app.add_option("--threshold", a->threshold, "the site's suspect_ratio (default 0.7)")
      ->type_name("R")
      ->check(options::number_in(0, 10, false, false, "a ratio in [0, 10] (0: judge no ratio, as suspect_ratio = 0)"));
  app.add_option("--scan-limit", a->scan_limit_mib,
                 "without an index marker, read at most the last N MiB of the logs (default 64; 0: all)")
      ->type_name("N")
      ->check(options::integer_in(0, 1LL << 30));
  app.add_flag("--verbose", a->verbose, "say on stderr how the line was found (index or scan)");
  return [a] { return run(*a); };
}

Register reg{"summary", "one job's one-line summary (for the slurmctld epilog's AdminComment)", setup};

}  // namespace
}  // namespace paratune::cli
