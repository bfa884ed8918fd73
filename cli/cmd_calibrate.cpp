// `paratune calibrate --log FILE -o calibration.toml`: refit the model's efficiency parameters per GPU model,
// fabric and framework from the site's logged jobs, print the before/after error, write the calibration file that the advisor
// applies (advisor/calibration_file.h; docs/calibration.md).
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "command.h"
#include "log_input.h"
#include "paratune/advisor/calibration_file.h"
#include "paratune/tuning/calibrate.h"
#include "paratune/tuning/memory_headroom.h"
#include "paratune/tuning/tuning_log.h"

namespace paratune::cli {
namespace {

using namespace paratune::tuning;

const char* kHelp =
    "usage: paratune calibrate --log FILE|DIR|GLOB... -o FILE [--min-samples N] [--min-multinode N]\n"
    "                          [--since DATE] [--holdout FRACTION]\n"
    "\n"
    "Refit the performance model's efficiency parameters from the jobs in a tuning log: for each GPU model,\n"
    "fabric and framework with at least --min-samples usable jobs (default 5; a job needs its scenario, plan and\n"
    "an achieved step time, or tokens/s), a multiplier on the GEMM efficiency, and with at least --min-multinode\n"
    "multi-node jobs (default 5) one on the fabric efficiency. The jobs of frameworks with fewer jobs are pooled\n"
    "per GPU model and fabric into a framework-less fallback entry. Prints the lines skipped and why, the error\n"
    "|achieved/predicted - 1| before and after per group, and writes the calibration file (TOML) the advisor reads.\n"
    "It also learns a memory head-room per GPU model and framework from jobs that died of an out-of-memory error\n"
    "and jobs whose logged peak came within 10 % of the GPU's memory ([[memory]]; advise adds it to the reserve).\n"
    "--log may be repeated, name a directory of per-node logs or a quoted pattern; copies of a job are merged.\n"
    "\n"
    "  --holdout F      also check the fit honestly: fit on the earliest (1-F) of the jobs by end time and\n"
    "                   report the error on the latest F before and after (the file is still fitted on all)\n"
    "\n"
    "exit status: 0 written, 1 the log cannot be read or the file written, 2 bad option, 3 no usable job\n"
    "(neither for the efficiencies nor for the memory head-room)\n";

std::string pct(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f %%", 100 * v);
  return b;
}

std::string now_iso() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return b;
}

void print_memory(const std::vector<HeadroomGroup>& groups, const SkipTally& skipped) {
  if (groups.empty() && skipped.empty()) return;
  std::printf("memory head-room (out-of-memory deaths and runs near the limit):\n");
  std::printf("  %-18s %-10s %5s %6s  %-12s  %s\n", "gpu", "framework", "ooms", "near", "head-room", "set by");
  for (const auto& g : groups) {
    char h[32], w[64];
    std::snprintf(h, sizeof h, "%.1f GiB", g.headroom_gib);
    std::snprintf(w, sizeof w, "job %s (needed %+.2f GiB)", g.worst_job.c_str(), g.worst_shortfall_gib);
    std::printf("  %-18s %-10s %5zu %6zu  %-12s  %s\n", g.gpu.c_str(), g.framework.c_str(), g.oom_jobs,
                g.near_limit_jobs, h, w);
  }
  if (const std::string why = skipped_summary(skipped); !why.empty()) std::printf("  %s\n", why.c_str());
}

int run(const std::vector<std::string>& args) {
  std::vector<std::string> log_paths;
  std::string out_path;
  CalibrateOptions o;
  LogFilter filter;
  double holdout = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool v = i + 1 < args.size();
    try {
      if (a == "--help" || a == "-h") { std::fputs(kHelp, stdout); return kOk; }
      if (a == "--log" && v) log_paths.push_back(args[++i]);
      else if ((a == "-o" || a == "--output") && v) out_path = args[++i];
      else if (a == "--min-samples" && v) o.min_samples = std::max<size_t>(1, std::stoul(args[++i]));
      else if (a == "--min-multinode" && v) o.min_multinode = std::max<size_t>(1, std::stoul(args[++i]));
      else if (a == "--since" && v) filter.since = parse_date(args[++i]);
      else if (a == "--holdout" && v) {
        holdout = std::stod(args[++i]);
        if (!(holdout > 0 && holdout < 1)) throw std::invalid_argument("must be between 0 and 1");
      } else {
        std::fprintf(stderr, "paratune calibrate: unknown or incomplete option '%s'\n%s", a.c_str(), kHelp);
        return kBadInput;
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "paratune calibrate: %s: %s\n", a.c_str(), e.what());
      return kBadInput;
    }
  }
  if (log_paths.empty() || out_path.empty()) {
    std::fprintf(stderr, "paratune calibrate: --log FILE and -o FILE are required\n%s", kHelp);
    return kBadInput;
  }
  const LogRead in = read_logs(log_paths, "paratune calibrate");
  if (!in.complete) return kFailure;  // a fit on part of the history would be silently different
  const auto& log = in.log;
  std::string log_path = log_paths.front();
  for (size_t k = 1; k < log_paths.size(); ++k) log_path += ", " + log_paths[k];
  std::vector<LogEntry> selected;
  for (const auto& e : log.entries)
    if (filter.matches(e)) selected.push_back(e);
  SkipTally skipped;
  // Lines the reader could not take at all (listed on stderr above) are skipped lines too.
  if (log.unreadable) skipped["unreadable line"] = log.unreadable;
  std::vector<Sample> samples = usable_samples(selected, o, &skipped);
  SkipTally memory_skipped;
  const auto memory = learn_headroom(memory_evidence(selected, {}, &memory_skipped));
  std::printf("paratune calibrate: %zu jobs in %s, %zu usable\n", selected.size(), log_path.c_str(), samples.size());
  if (const std::string why = skipped_summary(skipped); !why.empty()) std::printf("  %s\n", why.c_str());
  if (samples.empty() && memory.empty()) {
    std::fprintf(stderr, "paratune calibrate: no usable job (each needs scenario, plan and achieved, or an "
                         "out-of-memory record or a peak near the limit)\n");
    return kNothingFits;
  }
  print_memory(memory, memory_skipped);

