// The node's Prometheus metrics for node_exporter's textfile collector (plugstack `metrics_file=`; README
// "Metrics where admins look"). Counters must survive from job to job, so the plugin keeps them in a root-only
// state file beside the textfile (.NAME.state, JSON) and re-renders the textfile from it after each step:
//   lock .NAME.lock (flock, bounded wait) -> read the state -> add this step's events -> write the state and the
//   textfile atomically (temporary file + rename in the same directory, through the checked directory's
//   descriptor) -> unlock.
// The same file-safety rules as the tuning log (safe_file.h): the directory must be root's and not
// group/world-writable, nothing is followed through a symlink, a file with a second link or another owner is
// refused. The textfile is 0644 (node_exporter runs as its own user); the state and the lock are 0600.
// Label values are bounded sets (partition names, catalog GPU keys, framework and mode names, failure kinds),
// and every family is capped at kMaxSeries series, so a site cannot grow the file without bound.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace paratune::job {

inline constexpr size_t kMaxSeries = 500;
inline constexpr size_t kMaxStateBytes = 1u << 20;

// What one step on one node adds.
struct MetricsEvents {
  std::string partition;
  // Job-level events (node 0, with the job's tuning-log line):
  std::optional<std::string> decision_mode, decision_framework;  // a decision was made
  size_t policy_changes = 0;
  std::optional<double> ratio;          // achieved / predicted throughput
  bool suspect = false;
  std::optional<std::string> oom_gpu, oom_framework;  // the job died of an out-of-memory error
  // This node's failures, by kind (failure_kind()).
  std::vector<std::string> failures;
  bool empty() const;
};

// The failure kinds (a closed set: bounded label values): "policy", "probe", "decide", "nothing_fits",
// "timeout", "report_missing", "report_invalid", "tuning_log", "other".
std::string failure_kind(const std::string& where, const std::string& message);

// The ratio histogram's upper bounds (le): around the suspect thresholds 0.42 / 0.7 and the model's error band.
const std::vector<double>& ratio_buckets();

// Pure: the state (JSON) with the events added; the textfile rendered from a state.
nlohmann::json add_events(nlohmann::json state, const MetricsEvents& e);
std::string render_metrics(const nlohmann::json& state, long long now_unix);

// The whole update as root (see above). Throws std::runtime_error / std::system_error naming the file; a lock
// that cannot be had within ~2 s skips the update (the counters stay consistent) and says so by throwing.
void update_metrics_file(const std::string& path, const MetricsEvents& e, long long now_unix);

}  // namespace paratune::job
