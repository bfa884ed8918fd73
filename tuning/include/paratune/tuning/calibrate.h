// Calibrating the model from the site's logged jobs: per (GPU model, fabric, framework), refit a multiplier on the
// GEMM efficiency (compute_scale) and, when enough multi-node jobs exist, on the fabric efficiency (network_scale),
// minimising the mean Huber loss of the log step-time error (squared up to 10 %, linear beyond, so jobs slowed by
// a sick node do not drag the fit) with a weak pull towards 1 (no change). Stacks are fitted apart because they
// fall short of the model by different amounts on the same hardware: pooled, one stack rescales the other. The
// jobs of stacks with fewer than `min_samples` jobs are pooled per (GPU model, fabric) into a framework-less
// fallback entry; a pool that is still too small keeps the shipped parameters. docs/calibration.md.
// One user cannot steer it (docs/calibration.md, "One user cannot poison it"): jobs outside a physical range are
// dropped, no user weighs more than `max_user_share` of a group, the fit is trimmed (jobs far off the first fit are
// left out of the second) and a group needs the jobs of two users, or of a user the admin trusts.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "paratune/advisor/calibration_file.h"
#include "paratune/tuning/tuning_log.h"

namespace paratune::tuning {

// Jobs a group needs before it gets an entry (a stack's own, or the (GPU, fabric) fallback). Why 5: same-config
// repeats differ by 2-8 % run to run (data/calibration/README.md), so the mean log error of 5 jobs is known to
// about 8 % / sqrt(5) = 3.6 % -- finer than the difference between stacks this grouping exists for (Megatron on
// H100: 9.8 % error fitted alone, 18.1 % when FSDP jobs shared the fit) -- and one sick-node job among 5 is
// outweighed by the Huber loss's linear tail. With fewer, one job would set the stack's multiplier.
constexpr size_t kMinSamplesPerGroup = 5;

struct CalibrateOptions {
  size_t min_samples = kMinSamplesPerGroup;  // jobs per group before compute_scale is fitted
  bool per_framework = true;         // false: one entry per (GPU, fabric) over all stacks (the earlier grouping)
  size_t min_multinode = 5;          // multi-node jobs in the group before network_scale is fitted
  double prior_weight = 0.02;        // pull of log(scale) towards 0, relative to the mean squared log error
  double huber_delta = 0.1;          // log errors beyond this count linearly (robust to sick-node jobs)
  // The physical range of a job's throughput against the shipped prediction (predicted / achieved step time): a job
  // slower than min_ratio cannot be explained by any GEMM efficiency the fit may choose (compute_scale >= 0.2): its
  // report is broken or something other than the hardware held it back (data loading, a sick node: suspects). A job
  // faster than max_ratio, or faster than the GPUs' dense peak would allow for the model's FLOPs (model FLOPs
  // utilisation above 1), did not happen as reported. Either is dropped and counted, per group.
  double min_ratio = 0.2, max_ratio = 20;
  // No user's jobs weigh more than this share of a group's fit (or 1/users with fewer users: two users, half each).
  // Below a half, the other users together outweigh any single one, so the trimmed fit follows them.
  double max_user_share = 1.0 / 3;
  // Trimmed fit: after a first fit, jobs whose log error lies farther than max(trim_floor, trim_k robust standard
  // deviations) from the median are left out and the group fitted again. trim_floor: log(1.5), a job 50 % off the
  // fitted model -- beyond the run-to-run spread of same-config repeats (2-8 %) and the model's per-configuration
  // error on published runs (median 5 %), so honest jobs are kept; a sick node's jobs (2x) are not.
  double trim_k = 3, trim_floor = 0.405465;
  size_t min_users = 2;              // distinct users whose jobs a fit needs, unless one of them is trusted
  // Timed steps a job's median needs (0 = not logged: kept). Below it the report took its runs whole, warm-up
  // included (docs/tuning-log.md), and a job killed after a step or two measures start-up, not the plan.
  size_t min_steps = 10;
  std::set<std::string> trusted_users;  // `calibrate --trust-user`: their jobs are evidence on their own
};

// What a job ran: scenario + layout, shared by the jobs that ran the same (a site repeats a few hundred
// configurations over millions of jobs), with the shipped model's step time for it.
struct SampleConfig {
  advisor::Scenario scenario;
  advisor::Layout layout;
  double shipped_step_s = 0;
  double fastest_step_s = 0;  // the model's FLOPs at the GPUs' dense peak: no real step is shorter
};

// A job the fit can use: its configuration + achieved median step time, and who ran it (one string per user,
// shared by that user's jobs).
struct Sample {
  std::shared_ptr<const SampleConfig> config;
  double achieved_step_s = 0;
  long long time = 0;
  std::shared_ptr<const std::string> user;  // null: the line named no user (all such jobs count as one user)
  const advisor::Scenario& scenario() const { return config->scenario; }
  const advisor::Layout& layout() const { return config->layout; }
};

// Lines the fit cannot use, by reason ("no achieved figures", "unknown GPU", ...).
using SkipTally = std::map<std::string, size_t>;
// For each reason, the first job skipped for it and the field that made it unusable
// ("job 17: training.global_batch: must be a multiple of ...").
using SkipExamples = std::map<std::string, std::string>;
// Jobs dropped from a stack's fit, by (GPU key, fabric, framework) and reason: the range rule works per job, before
// the groups exist, and `calibrate` reports them with the group that holds the stack.
using StackKey = std::tuple<std::string, std::string, std::string>;
using StackDrops = std::map<StackKey, SkipTally>;
// The reason a job outside the physical range is skipped under.
inline constexpr const char* kOutOfRange = "outside the physical range";

// The usable samples of a log, one entry at a time (a streamed log): entries with the same scenario and plan
// text (LogEntry::parsed_scenario/parsed_layout) share one configuration, checked and predicted once.
class SampleCollector {
 public:
  explicit SampleCollector(const CalibrateOptions& o) : o_(o) {}
  void add(const LogEntry& e);
  std::vector<Sample>& samples() { return samples_; }
  const SkipTally& skipped() const { return skipped_; }
  const SkipExamples& examples() const { return examples_; }
  const StackDrops& stack_drops() const { return stack_drops_; }
  size_t configurations() const { return configs_.size(); }