  if (holdout > 0 && samples.size() > 1) {
    std::stable_sort(samples.begin(), samples.end(), [](const Sample& a, const Sample& b) { return a.time < b.time; });
    const size_t cut = std::min(samples.size() - 1, size_t(double(samples.size()) * (1 - holdout)));
    const std::vector<Sample> early(samples.begin(), samples.begin() + long(cut)), late(samples.begin() + long(cut), samples.end());
    const CalibrationResult r = calibrate(early, o);
    const ErrorStats b = error_stats(late, {}), a = error_stats(late, r.calibration);
    std::printf("holdout: fitted on the earliest %zu jobs, checked on the latest %zu: mean error %s -> %s, median %s -> %s\n",
                early.size(), late.size(), pct(b.mean_abs).c_str(), pct(a.mean_abs).c_str(), pct(b.median_abs).c_str(),
                pct(a.median_abs).c_str());
  }

  CalibrationResult r = samples.empty() ? CalibrationResult{} : calibrate(samples, o);
  r.calibration.memory = memory_entries(memory);
  std::printf("%-18s %-11s %-10s %5s %5s  %-10s %-10s  %s\n", "gpu", "fabric", "framework", "jobs", "multi",
              "err before", "err after", "");
  for (const auto& g : r.groups) {
    // The fallback pools the stacks with too few jobs of their own; say which.
    const std::string fw = g.framework.empty() ? "any" : g.framework;
    const std::string note = g.framework.empty() ? g.note + " [fallback for " + g.stacks + "]" : g.note;
    std::printf("%-18s %-11s %-10s %5zu %5zu  %-10s %-10s  %s\n", g.gpu.c_str(), g.fabric.c_str(), fw.c_str(),
                g.samples, g.multinode, pct(g.before.mean_abs).c_str(), pct(g.after.mean_abs).c_str(), note.c_str());
  }
  std::printf("all usable jobs: mean error %s -> %s, median %s -> %s\n", pct(r.before.mean_abs).c_str(),
              pct(r.after.mean_abs).c_str(), pct(r.before.median_abs).c_str(), pct(r.after.median_abs).c_str());
  r.calibration.generated = now_iso();
  r.calibration.source = log_path + " (" + std::to_string(samples.size()) + " jobs)";
  std::ofstream out(out_path, std::ios::trunc);
  out << advisor::to_toml(r.calibration);
  if (!out.good()) {
    std::fprintf(stderr, "paratune calibrate: cannot write %s\n", out_path.c_str());
    return kFailure;
  }
  std::printf("wrote %s (%zu of %zu groups calibrated, %zu memory head-room entries)\n", out_path.c_str(),
              r.calibration.entries.size(), r.groups.size(), r.calibration.memory.size());
  return kOk;
}

Register reg({"calibrate", "refit the model's efficiencies from the tuning log (calibration file)", run});

}  // namespace
}  // namespace paratune::cli
