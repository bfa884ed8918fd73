// `paratune calibrate --log FILE -o calibration.toml`: refit the model's efficiency parameters per GPU model,
// fabric and framework from the site's logged jobs, print the before/after error, write the calibration file that the advisor
// applies (advisor/calibration_file.h; docs/calibration.md).
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "input_file.h"
#include "iso_time.h"
#include "options.h"
#include "output_file.h"
#include "log_input.h"
#include "paratune/advisor/calibration_file.h"
#include "paratune/tuning/calibrate.h"
#include "paratune/tuning/calibration_diff.h"
#include "paratune/tuning/memory_headroom.h"
#include "paratune/tuning/tuning_log.h"

namespace paratune::cli {
namespace {

using namespace paratune::tuning;

const char* kDescription =
    "Refit the performance model's efficiency parameters from the jobs in a tuning log: for each GPU model,\n"
    "fabric and framework with at least --min-samples usable jobs (default 5; a job needs its scenario, plan and\n"
    "an achieved step time, or tokens/s), a multiplier on the GEMM efficiency, and with at least --min-multinode\n"
    "multi-node jobs (default 5) one on the fabric efficiency. The jobs of frameworks with fewer jobs are pooled\n"
    "per GPU model and fabric into a framework-less fallback entry. Prints the lines skipped and why, the error\n"
    "|achieved/predicted - 1| before and after per group, and writes the calibration file (TOML) the advisor reads.\n"
    "It also learns a memory head-room per GPU model and framework from jobs that died of an out-of-memory error\n"
    "and jobs whose logged peak came within 10 % of the GPU's memory ([[memory]]; advise adds it to the reserve).\n"
    "--log may be repeated, name a directory of per-node logs or a quoted pattern; copies of a job are merged.\n"
    "One user cannot steer it: jobs outside the physical range are dropped, no user weighs more than\n"
    "--max-user-share of a group, the fit is trimmed, and a group needs the jobs of two users or of a user\n"
    "named by --trust-user; an out-of-memory record counts only when the step failed with the framework's own\n"
    "message, and one user's evidence sets at most a quarter of the GPU as head-room. Per group it prints the jobs\n"
    "and users used, what was dropped and why. --dry-run prints what would change in the file and writes nothing.\n"
    "Entries of an existing -o file that this log does not refit are kept unless --replace; the file is replaced\n"
    "whole (a temporary file renamed over it), never left half-written.";
const char* kFooter =
    "exit status: 0 written, 1 the log cannot be read or the file written, 2 bad option, 3 no usable job\n"
    "(neither for the efficiencies nor for the memory head-room)";

struct CalibrateArgs {
  std::vector<std::string> log_paths;
  std::string out_path, since;
  CalibrateOptions o;
  double holdout = 0;
  std::vector<std::string> trusted;
  bool dry_run = false;
  bool replace = false;
};

std::string pct(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f %%", 100 * v);
  return b;
}

void print_memory(const std::vector<HeadroomGroup>& groups, const SkipTally& skipped) {
  if (groups.empty() && skipped.empty()) return;
  std::printf("memory head-room (out-of-memory deaths and runs near the limit):\n");
  std::printf("  %-18s %-10s %5s %6s %5s  %-12s  %s\n", "gpu", "framework", "ooms", "near", "users", "head-room",
              "set by");
  for (const auto& g : groups) {
    char h[32], w[96];
    std::snprintf(h, sizeof h, "%.1f GiB", g.headroom_gib);
    std::snprintf(w, sizeof w, "job %s (needed %+.2f GiB)", g.worst_job.c_str(), g.worst_shortfall_gib);
    std::printf("  %-18s %-10s %5zu %6zu %5zu  %-12s  %s\n", g.gpu.c_str(), g.framework.c_str(), g.oom_jobs,
                g.near_limit_jobs, g.users, h, w);
    if (!g.held_back.empty()) std::printf("    held back: %s\n", g.held_back.c_str());
  }
  if (const std::string why = skipped_summary(skipped); !why.empty()) std::printf("  %s\n", why.c_str());
}

// What the streamed log left: the usable samples, the skipped lines, the memory evidence.
struct Collected {
  size_t selected = 0;
  SampleCollector samples;
  SkipTally skipped;
  SkipExamples examples;
  std::vector<MemoryEvidence> evidence;
  SkipTally memory_skipped;
  explicit Collected(const CalibrateOptions& o) : samples(o) {}
};

// Streamed: each job leaves its sample (a configuration shared with the jobs that ran the same, a step time, a
// time, its user) or a tally of why not, and its memory evidence; nothing else of it is kept. False when a log
// could not be read whole (a fit on part of the history would be silently different).
bool collect(const CalibrateArgs& args, const HeadroomOptions& ho, Collected* c) {
  LogFilter filter;
  if (!args.since.empty()) filter.since = parse_date(args.since);  // checked by the option's validator
  const LogStream in = stream_logs(args.log_paths, "paratune calibrate", filter, [&](LogEntry& e) {
    ++c->selected;
    c->samples.add(e);
    add_memory_evidence(e, ho, &c->evidence, &c->memory_skipped);
  });
  if (!in.complete) return false;
  c->skipped = c->samples.skipped();
  c->examples = c->samples.examples();
  // Lines the reader could not take at all (listed on stderr above) are skipped lines too.
  if (in.stats.unreadable) {
    c->skipped["unreadable line"] = in.stats.unreadable;
    for (const auto& p : in.stats.problems)
      if (p.message.find("kept without it") == std::string::npos && p.message.find("further problems") == std::string::npos) {
        c->examples["unreadable line"] = p.file + ":" + std::to_string(p.line) + ": " + p.message;
        break;
      }
  }
  return true;
}

void print_holdout(std::vector<Sample>& samples, double holdout, const CalibrateOptions& o) {
  if (!(holdout > 0) || samples.size() < 2) return;
  std::stable_sort(samples.begin(), samples.end(), [](const Sample& a, const Sample& b) { return a.time < b.time; });
  const size_t cut = std::min(samples.size() - 1, size_t(double(samples.size()) * (1 - holdout)));
  const std::vector<Sample> early(samples.begin(), samples.begin() + long(cut)), late(samples.begin() + long(cut), samples.end());
  const CalibrationResult r = calibrate(early, o);
  const ErrorStats b = error_stats(late, {}), a = error_stats(late, r.calibration);
  std::printf("holdout: fitted on the earliest %zu jobs, checked on the latest %zu: mean error %s -> %s, median %s -> %s\n",
              early.size(), late.size(), pct(b.mean_abs).c_str(), pct(a.mean_abs).c_str(), pct(b.median_abs).c_str(),
              pct(a.median_abs).c_str());
}

// Per group: jobs usable, used by the fit and their users, multi-node jobs, the error before and after, the entry;
// then what was dropped and why, and whose weight the share cap reduced.
void print_groups(const CalibrationResult& r) {
  std::printf("%-18s %-11s %-10s %5s %5s %5s %5s  %-10s %-10s  %s\n", "gpu", "fabric", "framework", "jobs", "used",
              "users", "multi", "err before", "err after", "");
  for (const auto& g : r.groups) {
    // The fallback pools the stacks with too few jobs of their own; say which.
    const std::string fw = g.framework.empty() ? "any" : g.framework;
    const std::string note = g.framework.empty() ? g.note + " [fallback for " + g.stacks + "]" : g.note;
    std::printf("%-18s %-11s %-10s %5zu %5zu %5zu %5zu  %-10s %-10s  %s\n", g.gpu.c_str(), g.fabric.c_str(), fw.c_str(),
                g.samples, g.used, g.users, g.multinode, pct(g.before.mean_abs).c_str(), pct(g.after.mean_abs).c_str(),
                note.c_str());
    std::string dropped;
    for (const auto& [why, n] : g.dropped) dropped += (dropped.empty() ? "" : "; ") + std::to_string(n) + " " + why;
    if (!dropped.empty()) std::printf("    dropped: %s\n", dropped.c_str());
    for (const auto& c : g.capped) std::printf("    share capped: %s\n", c.c_str());
  }
  std::printf("all usable jobs: mean error %s -> %s, median %s -> %s\n", pct(r.before.mean_abs).c_str(),
              pct(r.after.mean_abs).c_str(), pct(r.before.median_abs).c_str(), pct(r.after.median_abs).c_str());
}

// --dry-run: what the new calibration changes against the file in force (none yet: everything is new).
int show_changes(const std::string& path, const advisor::Calibration& fresh) {
  advisor::Calibration current;
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    try {
      current = advisor::parse_calibration(read_cli_file(path, "calibration"), path);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "paratune calibrate: %s (compared with an empty calibration)\n", e.what());
    }
  } else {
    std::printf("dry run: %s does not exist yet\n", path.c_str());
  }
  std::printf("dry run: changes to %s:\n", path.c_str());
  for (const auto& line : calibration_changes(current, fresh)) std::printf("  %s\n", line.c_str());
  std::printf("dry run: nothing written\n");
  return kOk;
}

