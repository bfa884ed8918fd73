// `paratune summary --job ID [--log ...]`: the job's one-line summary (plan, predicted vs achieved, suspect, OOM)
// for the job's AdminComment: packaging/slurmctld-epilog-paratune.sh calls it (tuning/job_summary.h).
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

namespace paratune::cli {
namespace {

const char* kDescription =
    "Print the one-line summary of job ID from the tuning log (default /var/log/paratune/tuning.jsonl):\n"
    "  paratune: megatron tp=2 pp=1 dp=4 cp=1 mb=2 zero=1 rc=selective; predicted 1.234 s/step, achieved\n"
    "  1.402 s (ratio 0.88); suspect: no\n"
    "printable ASCII, at most 400 bytes: what the slurmctld epilog writes into the job's AdminComment.\n"
    "--threshold is the site's suspect_ratio (default 0.7; widened when the prediction was uncalibrated).";
const char* kFooter = "exit status: 0 printed, 1 the log cannot be read, 2 bad option, 3 the job has no line (yet)";

struct SummaryArgs {
  std::vector<std::string> paths;
  std::string job;
  double threshold = tuning::kDefaultSuspectThreshold;
};

int run(const SummaryArgs& a) {
  const std::vector<std::string>& paths = a.paths;
  const std::string& job = a.job;
  const double threshold = a.threshold;
  const LogRead in = read_logs(paths, "paratune summary");
  if (!in.any) return kFailure;
  for (const auto& e : in.log.entries) {
    if (e.job_id != job) continue;
    std::printf("%s\n", tuning::job_summary(e, threshold).c_str());
    return kOk;
  }
  std::fprintf(stderr, "paratune summary: job %s: no line in the tuning log\n", job.c_str());
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
      ->check(options::number_in(0, 10, true, false, "a ratio in (0, 10]"));
  return [a] { return run(*a); };
}

Register reg{"summary", "one job's one-line summary (for the slurmctld epilog's AdminComment)", setup};

}  // namespace
}  // namespace paratune::cli
