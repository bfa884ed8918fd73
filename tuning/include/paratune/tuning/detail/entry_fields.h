// How one tuning-log line becomes a LogEntry, written once for any JSON parser. Two parsers read the log:
// nlohmann (read_tuning_log: the plugin's AdminComment, tests) and simdjson (the streaming readers of the CLI,
// tuning/scan); both instantiate entry_from<Backend> below, so the rules for every field are the same code.
//
// A Backend provides, for its `Value` (a view of one JSON value):
//   is_object / is_array / is_string / is_bool / is_number / is_integer (signed or unsigned)
//   string(v) -> std::string_view, boolean(v), number(v) -> double, integer(v) -> long long (unsigned wraps, as
//   nlohmann's get<long long> does)
//   for_each_member(object, f(std::string_view key, Value)): every member in order (a later duplicate key wins,
//   as in nlohmann, where the last one overwrites the first)
//   for_each_element(array, f(Value))
//   scenario(v) / plan(v) -> std::shared_ptr<const ParsedPart<T>>: the value read by scenario_json.h (parsers may
//   share one result between lines with the same text).
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "paratune/tuning/tuning_log.h"

namespace paratune::tuning::detail {

// ISO-8601 time of a line ("time" as a string), nullopt when it is not one (tuning_log.cpp).
std::optional<long long> iso8601(std::string_view s);

// How much of a line to read: everything, or only what the merge of copies and the filters need
// (job_id, time, user, partition, truncated, oom, scenario and plan, achieved figures).
enum class Depth { kFull, kMergeKeys };

// The members of one object by name; a key seen twice keeps the later value.
template <class B, size_t N>
struct Members {
  std::optional<typename B::Value> v[N];
  template <class Names>
  Members(const typename B::Value& obj, const Names& names) {
    B::for_each_member(obj, [&](std::string_view key, const typename B::Value& value) {
      // Length and first byte before the bytes: a line has ~30 members, each tried against up to 24 names.
      for (size_t i = 0; i < N; ++i)
        if (key.size() == names[i].size() && !key.empty() && key[0] == names[i][0] && key == names[i]) {
          v[i] = value;
          return;
        }
    });
  }
  const typename B::Value* operator[](size_t i) const { return v[i] ? &*v[i] : nullptr; }
};

template <class B>
struct Fields {
  using V = typename B::Value;

