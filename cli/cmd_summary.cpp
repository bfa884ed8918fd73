// `paratune summary --job ID [--log ...]`: the job's one-line summary (plan, predicted vs achieved, suspect, OOM)
// for the job's AdminComment: packaging/slurmctld-epilog-paratune.sh calls it (tuning/job_summary.h).
#include <cstdio>
#include <string>
#include <vector>

#include "command.h"
#include "log_input.h"
#include "paratune/tuning/job_summary.h"
#include "paratune/tuning/report.h"

namespace paratune::cli {
namespace {

const char* kHelp =
    "usage: paratune summary --job ID [--log FILE|DIR|GLOB]... [--threshold R]\n"
    "\n"
    "Print the one-line summary of job ID from the tuning log (default /var/log/paratune/tuning.jsonl):\n"
    "  paratune: megatron tp=2 pp=1 dp=4 cp=1 mb=2 zero=1 rc=selective; predicted 1.234 s/step, achieved\n"
    "  1.402 s (ratio 0.88); suspect: no\n"
    "printable ASCII, at most 400 bytes: what the slurmctld epilog writes into the job's AdminComment.\n"
    "--threshold is the site's suspect_ratio (default 0.7; widened when the prediction was uncalibrated).\n"
    "\n"
    "exit status: 0 printed, 1 the log cannot be read, 2 bad option, 3 the job has no line (yet)\n";

int run(const std::vector<std::string>& args) {
  std::vector<std::string> paths;
  std::string job;
  double threshold = tuning::kDefaultSuspectThreshold;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool v = i + 1 < args.size();
    try {
      if (a == "--help" || a == "-h") { std::fputs(kHelp, stdout); return kOk; }
      if (a == "--job" && v) job = args[++i];
      else if (a == "--log" && v) paths.push_back(args[++i]);
      else if (a == "--threshold" && v) {
        threshold = std::stod(args[++i]);
        if (!(threshold > 0 && threshold <= 10)) throw std::invalid_argument("must be in (0, 10]");
      } else {
        std::fprintf(stderr, "paratune summary: unknown or incomplete option '%s'\n%s", a.c_str(), kHelp);
        return kBadInput;
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "paratune summary: %s: %s\n", a.c_str(), e.what());
      return kBadInput;
    }
  }
  if (job.empty() || job.find_first_not_of("0123456789_") != std::string::npos) {
    std::fprintf(stderr, "paratune summary: --job ID (a Slurm job id) is required\n%s", kHelp);
    return kBadInput;
  }
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

Register reg({"summary", "one job's one-line summary (for the slurmctld epilog's AdminComment)", run});

}  // namespace
}  // namespace paratune::cli
