// The job's throughput report ($PARATUNE_REPORT): JSON lines such as {"step": 120, "step_time_s": 4.21,
// "tokens": 8388608}. `step_time_s` is required (a positive, finite number of seconds), `step` (integer >= 0) and
// `tokens` (tokens per step, >= 0) are optional, other keys are ignored. The file is untrusted user input: parsing
// is bounded and defensive, a bad line is counted and skipped, never fatal.
//
// At job end the plugin reads the file (as the job's user, O_NOFOLLOW, bounded: common::read_bounded) and calls
//   ReportSummary s = summarize_report(content, truncated);
//   add_achieved(record, s, rule, nodes);   // "achieved", "report", "ratio", "suspect" of the tuning-log line
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "paratune/tuning/stats.h"

namespace paratune::tuning {

struct ReportSample {
  std::optional<long long> step;
  double step_time_s = 0;
  std::optional<double> tokens;  // tokens per step
};

struct ReportLimits {
  size_t max_line_bytes = 4096;     // longer lines are counted bad, not parsed
  size_t max_samples = 200000;      // later samples are ignored (counted in `ignored`)
  double max_step_time_s = 7 * 86400.0;
};

// {"event": "oom", "kind": "cuda", "tried_gib": 0.02, "capacity_gib": 23.65, "free_gib": 0.01, "message": "..."}:
// `paratune run` saw the framework die of an out-of-memory error (the first such line counts).
struct ReportOom {
  std::string kind;                 // "cuda", "hip", "nccl" (anything else: "unknown")
  std::optional<double> tried_gib, capacity_gib, free_gib;
  std::string message;              // at most 300 bytes
};

struct ParsedReport {
  std::vector<ReportSample> samples;
  std::optional<ReportOom> oom;
  std::optional<double> peak_memory_gib;  // the largest {"event": "memory", "peak_gib": X}
  size_t events = 0;                // event lines (not samples, not bad)
  size_t lines = 0;                 // non-empty lines seen
  size_t bad_lines = 0;             // not a JSON object, no valid step_time_s, too long, binary ...
  size_t ignored = 0;               // valid but beyond max_samples
  std::string first_problem;        // "line N: what" of the first bad line
};

ParsedReport parse_report(std::string_view content, const ReportLimits& limits = {});

// Fewer timed steps than this say too little to flag a job's nodes as suspect (the ratio is still recorded).
inline constexpr size_t kMinStepsToJudge = 4;

struct ReportSummary {
  bool valid = false;
  std::string invalid_reason;       // when !valid: "empty", "no valid line (line 1: ...)", ...
  RobustStats step_time;            // of the settled steps (seconds)
  size_t samples = 0;               // valid samples in the file
  size_t warmup_excluded = 0;
  size_t duplicate_steps = 0;       // samples of a step already reported (one per node of a multi-node job): dropped
  size_t bad_lines = 0;
  bool truncated = false;           // the reader stopped at its size bound
  std::optional<double> tokens_per_step;  // median of `tokens` over the settled steps, when given
  std::optional<ReportOom> oom;           // the job died of an out-of-memory error (recorded even when invalid)
  std::optional<double> peak_memory_gib;  // the framework's logged peak memory per GPU
  std::optional<double> tokens_per_s() const;  // tokens_per_step / median step time
};

// Parse, order by step when steps are given, drop the warm-up, summarise. `truncated`: the caller's bounded read
// stopped early (recorded; the summary still uses what was read).
ReportSummary summarize_report(std::string_view content, bool truncated = false, const WarmupRule& warmup = {},
                               const ReportLimits& limits = {});

// {"median_step_time_s", "p10_step_time_s", "p90_step_time_s", "steps", "warmup_excluded", "samples",
//  "bad_lines", "truncated", ["tokens_per_step", "tokens_per_s", "peak_memory_gib"]} for a valid summary; null
// otherwise.
nlohmann::json to_json(const ReportSummary& s);

// "ok", "ok: 3 bad lines ignored", "ok: truncated at the size limit", or "invalid: <reason>".
std::string report_status(const ReportSummary& s);

// achieved throughput / predicted throughput (= predicted step time / achieved median step time); nullopt when
// either is missing or not positive.
std::optional<double> achieved_ratio(double predicted_step_s, const ReportSummary& s);

// A job is suspect when its ratio is below the threshold (policy; default 0.7).
constexpr double kDefaultSuspectThreshold = 0.7;
bool is_suspect(double ratio, double threshold = kDefaultSuspectThreshold);

// How far a healthy job may fall short of an uncalibrated prediction. docs/accuracy.md, "Leave one source out":
// predicting runs of a source the parameters were not fitted to, the model is optimistic by at most +21 % for 95 %
// of the runs and +70 % for 99 % (MAPE 9.7 %). A site's own stack is out of sample in the same way: a healthy job
// may run at 1 / 1.70 = 0.59 of the prediction. The policy's threshold is widened by 40 % (0.7 -> 0.7 x (1 - 0.4)
// = 0.42, below 0.59) until a calibration entry covers the job. docs/tuning-log.md.
constexpr double kDefaultUncalibratedError = 0.4;

// What a ratio is judged against. calibrated: the prediction came from a site calibration entry for the job's
// (GPU, fabric, framework) (advisor::find_entry), so its known error is small and the threshold applies as is.
// Otherwise the threshold is widened by the model's out-of-sample error.
struct SuspectRule {
  double threshold = kDefaultSuspectThreshold;  // the policy's suspect_ratio (0 = never flag)
  bool calibrated = false;
  double uncalibrated_error = kDefaultUncalibratedError;

  double effective_threshold() const;  // threshold, or threshold x (1 - uncalibrated_error)
  std::string basis() const;           // "calibrated" | "uncalibrated, threshold widened by 40 %"
  bool suspect(double ratio) const { return is_suspect(ratio, effective_threshold()); }
};

// The rule for a record at job end: `threshold`, calibrated when record["predicted"]["calibrated"] is true (what
// job::decision_record writes when the plan's prediction used a calibration entry).
SuspectRule suspect_rule_for(const nlohmann::json& record, double threshold);

// Fill a tuning-log record (the object job::tuning_record made, with "predicted"."step_time_s") at job end:
//   "report": report_status(s); "achieved": to_json(s) (valid only); "ratio"; and, when rule.suspect(ratio),
//   "suspect": {"threshold": the effective threshold, "policy_threshold": rule.threshold, "basis": rule.basis(),
//               "nodes": [...]}.
// With an out-of-memory record, "oom": {"kind", "tried_gib", "capacity_gib", "free_gib", "message"} (also when the
// report is otherwise invalid: a job that died before its first step). The plugin adds "predicted_memory_gib".
// A missing report (the job wrote none) is recorded as "report": "missing" by passing std::nullopt.
void add_achieved(nlohmann::json& record, const std::optional<ReportSummary>& s, const SuspectRule& rule,
                  const std::vector<std::string>& nodes);
// The earlier form: the rule is suspect_rule_for(record, threshold), so a record whose "predicted" does not say
// "calibrated": true is judged against the widened threshold.
void add_achieved(nlohmann::json& record, const std::optional<ReportSummary>& s, double threshold,
                  const std::vector<std::string>& nodes);

}  // namespace paratune::tuning