  static std::string str(const V* v) {
    if (!v) return {};
    if (B::is_string(*v)) return std::string(B::string(*v));
    if (B::is_integer(*v)) return std::to_string(B::integer(*v));
    return {};
  }
  static std::optional<double> num(const V* v) {
    if (!v || !B::is_number(*v)) return std::nullopt;
    const double x = B::number(*v);
    if (!std::isfinite(x)) return std::nullopt;
    return x;
  }
  // A logged number converted to an integer: out of range (or NaN) counts as absent, never undefined behaviour.
  static double bounded(std::optional<double> v, double hi) { return v && *v >= -hi && *v <= hi ? *v : 0; }
  // A logged size in GiB: positive, finite and below 1 PiB, else absent.
  static std::optional<double> gib(const V* v) {
    const auto x = num(v);
    return x && *x >= 0 && *x < 1048576 ? x : std::nullopt;
  }
  static std::optional<bool> boolean(const V* v) {
    if (!v || !B::is_bool(*v)) return std::nullopt;
    return B::boolean(*v);
  }
};

// The "oom" object: kind, tried/capacity/free GiB, the plan's predicted memory, the message (capped).
template <class B>
OomRecord oom_from(const typename B::Value& o) {
  using F = Fields<B>;
  static constexpr std::string_view names[] = {"kind", "tried_gib", "capacity_gib", "free_gib", "predicted_memory_gib",
                                          "message"};
  const Members<B, 6> m(o, names);
  OomRecord r;
  r.kind = F::str(m[0]);
  if (r.kind.empty()) r.kind = "unknown";
  r.tried_gib = F::gib(m[1]);
  r.capacity_gib = F::gib(m[2]);
  r.free_gib = F::gib(m[3]);
  r.predicted_gib = F::gib(m[4]);
  r.message = F::str(m[5]).substr(0, 512);
  return r;
}

template <class B>
void read_predicted(const typename B::Value& p, LogEntry& e) {
  using F = Fields<B>;
  static constexpr std::string_view names[] = {"step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "memory_gib_per_gpu",
                                          "calibrated"};
  const Members<B, 5> m(p, names);
  e.predicted_step_s = F::num(m[0]).value_or(0);
  e.predicted_tokens_per_s = F::num(m[1]).value_or(0);
  e.predicted_tokens_per_s_per_gpu = F::num(m[2]).value_or(0);
  e.predicted_memory_gib = F::gib(m[3]).value_or(0);
  if (auto c = F::boolean(m[4])) e.predicted_calibrated = *c;
}

// "achieved": the median step time, or else tokens per step / tokens per second (tokens per step as logged, or
// the scenario's global batch x sequence length: what the model's own tokens/s is counted in).
template <class B>
void read_achieved(const typename B::Value& a, LogEntry& e, Depth depth) {
  using F = Fields<B>;
  static constexpr std::string_view names[] = {"median_step_time_s", "tokens_per_s", "tokens_per_step", "p10_step_time_s",
                                          "p90_step_time_s",    "steps",        "peak_memory_gib"};
  const Members<B, 7> m(a, names);
  if (auto v = F::num(m[0]); v && *v > 0) {
    e.achieved_step_s = v;
  } else if (const auto tps = F::num(m[1]); tps && *tps > 0) {
    double per_step = F::num(m[2]).value_or(0);
    const auto& sc = e.parsed_scenario ? e.parsed_scenario->value : e.scenario;
    if (per_step <= 0 && sc) per_step = double(sc->training.global_batch) * double(sc->model.seq_len);
    if (per_step > 0) {
      const double step = per_step / *tps;
      if (std::isfinite(step) && step > 0) e.achieved_step_s = step;
    }
  }
  if (depth == Depth::kMergeKeys) return;
  if (auto v = F::num(m[3]); v && *v > 0) e.achieved_p10_s = v;
  if (auto v = F::num(m[4]); v && *v > 0) e.achieved_p90_s = v;
  // Bounded like every other count: 1e300 steps would make size_t(...) undefined behaviour.
  e.achieved_steps = size_t(std::max(0.0, F::bounded(F::num(m[5]), 9.0e15)));
  if (auto v = F::num(m[2]); v && *v > 0) e.achieved_tokens_per_step = v;
  e.peak_memory_gib = F::gib(m[6]);
}

template <class B>
void read_suspect(const typename B::Value& s, LogEntry& e) {
  static constexpr std::string_view names[] = {"basis", "nodes"};
  const Members<B, 2> m(s, names);
  e.flagged = true;
  if (m[0] && B::is_string(*m[0])) e.suspect_basis = std::string(B::string(*m[0]));
  if (m[1] && B::is_array(*m[1]))
    B::for_each_element(*m[1], [&](const typename B::Value& x) {
      if (B::is_string(x)) e.flagged_nodes.emplace_back(B::string(x));
    });
}

template <class B>
void read_node_list(const typename B::Value* list, LogEntry& e) {
  if (list && B::is_array(*list)) {
    B::for_each_element(*list, [&](const typename B::Value& n) {
      if (B::is_string(n)) e.node_names.emplace_back(B::string(n));
    });
  } else if (list && B::is_string(*list)) {
    e.node_names = expand_hostlist(B::string(*list));
  }
  if (e.node_names.empty() && !e.host.empty()) e.node_names.push_back(e.host);
}

// The scenario and plan: parsed by the backend (which may share one result between equal texts); copied into
// the entry's own scenario/layout only when the whole line is read.
template <class B>
void read_configuration(B& backend, const typename B::Value* scenario, const typename B::Value* plan, LogEntry& e,
                        Depth depth) {
  if (scenario) {
    e.parsed_scenario = backend.scenario(*scenario);
    if (const auto& s = e.parsed_scenario->value) {
      if (depth == Depth::kFull) e.scenario = s;
      if (e.gpu_model.empty()) e.gpu_model = s->cluster.gpu;
    } else {
      e.scenario_problem = "scenario: " + e.parsed_scenario->problem;
    }
  }
  if (plan) {
    e.parsed_layout = backend.plan(*plan);
    if (e.parsed_layout->value) {
      if (depth == Depth::kFull) e.layout = e.parsed_layout->value;
    } else {
      e.scenario_problem = "plan: " + e.parsed_layout->problem;
    }
  }
}

// "env_kept" (the user's values the plan did not replace) and "node_checks" (nodes unlike the plan's).
template <class B>
void read_plan_departures(const typename B::Value* kept, const typename B::Value* checks, LogEntry& e) {
  if (kept && B::is_object(*kept))
    B::for_each_member(*kept, [&](std::string_view key, const typename B::Value&) {
      if (key.rfind("PARATUNE_", 0) == 0 && e.kept_paratune_vars.size() < 64) e.kept_paratune_vars.emplace_back(key);
    });
  if (!checks || !B::is_object(*checks)) return;
  static constexpr std::string_view names[] = {"mismatch", "mismatch_count"};
  const Members<B, 2> m(*checks, names);
  size_t listed = 0;
  if (m[0] && B::is_array(*m[0])) B::for_each_element(*m[0], [&](const typename B::Value&) { ++listed; });
  const double counted = Fields<B>::bounded(Fields<B>::num(m[1]), 9.0e15);
  e.node_mismatches = std::max(listed, size_t(std::max(0.0, counted)));
}

// One line's object -> LogEntry (line number set, file left to the caller).
template <class B>
LogEntry entry_from(B& backend, const typename B::Value& root, size_t line, Depth depth = Depth::kFull) {
  using F = Fields<B>;
  enum K { kStep, kTrunc, kOom, kTime, kJob, kUser, kPart, kHost, kGpu, kState, kReport, kFw, kFwVer, kNodes,
           kGpn, kNodeList, kScenario, kPlan, kPredicted, kAchieved, kSuspect, kEnvKept, kNodeChecks, kCluster, kCount };
  static constexpr std::string_view names[kCount] = {
      "step_id", "truncated", "oom", "time", "job_id", "user", "partition", "host", "gpu_model", "state", "report",
      "framework", "framework_version", "nodes", "gpus_per_node", "node_list", "scenario", "plan", "predicted",
      "achieved", "suspect", "env_kept", "node_checks", "cluster"};
  const Members<B, kCount> m(root, names);
  LogEntry e;
  e.line = line;
  if (auto t = F::boolean(m[kTrunc])) e.truncated = *t;
  if (m[kOom] && B::is_object(*m[kOom])) e.oom = oom_from<B>(*m[kOom]);
  e.time = static_cast<long long>(F::bounded(F::num(m[kTime]), 9.2e18));
  // Lines written by other tools carry ISO-8601 times; one that does not parse is absent (0), like a bad number.
  if (m[kTime] && B::is_string(*m[kTime]))
    if (const auto t = iso8601(B::string(*m[kTime]))) e.time = *t;
  e.job_id = F::str(m[kJob]);
  e.cluster = F::str(m[kCluster]).substr(0, 128);
  e.user = F::str(m[kUser]);
  e.partition = F::str(m[kPart]);
  e.gpu_model = F::str(m[kGpu]);
  if (depth == Depth::kFull) {
    e.step_id = F::str(m[kStep]);
    e.host = F::str(m[kHost]);
    e.state = F::str(m[kState]);
    e.report = F::str(m[kReport]);
    e.plan_framework = F::str(m[kFw]);
    e.plan_framework_version = F::str(m[kFwVer]);
    e.nodes = int(F::bounded(F::num(m[kNodes]), 2147483647.0));
    e.gpus_per_node = int(F::bounded(F::num(m[kGpn]), 2147483647.0));
    read_node_list<B>(m[kNodeList], e);
    read_plan_departures<B>(m[kEnvKept], m[kNodeChecks], e);
  }
  read_configuration(backend, m[kScenario], m[kPlan], e, depth);
  if (depth == Depth::kFull && m[kPredicted] && B::is_object(*m[kPredicted])) read_predicted<B>(*m[kPredicted], e);
  if (m[kAchieved] && B::is_object(*m[kAchieved])) read_achieved<B>(*m[kAchieved], e, depth);
  if (depth == Depth::kFull && m[kSuspect] && B::is_object(*m[kSuspect])) read_suspect<B>(*m[kSuspect], e);
  return e;
}

}  // namespace paratune::tuning::detail
