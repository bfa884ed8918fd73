// Reading the site tuning log (one JSON object per line, README "The tuning log"; docs/tuning-log.md). A bad line
// is reported with its line number and skipped, never fatal; every field is optional except what a use needs.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "paratune/advisor/plan.h"
#include "paratune/advisor/scenario.h"

namespace paratune::tuning {

// An out-of-memory death the job's report recorded (`paratune run` recognised it in the framework's output;
// docs/tuning-log.md "Out-of-memory deaths").
struct OomRecord {
  std::string kind;                      // "cuda", "hip" (PyTorch's caching allocator), "nccl"
  std::optional<double> tried_gib, capacity_gib, free_gib;  // as the message gave them
  std::optional<double> predicted_gib;   // "oom"."predicted_memory_gib": the plan's predicted memory per GPU
  std::string message;                   // the recognised line, capped
};

// A line's scenario or plan as read (scenario_json.h), or why it could not be.
template <class T>
struct ParsedPart {
  std::optional<T> value;
  std::string problem;
};

struct LogEntry {
  size_t line = 0;                       // 1-based line number in the log
  std::string file;                      // the file the line came from ("" = a single unnamed text)
  std::string step_id;
  bool truncated = false;                // the line says "truncated": true (bulky fields left out)
  long long time = 0;                    // "time": job end, unix seconds (or an ISO-8601 string)
  std::string job_id, user, partition, host, gpu_model, state, report;
  std::string cluster;                   // "cluster": added by a site that ships several clusters' lines together
  // What copies of one job share: the job id within its cluster (job ids are unique only within one Slurm cluster,
  // and restart from 1 after slurmctld loses its state): "CLUSTER:ID", or the id alone on lines without a cluster.
  std::string merge_key() const { return cluster.empty() ? job_id : cluster + ":" + job_id; }
  int nodes = 0, gpus_per_node = 0;
  std::vector<std::string> node_names;   // "node_list" (array or Slurm hostlist string), else "host"
  std::optional<advisor::Scenario> scenario;  // when "scenario" parses
  std::optional<advisor::Layout> layout;      // when "plan" parses
  std::string scenario_problem;          // why scenario/layout did not parse
  // What scenario and layout were read from. The streaming reader shares one between lines of the same text, so
  // that the calibration fit can predict each distinct configuration once; null when the line had none.
  std::shared_ptr<const ParsedPart<advisor::Scenario>> parsed_scenario;
  std::shared_ptr<const ParsedPart<advisor::Layout>> parsed_layout;
  double predicted_step_s = 0, predicted_tokens_per_s = 0;
  bool predicted_calibrated = false;     // "predicted"."calibrated": the plan used a site calibration entry
  double predicted_tokens_per_s_per_gpu = 0, predicted_memory_gib = 0;
  // "achieved"."median_step_time_s", or else tokens per step / "achieved"."tokens_per_s" (tokens per step from
  // "achieved"."tokens_per_step", or the scenario's global batch x sequence length).
  std::optional<double> achieved_step_s, achieved_p10_s, achieved_p90_s;
  size_t achieved_steps = 0;
  std::optional<double> achieved_tokens_per_step;  // "achieved"."tokens_per_step" as the job's report counted them
  // What says the job did not run the logged plan: the PARATUNE_* variables the user's own values replaced
  // ("env_kept": their scripts read those) and the nodes whose hardware differed from the plan's
  // ("node_checks"."mismatch", or its count where the line was cut).
  std::vector<std::string> kept_paratune_vars;
  size_t node_mismatches = 0;
  std::optional<double> peak_memory_gib;  // "achieved"."peak_memory_gib": the framework's logged peak per GPU
  std::optional<OomRecord> oom;          // the job died of an out-of-memory error
  bool flagged = false;                  // the line carries a "suspect" flag
  std::vector<std::string> flagged_nodes;
  std::string suspect_basis;             // "suspect"."basis"; "" on lines judged before the basis was recorded

  // achieved / predicted throughput (predicted step / achieved median step), when both are known.
  std::optional<double> ratio() const;
  std::string fabric() const;            // the scenario's fabric, "" without a scenario
  std::string framework() const;         // the scenario's training.framework, "" without a scenario
  // The plan's framework and the version its arguments were for: the line's "framework" / "framework_version".
  std::string plan_framework, plan_framework_version;
  // plan_framework_version, else the scenario's training.framework_version; "" on lines older than both.
  std::string framework_version() const;
  std::string model() const;             // the scenario's model name (preset), "" without a scenario
  int gpus() const;                      // nodes x GPUs per node (the scenario's when known)
  // Achieved tokens/s per GPU: predicted tokens/s per GPU x ratio, or the scenario's tokens per step / achieved
  // step time / GPUs; nullopt when neither is known.
  std::optional<double> achieved_tokens_per_s_per_gpu() const;
  std::optional<double> predicted_per_gpu() const;  // predicted tokens/s per GPU (logged, or derived)
  double gpu_memory_gib() const;         // the GPU's capacity the model planned with (catalog or gpu_spec), 0 unknown
  bool nodes_known() const { return !node_names.empty(); }
};

struct LogProblem {
  size_t line = 0;
  std::string message;
};

struct TuningLog {
  std::vector<LogEntry> entries;
  std::vector<LogProblem> problems;
  size_t lines = 0;                      // non-empty lines
};

struct ReadLimits {
  size_t max_line_bytes = 1 << 20;
  size_t max_problems = 1000;            // further problems are counted in the last one's message
};

TuningLog read_tuning_log(std::string_view content, const ReadLimits& limits = {});

// "node[01-03,07],gpu-a" -> node01 node02 node03 node07 gpu-a (Slurm hostlist; bounded to 100000 names).
std::vector<std::string> expand_hostlist(std::string_view list);

// "2025-03-01", "2025-03-01T12:30", "2025-03-01 12:30:05" (UTC), ISO-8601 with a zone ("2025-03-01T12:30:05.5Z",
// "2025-03-01T14:30:05+02:00") or unix seconds ("@1740787200" or digits).
// Throws std::invalid_argument naming the accepted forms.
long long parse_date(std::string_view text);
// The end of what `t` names, for an inclusive upper bound: a date alone (YYYY-MM-DD) is its last second (23:59:59
// UTC), so that --since D --until D selects that day; any other form is parse_date's instant.
long long parse_date_end(std::string_view t);
std::string format_date(long long unix_seconds);  // "2025-03-01 12:30" UTC

// Which entries a command reads; every field empty/unset: all. Applied to what the first pass of the streaming
// reader reads (job_id, time, user, partition, gpu_model, the scenario), so before any entry is built.
struct LogFilter {
  std::optional<long long> since, until;  // end time at or after / at or before
  std::string user, partition;
  std::string job_id;                     // this job only
  std::string gpu;                        // LogEntry::gpu_model (the line's, else the scenario's cluster.gpu)
  std::string framework;                  // the scenario's training.framework (LogEntry::framework())
  bool matches(const LogEntry& e) const;
};

}  // namespace paratune::tuning
