#include "paratune/tuning/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace paratune::tuning {

using nlohmann::json;

namespace {

bool printable_text(std::string_view s) {
  for (unsigned char c : s)
    if (c == 0 || (c < 0x20 && c != '\t')) return false;
  return true;
}

// The valid sample a line holds, or the reason it holds none.
std::optional<ReportSample> parse_line(std::string_view line, const ReportLimits& lim, std::string* why) {
  if (line.size() > lim.max_line_bytes) {
    *why = "longer than " + std::to_string(lim.max_line_bytes) + " bytes";
    return std::nullopt;
  }
  if (!printable_text(line)) {
    *why = "binary data";
    return std::nullopt;
  }
  const size_t b = line.find_first_not_of(" \t");
  if (b == std::string_view::npos || line[b] != '{') {
    *why = "not a JSON object";
    return std::nullopt;
  }
  const json j = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    *why = "not valid JSON (NaN and Infinity are not JSON)";
    return std::nullopt;
  }
  const auto st = j.find("step_time_s");
  if (st == j.end() || !st->is_number()) {
    *why = "no numeric step_time_s";
    return std::nullopt;
  }
  ReportSample s;
  s.step_time_s = st->get<double>();
  if (!std::isfinite(s.step_time_s) || s.step_time_s <= 0 || s.step_time_s > lim.max_step_time_s) {
    *why = "step_time_s out of range (0, " + std::to_string(long(lim.max_step_time_s)) + "]";
    return std::nullopt;
  }
  if (const auto it = j.find("step"); it != j.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<long long>() < 0) {
      *why = "step must be an integer >= 0";
      return std::nullopt;
    }
    s.step = it->get<long long>();
  }
  if (const auto it = j.find("tokens"); it != j.end() && !it->is_null()) {
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0) {
      *why = "tokens must be a number >= 0";
      return std::nullopt;
    }
    s.tokens = it->get<double>();
  }
  return s;
}

std::optional<double> bounded_gib(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  return std::isfinite(v) && v >= 0 && v < 1048576 ? std::optional<double>(v) : std::nullopt;
}

// An event line of `paratune run` ({"event": "oom" | "memory", ...}); false when the line is not one.
bool take_event(std::string_view line, const ReportLimits& lim, ParsedReport* r) {
  if (line.size() > lim.max_line_bytes || line.find("\"event\"") == std::string_view::npos) return false;
  const json j = json::parse(line.begin(), line.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("event") || !j["event"].is_string()) return false;
  const std::string ev = j["event"].get<std::string>();
  if (ev == "memory") {
    const auto v = bounded_gib(j, "peak_gib");
    if (!v) return false;
    r->peak_memory_gib = std::max(r->peak_memory_gib.value_or(0), *v);
  } else if (ev == "oom") {
    if (!r->oom) {
      ReportOom o;
      const std::string kind = j.contains("kind") && j["kind"].is_string() ? j["kind"].get<std::string>() : "";
      o.kind = kind == "cuda" || kind == "hip" || kind == "nccl" ? kind : "unknown";
      o.tried_gib = bounded_gib(j, "tried_gib");
      o.capacity_gib = bounded_gib(j, "capacity_gib");
      o.free_gib = bounded_gib(j, "free_gib");
      if (j.contains("message") && j["message"].is_string()) o.message = j["message"].get<std::string>().substr(0, 300);
      r->oom = std::move(o);
    }
  } else {
    return false;
  }
  ++r->events;
  return true;
}

}  // namespace

ParsedReport parse_report(std::string_view content, const ReportLimits& lim) {
  ParsedReport r;
  size_t line_no = 0, pos = 0;
  while (pos < content.size()) {
    size_t end = content.find('\n', pos);
    if (end == std::string_view::npos) end = content.size();
    std::string_view line = content.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    ++r.lines;
    if (take_event(line, lim, &r)) continue;
    std::string why;
    auto s = parse_line(line, lim, &why);
    if (!s) {
      ++r.bad_lines;
      if (r.first_problem.empty()) r.first_problem = "line " + std::to_string(line_no) + ": " + why;
      continue;
    }
    if (r.samples.size() >= lim.max_samples) {
      ++r.ignored;
      continue;
    }
    r.samples.push_back(*s);
  }
  return r;
}

std::optional<double> ReportSummary::tokens_per_s() const {
  if (!valid || !tokens_per_step || step_time.median <= 0) return std::nullopt;
  return *tokens_per_step / step_time.median;
}