// Entries of the existing file that this log does not fit again (a thin log after rotation, a group that lost its
// second user) stay as they were unless --replace: a refit never silently drops what an earlier, larger log
// established. Prints each kept entry.
size_t carry_over(const std::string& path, advisor::Calibration* fresh) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return 0;
  advisor::Calibration old;
  try {
    old = advisor::parse_calibration(read_cli_file(path, "calibration"), path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "paratune calibrate: %s (nothing kept from it)\n", e.what());
    return 0;
  }
  const size_t before = fresh->entries.size() + fresh->memory.size();
  for (const auto& e : old.entries) {
    const bool refitted = std::any_of(fresh->entries.begin(), fresh->entries.end(), [&](const auto& f) {
      return f.gpu == e.gpu && f.fabric == e.fabric && f.framework == e.framework;
    });
    if (refitted) continue;
    fresh->entries.push_back(e);
    std::printf("kept from %s: %s %s %s (not refitted from this log; --replace drops it)\n", path.c_str(),
                e.gpu.c_str(), e.fabric.empty() ? "any-fabric" : e.fabric.c_str(),
                e.framework.empty() ? "any-framework" : e.framework.c_str());
  }
  for (const auto& m : old.memory) {
    const bool relearned = std::any_of(fresh->memory.begin(), fresh->memory.end(), [&](const auto& f) {
      return f.gpu == m.gpu && f.framework == m.framework;
    });
    if (relearned) continue;
    fresh->memory.push_back(m);
    std::printf("kept from %s: memory head-room %s %s (not relearned from this log; --replace drops it)\n",
                path.c_str(), m.gpu.c_str(), m.framework.empty() ? "any-framework" : m.framework.c_str());
  }
  return fresh->entries.size() + fresh->memory.size() - before;
}

