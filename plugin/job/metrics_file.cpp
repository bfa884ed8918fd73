#include "metrics_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <system_error>

#include "paratune/common/safe_file.h"

namespace paratune::job {

using common::UniqueFd;
using common::ensure_directory;
using common::write_file_atomic;
using common::lock_in_directory;
using common::read_owned_file_at;

using nlohmann::json;

namespace {

struct Family {
  const char* name;
  const char* type;
  const char* help;
};

constexpr Family kCounters[] = {
    {"paratune_decisions_total", "counter", "Jobs paratune made a plan for (counted with the job's tuning-log line)."},
    {"paratune_failures_total", "counter", "paratune failures on this node by kind (the job ran untouched unless on_error = closed)."},
    {"paratune_policy_changes_total", "counter", "Changes the site policy made to jobs' plans."},
    {"paratune_suspect_jobs_total", "counter", "Jobs whose achieved/predicted ratio was below the suspect threshold."},
    {"paratune_oom_jobs_total", "counter", "Jobs that died of an out-of-memory error (recognised by paratune run)."},
};
constexpr Family kRatio = {"paratune_ratio", "histogram", "Achieved / predicted throughput of jobs with a report."};

// Prometheus text format: a label value escapes backslash, double quote and newline.
std::string escape_label(const std::string& v) {
  std::string out;
  for (char c : v.substr(0, 128)) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

std::string labels(const std::vector<std::pair<std::string, std::string>>& kv) {
  std::string out;
  for (const auto& [k, v] : kv) out += (out.empty() ? "" : ",") + k + "=\"" + escape_label(v) + "\"";
  return out;
}

// state[section][family][labels] += by, unless the family is full.
void bump(json& state, const char* family, const std::string& key, double by = 1) {
  json& fam = state["counters"][family];
  if (!fam.is_object()) fam = json::object();
  if (!fam.contains(key) && fam.size() >= kMaxSeries) return;
  const double old = fam.contains(key) && fam[key].is_number() ? fam[key].get<double>() : 0;
  fam[key] = old + by;
}

void observe_ratio(json& state, const std::string& key, double ratio) {
  json& fam = state["histograms"][kRatio.name];
  if (!fam.is_object()) fam = json::object();
  if (!fam.contains(key) && fam.size() >= kMaxSeries) return;
  json& h = fam[key];
  const auto& bounds = ratio_buckets();
  if (!h.is_object() || !h.contains("buckets") || !h["buckets"].is_array() || h["buckets"].size() != bounds.size())
    h = {{"buckets", std::vector<double>(bounds.size(), 0)}, {"sum", 0.0}, {"count", 0.0}};
  for (size_t i = 0; i < bounds.size(); ++i)
    if (ratio <= bounds[i]) h["buckets"][i] = h["buckets"][i].get<double>() + 1;  // cumulative, as Prometheus's
  h["sum"] = h["sum"].get<double>() + ratio;
  h["count"] = h["count"].get<double>() + 1;
}

std::string value(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.15g", std::isfinite(v) ? v : 0.0);
  return b;
}

std::string render_histogram(const json& fam) {
  std::string out = std::string("# HELP ") + kRatio.name + " " + kRatio.help + "\n# TYPE " + kRatio.name + " " +
                    kRatio.type + "\n";
  const auto& bounds = ratio_buckets();
  for (const auto& [key, h] : fam.items()) {
    if (!h.is_object() || !h.contains("buckets") || h["buckets"].size() != bounds.size()) continue;
    const std::string sep = key.empty() ? "" : ",";
    for (size_t i = 0; i < bounds.size(); ++i)
      out += std::string(kRatio.name) + "_bucket{" + key + sep + "le=\"" + value(bounds[i]) + "\"} " +
             value(h["buckets"][i].get<double>()) + "\n";
    out += std::string(kRatio.name) + "_bucket{" + key + sep + "le=\"+Inf\"} " + value(h["count"].get<double>()) + "\n";
    const std::string braces = key.empty() ? "" : "{" + key + "}";
    out += std::string(kRatio.name) + "_sum" + braces + " " + value(h["sum"].get<double>()) + "\n";
    out += std::string(kRatio.name) + "_count" + braces + " " + value(h["count"].get<double>()) + "\n";
  }
  return out;
}

}  // namespace

bool MetricsEvents::empty() const {
  return !decision_mode && policy_changes == 0 && !ratio && !suspect && !oom_gpu && failures.empty();
}

std::string failure_kind(const std::string& where, const std::string& message) {
  if (message.find("nothing fits") != std::string::npos) return "nothing_fits";
  if (message.find("did not finish within") != std::string::npos) return "timeout";
  if (where == "policy" || where == "report_missing" || where == "report_invalid" || where == "tuning_log" ||
      where == "admin_comment")
    return where;
  if (where == "init_post_opt") return message.find("probe") != std::string::npos ? "probe" : "other";
  if (where == "user_init") return "decide";
  return "other";
}

const std::vector<double>& ratio_buckets() {
  static const std::vector<double> b = {0.25, 0.42, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0};
  return b;
}

json add_events(json state, const MetricsEvents& e) {
  if (!state.is_object()) state = json::object();
  state["version"] = 1;
  const std::string part = labels({{"partition", e.partition}});
  if (e.decision_mode)
    bump(state, "paratune_decisions_total",
         labels({{"partition", e.partition}, {"mode", *e.decision_mode}, {"framework", e.decision_framework.value_or("")}}));
  for (const auto& f : e.failures) bump(state, "paratune_failures_total", labels({{"kind", f}}));
  if (e.policy_changes) bump(state, "paratune_policy_changes_total", part, double(e.policy_changes));
  if (e.suspect) bump(state, "paratune_suspect_jobs_total", part);
  if (e.oom_gpu)
    bump(state, "paratune_oom_jobs_total", labels({{"gpu", *e.oom_gpu}, {"framework", e.oom_framework.value_or("")}}));
  if (e.ratio && std::isfinite(*e.ratio) && *e.ratio >= 0) observe_ratio(state, part, *e.ratio);
  return state;
}

std::string render_metrics(const json& state, long long now_unix) {
  std::string out;
  const json counters = state.is_object() && state.contains("counters") ? state["counters"] : json::object();
  for (const Family& f : kCounters) {
    out += std::string("# HELP ") + f.name + " " + f.help + "\n# TYPE " + f.name + " " + f.type + "\n";
    if (!counters.contains(f.name) || !counters[f.name].is_object()) continue;
    for (const auto& [key, v] : counters[f.name].items())
      if (v.is_number()) out += std::string(f.name) + (key.empty() ? "" : "{" + key + "}") + " " + value(v.get<double>()) + "\n";
  }
  const json hist = state.is_object() && state.contains("histograms") ? state["histograms"] : json::object();
  out += render_histogram(hist.contains(kRatio.name) && hist[kRatio.name].is_object() ? hist[kRatio.name] : json::object());
  out += "# HELP paratune_metrics_updated_seconds When paratune last updated this file (unix time).\n"
         "# TYPE paratune_metrics_updated_seconds gauge\n"
         "paratune_metrics_updated_seconds " + std::to_string(now_unix) + "\n";
  return out;
}

void update_metrics_file(const std::string& path, const MetricsEvents& e, long long now_unix) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos || slash + 1 >= path.size()) throw std::runtime_error(path + ": not a file path");
  const std::string dir_path = slash == 0 ? "/" : path.substr(0, slash), name = path.substr(slash + 1);
  UniqueFd dir = ensure_directory(dir_path, 0755, 0);
  UniqueFd lock = lock_in_directory(dir.get(), "." + name + ".lock", 200);
  if (!lock) throw std::runtime_error(path + ": another job holds the lock; this step's metrics are not counted");
  bool missing = false;
  const std::string old = read_owned_file_at(dir.get(), "." + name + ".state", kMaxStateBytes, &missing);
  json state = missing ? json::object() : json::parse(old, nullptr, false);
  if (state.is_discarded()) state = json::object();  // a broken state restarts the counters (a reset to Prometheus)
  state = add_events(std::move(state), e);
  write_file_atomic(dir.get(), "." + name + ".state", state.dump() + "\n", 0600, true);
  write_file_atomic(dir.get(), name, render_metrics(state, now_unix), 0644, true);
}

}  // namespace paratune::job