ReportSummary summarize_report(std::string_view content, bool truncated, const WarmupRule& warmup,
                               const ReportLimits& limits) {
  ReportSummary out;
  out.truncated = truncated;
  ParsedReport p = parse_report(content, limits);
  out.bad_lines = p.bad_lines;
  out.samples = p.samples.size();
  out.oom = p.oom;
  out.peak_memory_gib = p.peak_memory_gib;
  if (p.lines == 0) {
    out.invalid_reason = "empty";
    return out;
  }
  if (p.samples.empty() && p.oom) {
    out.invalid_reason = "no step reported before the out-of-memory death";
    return out;
  }
  if (p.samples.empty()) {
    out.invalid_reason = p.bad_lines ? "no valid line (" + std::to_string(p.bad_lines) + " bad; " + p.first_problem + ")"
                                     : "no step reported";
    return out;
  }
  // Steps in step order when every sample names its step (several writers, or a restart, may interleave), one
  // sample a step: a multi-node job's `paratune run` on every node reports each step once per node (torchtitan logs
  // on every rank); the slowest copy is the step's time, as the slowest rank sets it.
  auto& v = p.samples;
  if (std::all_of(v.begin(), v.end(), [](const ReportSample& s) { return s.step.has_value(); })) {
    std::stable_sort(v.begin(), v.end(), [](const ReportSample& a, const ReportSample& b) { return *a.step < *b.step; });
    std::vector<ReportSample> one;
    for (const auto& s : v) {
      if (!one.empty() && *one.back().step == *s.step) {
        if (s.step_time_s > one.back().step_time_s) one.back() = s;
        continue;
      }
      one.push_back(s);
    }
    out.duplicate_steps = v.size() - one.size();
    v = std::move(one);
  }
  std::vector<double> times;
  times.reserve(v.size());
  for (const auto& s : v) times.push_back(s.step_time_s);
  out.warmup_excluded = warmup_count(times, warmup);
  std::vector<double> settled(times.begin() + long(out.warmup_excluded), times.end());
  out.step_time = robust_stats(settled);
  std::vector<double> tokens;
  for (size_t i = out.warmup_excluded; i < v.size(); ++i)
    if (v[i].tokens) tokens.push_back(*v[i].tokens);
  if (!tokens.empty()) out.tokens_per_step = robust_stats(tokens).median;
  out.valid = true;
  return out;
}

json to_json(const ReportSummary& s) {
  if (!s.valid) return nullptr;
  json j = {{"median_step_time_s", s.step_time.median},
            {"p10_step_time_s", s.step_time.p10},
            {"p90_step_time_s", s.step_time.p90},
            {"steps", s.step_time.n},
            {"warmup_excluded", s.warmup_excluded},
            {"samples", s.samples},
            {"bad_lines", s.bad_lines},
            {"truncated", s.truncated}};
  if (s.tokens_per_step) {
    j["tokens_per_step"] = *s.tokens_per_step;
    j["tokens_per_s"] = *s.tokens_per_s();
  }
  if (s.peak_memory_gib) j["peak_memory_gib"] = *s.peak_memory_gib;
  return j;
}

std::string report_status(const ReportSummary& s) {
  if (!s.valid) return "invalid: " + s.invalid_reason;
  std::string out = "ok";
  if (s.bad_lines) out += ": " + std::to_string(s.bad_lines) + " bad line" + (s.bad_lines == 1 ? "" : "s") + " ignored";
  if (s.truncated) out += std::string(s.bad_lines ? ";" : ":") + " truncated at the size limit";
  return out;
}

std::optional<double> achieved_ratio(double predicted_step_s, const ReportSummary& s) {
  if (!s.valid || !(predicted_step_s > 0) || !(s.step_time.median > 0) || !std::isfinite(predicted_step_s))
    return std::nullopt;
  return predicted_step_s / s.step_time.median;
}

bool is_suspect(double ratio, double threshold) { return std::isfinite(ratio) && ratio > 0 && ratio < threshold; }

double SuspectRule::effective_threshold() const {
  return calibrated ? threshold : threshold * (1 - std::clamp(uncalibrated_error, 0.0, 1.0));
}

std::string SuspectRule::basis() const {
  if (calibrated) return "calibrated";
  char b[64];
  std::snprintf(b, sizeof b, "uncalibrated, threshold widened by %.0f %%", 100 * std::clamp(uncalibrated_error, 0.0, 1.0));
  return b;
}

SuspectRule suspect_rule_for(const json& record, double threshold) {
  SuspectRule rule;
  rule.threshold = threshold;
  const auto p = record.find("predicted");
  if (p != record.end() && p->is_object()) {
    const auto c = p->find("calibrated");
    rule.calibrated = c != p->end() && c->is_boolean() && c->get<bool>();
  }
  return rule;
}

void add_achieved(json& record, const std::optional<ReportSummary>& s, const SuspectRule& rule,
                  const std::vector<std::string>& nodes) {
  if (!s) {
    record["report"] = "missing";
    return;
  }
  record["report"] = report_status(*s);
  if (s->oom) {
    json o = {{"kind", s->oom->kind}, {"message", s->oom->message}};
    if (s->oom->tried_gib) o["tried_gib"] = *s->oom->tried_gib;
    if (s->oom->capacity_gib) o["capacity_gib"] = *s->oom->capacity_gib;
    if (s->oom->free_gib) o["free_gib"] = *s->oom->free_gib;
    record["oom"] = o;
  }
  if (!s->valid) return;
  record["achieved"] = to_json(*s);
  double predicted = 0;
  if (record.contains("predicted") && record["predicted"].is_object()) {
    const auto& p = record["predicted"];
    if (p.contains("step_time_s") && p["step_time_s"].is_number()) predicted = p["step_time_s"].get<double>();
  }
  const auto ratio = achieved_ratio(predicted, *s);
  if (!ratio) return;
  record["ratio"] = *ratio;
  // A node is not blamed on a handful of steps (a smoke run's two logged steps, a job killed early).
  if (rule.suspect(*ratio) && s->step_time.n >= kMinStepsToJudge)
    record["suspect"] = {{"threshold", rule.effective_threshold()}, {"policy_threshold", rule.threshold},
                         {"basis", rule.basis()}, {"nodes", nodes}};
}

void add_achieved(json& record, const std::optional<ReportSummary>& s, double threshold,
                  const std::vector<std::string>& nodes) {
  add_achieved(record, s, suspect_rule_for(record, threshold), nodes);
}

}  // namespace paratune::tuning