int write_file(const std::string& path, const CalibrationResult& r, size_t kept) {
  try {
    write_output_file(path, advisor::to_toml(r.calibration));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "paratune calibrate: cannot write %s: %s (nothing written)\n", path.c_str(), e.what());
    return kFailure;
  }
  std::printf("wrote %s (%zu calibration and %zu memory head-room entries, %zu of them kept from before; %zu groups "
              "in this log)\n", path.c_str(), r.calibration.entries.size(), r.calibration.memory.size(), kept,
              r.groups.size());
  return kOk;
}

int run(const CalibrateArgs& args) {
  CalibrateOptions o = args.o;
  o.min_samples = std::max<size_t>(1, o.min_samples);  // 0 has always meant 1
  o.min_multinode = std::max<size_t>(1, o.min_multinode);
  o.trusted_users.insert(args.trusted.begin(), args.trusted.end());
  HeadroomOptions ho;
  ho.trusted_users = o.trusted_users;
  Collected c(o);
  if (!collect(args, ho, &c)) return kFailure;
  std::string log_path = args.log_paths.front();
  for (size_t k = 1; k < args.log_paths.size(); ++k) log_path += ", " + args.log_paths[k];
  std::vector<Sample>& samples = c.samples.samples();
  const auto memory = learn_headroom(c.evidence, ho);
  std::printf("paratune calibrate: %zu jobs in %s, %zu usable\n", c.selected, log_path.c_str(), samples.size());
  if (const std::string why = skipped_summary(c.skipped, &c.examples); !why.empty()) std::printf("  %s\n", why.c_str());
  if (samples.empty() && memory.empty()) {
    std::fprintf(stderr, "paratune calibrate: no usable job (each needs scenario, plan and achieved, or an "
                         "out-of-memory record or a peak near the limit)\n");
    return kNothingFits;
  }
  print_memory(memory, c.memory_skipped);
  print_holdout(samples, args.holdout, o);
  CalibrationResult r = samples.empty() ? CalibrationResult{} : calibrate(samples, o, &c.samples.stack_drops());
  r.calibration.memory = memory_entries(memory);
  print_groups(r);
  r.calibration.generated = now_iso();
  r.calibration.source = log_path + " (" + std::to_string(samples.size()) + " jobs)";
  const size_t kept = args.replace ? 0 : carry_over(args.out_path, &r.calibration);
  return args.dry_run ? show_changes(args.out_path, r.calibration) : write_file(args.out_path, r, kept);
}