 private:
  struct Checked {  // a configuration once checked: usable (config) or why not
    std::shared_ptr<const SampleConfig> config;
    std::string why, detail;
    std::shared_ptr<const void> keep_scenario, keep_layout;  // the keys stay valid while cached
  };
  const Checked& check(const LogEntry& e);
  void skip(const LogEntry& e, const std::string& why, const std::string& detail);
  std::shared_ptr<const std::string> user(const std::string& name);
  CalibrateOptions o_;
  std::vector<Sample> samples_;
  SkipTally skipped_;
  SkipExamples examples_;
  StackDrops stack_drops_;
  std::map<std::string, std::shared_ptr<const std::string>, std::less<>> users_;
  std::map<std::pair<const void*, const void*>, Checked> configs_;
  Checked scratch_;
};

// The usable samples of a log; every entry left out is counted in `skipped` under its reason.
std::vector<Sample> usable_samples(const std::vector<LogEntry>& entries, const CalibrateOptions& o, SkipTally* skipped,
                                   SkipExamples* examples = nullptr);
// The same with the tally as "N skipped: reason" lines.
std::vector<Sample> usable_samples(const std::vector<LogEntry>& entries, const CalibrateOptions& o,
                                   std::vector<std::string>* skipped = nullptr);

// "skipped 3: no achieved figures; 1: unknown GPU" (most frequent first); "" when nothing was skipped. With
// examples, each reason is followed by its first case: "1: unknown GPU (job 7: scenario.cluster.gpu 'tpu-v5')".
std::string skipped_summary(const SkipTally& skipped, const SkipExamples* examples = nullptr);

// Predicted step time of a sample under a calibration (the shipped parameters for an empty one).
double predict_step(const Sample& s, const advisor::Calibration& c);

// Error measures over samples: mean and median of |achieved/predicted - 1|.
struct ErrorStats {
  size_t n = 0;
  double mean_abs = 0, median_abs = 0;
};
ErrorStats error_stats(const std::vector<Sample>& samples, const advisor::Calibration& c);

struct GroupReport {
  std::string gpu, fabric;
  std::string framework;             // "" = the fallback: the stacks below min_samples, pooled (listed in `stacks`)
  std::string stacks;                // the frameworks of the group's jobs, "megatron" or "deepspeed, fsdp"
  size_t samples = 0, multinode = 0;  // usable jobs in the group (the range rule passed)
  size_t used = 0, users = 0;        // jobs the fit used (after trimming) and their distinct users
  SkipTally dropped;                 // jobs of the group's stacks left out, by reason (range, trimmed)
  std::vector<std::string> capped;   // "eve: 20 jobs weighted as 33 %": users whose weight the share cap reduced
  bool fitted = false;               // false: below the minimum-sample rule, or evidence of one untrusted user
  std::string note;                  // why not / what was fitted
  double compute_scale = 1, network_scale = 1;
  ErrorStats before, after;
};

struct CalibrationResult {
  advisor::Calibration calibration;  // entries only for fitted groups
  std::vector<GroupReport> groups;
  ErrorStats before, after;          // over all usable samples
};

// `dropped`: the collector's per-stack drops (SampleCollector::stack_drops), reported with each group.
CalibrationResult calibrate(const std::vector<Sample>& samples, const CalibrateOptions& o = {},
                            const StackDrops* dropped = nullptr);

}  // namespace paratune::tuning
