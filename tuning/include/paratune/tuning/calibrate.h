// Calibrating the model from the site's logged jobs: per (GPU model, fabric, framework), refit a multiplier on the
// GEMM efficiency (compute_scale) and, when enough multi-node jobs exist, on the fabric efficiency (network_scale),
// minimising the mean Huber loss of the log step-time error (squared up to 10 %, linear beyond, so jobs slowed by
// a sick node do not drag the fit) with a weak pull towards 1 (no change). Stacks are fitted apart because they
// fall short of the model by different amounts on the same hardware: pooled, one stack rescales the other. The
// jobs of stacks with fewer than `min_samples` jobs are pooled per (GPU model, fabric) into a framework-less
// fallback entry; a pool that is still too small keeps the shipped parameters. docs/calibration.md.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
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
  double min_ratio = 0.05, max_ratio = 20;  // a job outside these ratios has a broken report: not used
};

// What a job ran: scenario + layout, shared by the jobs that ran the same (a site repeats a few hundred
// configurations over millions of jobs), with the shipped model's step time for it.
struct SampleConfig {
  advisor::Scenario scenario;
  advisor::Layout layout;
  double shipped_step_s = 0;
};

// A job the fit can use: its configuration + achieved median step time.
struct Sample {
  std::shared_ptr<const SampleConfig> config;
  double achieved_step_s = 0;
  long long time = 0;
  const advisor::Scenario& scenario() const { return config->scenario; }
  const advisor::Layout& layout() const { return config->layout; }
};

// Lines the fit cannot use, by reason ("no achieved figures", "unknown GPU", ...).
using SkipTally = std::map<std::string, size_t>;
// For each reason, the first job skipped for it and the field that made it unusable
// ("job 17: training.global_batch: must be a multiple of ...").
using SkipExamples = std::map<std::string, std::string>;

// The usable samples of a log, one entry at a time (a streamed log): entries with the same scenario and plan
// text (LogEntry::parsed_scenario/parsed_layout) share one configuration, checked and predicted once.
class SampleCollector {
 public:
  explicit SampleCollector(const CalibrateOptions& o) : o_(o) {}
  void add(const LogEntry& e);
  std::vector<Sample>& samples() { return samples_; }
  const SkipTally& skipped() const { return skipped_; }
  const SkipExamples& examples() const { return examples_; }
  size_t configurations() const { return configs_.size(); }

 private:
  struct Checked {  // a configuration once checked: usable (config) or why not
    std::shared_ptr<const SampleConfig> config;
    std::string why, detail;
    std::shared_ptr<const void> keep_scenario, keep_layout;  // the keys stay valid while cached
  };
  const Checked& check(const LogEntry& e);
  void skip(const LogEntry& e, const std::string& why, const std::string& detail);
  CalibrateOptions o_;
  std::vector<Sample> samples_;
  SkipTally skipped_;
  SkipExamples examples_;
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
  size_t samples = 0, multinode = 0;
  bool fitted = false;               // false: below the minimum-sample rule
  std::string note;                  // why not / what was fitted
  double compute_scale = 1, network_scale = 1;
  ErrorStats before, after;
};

struct CalibrationResult {
  advisor::Calibration calibration;  // entries only for fitted groups
  std::vector<GroupReport> groups;
  ErrorStats before, after;          // over all usable samples
};

CalibrationResult calibrate(const std::vector<Sample>& samples, const CalibrateOptions& o = {});

}  // namespace paratune::tuning