Action setup(CLI::App& app, const std::vector<std::string>&) {
  auto a = std::make_shared<CalibrateArgs>();
  describe(app, kDescription);
  app.footer(kFooter);
  app.add_option("--log", a->log_paths, "a tuning log, a directory of per-node logs or a quoted pattern (repeatable)")
      ->type_name("FILE")
      ->required();
  app.add_option("-o,--output", a->out_path, "the calibration file to write (TOML)")->type_name("FILE")->required();
  app.add_option("--min-samples", a->o.min_samples, "usable jobs a (GPU, fabric, framework) group needs (default 5)")
      ->type_name("N")
      ->check(options::integer_in(0, 1000000000));
  app.add_option("--min-multinode", a->o.min_multinode, "multi-node jobs the fabric fit needs (default 5)")
      ->type_name("N")
      ->check(options::integer_in(0, 1000000000));
  app.add_option("--since", a->since, "only jobs that ended at or after DATE (as in paratune log)")
      ->type_name("DATE")
      ->check(options::parsed_by([](const std::string& v) { parse_date(v); }));
  app.add_option("--holdout", a->holdout,
                 "also check the fit honestly: fit on the earliest (1-F) of the jobs by end time and\n"
                 "report the error on the latest F before and after (the file is still fitted on all)")
      ->type_name("F")
      ->check(options::number_in(0, 1, true, true, "a fraction between 0 and 1"));
  app.add_option("--trust-user", a->trusted,
                 "a user whose jobs are evidence on their own: a group of only their jobs is fitted, and\n"
                 "their memory evidence sets the head-room beyond one user's bound (repeatable)")
      ->type_name("NAME");
  app.add_option("--max-user-share", a->o.max_user_share,
                 "the largest share of a group's weight one user's jobs may have (default 1/3; with fewer\n"
                 "users, 1/users)")
      ->type_name("F")
      ->check(options::number_in(0, 1, true, false, "a fraction in (0, 1]"));
  app.add_flag("--dry-run", a->dry_run, "print what would change in the -o file and write nothing");
  app.add_flag("--replace", a->replace,
               "write only what this log fits: drop the -o file's entries it does not refit (kept by default)");
  return [a] { return run(*a); };
}

Register reg{"calibrate", "refit the model's efficiencies from the tuning log (calibration file)", setup};

}  // namespace
}  // namespace paratune::cli
