#include "paratune/tuning/tuning_log.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <stdexcept>

#include "paratune/advisor/catalog.h"
#include "paratune/tuning/detail/entry_fields.h"
#include "paratune/tuning/detail/nlohmann_backend.h"
#include "paratune/tuning/scenario_json.h"

namespace paratune::tuning {

using nlohmann::json;

namespace {

// Reads exactly `n` digits at s[*i] (advancing *i); false when they are not there.
bool digits(std::string_view s, size_t* i, size_t n, int* out) {
  if (*i + n > s.size()) return false;
  int v = 0;
  for (size_t k = 0; k < n; ++k) {
    const char c = s[*i + k];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *i += n;
  *out = v;
  return true;
}

int days_in_month(int year, int month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : kDays[month - 1];
}

// "Z", "+HH", "+HH:MM", "+HHMM" (or '-') at the end of s[i..]: the offset east of UTC in seconds.
std::optional<long long> utc_offset(std::string_view s, size_t i) {
  if (i == s.size()) return 0;  // no designator: UTC, as every time paratune writes
  if (s[i] == 'Z' || s[i] == 'z') return i + 1 == s.size() ? std::optional<long long>(0) : std::nullopt;
  if (s[i] != '+' && s[i] != '-') return std::nullopt;
  const int sign = s[i] == '-' ? -1 : 1;
  int h = 0, m = 0;
  ++i;
  if (!digits(s, &i, 2, &h) || h > 23) return std::nullopt;
  if (i < s.size() && s[i] == ':') ++i;
  if (i < s.size() && (!digits(s, &i, 2, &m) || m > 59)) return std::nullopt;
  if (i != s.size()) return std::nullopt;
  return sign * (h * 3600LL + m * 60LL);
}

}  // namespace

// ISO-8601 / RFC 3339: YYYY-MM-DD[(T|t| )HH:MM[:SS[.fraction]][Z|+HH:MM|-HH:MM]] -> unix seconds (fraction
// dropped). nullopt when the text is not of that form; nothing after it is ignored (an ignored "+02:00" would
// shift the time by two hours).
std::optional<long long> detail::iso8601(std::string_view s) {
  size_t i = 0;
  int Y = 0, M = 0, D = 0, h = 0, m = 0, sec = 0;
  if (!digits(s, &i, 4, &Y) || i >= s.size() || s[i++] != '-' || !digits(s, &i, 2, &M) || i >= s.size() ||
      s[i++] != '-' || !digits(s, &i, 2, &D))
    return std::nullopt;
  long long offset = 0;
  if (i < s.size()) {
    if (s[i] != 'T' && s[i] != 't' && s[i] != ' ') return std::nullopt;
    ++i;
    if (!digits(s, &i, 2, &h) || i >= s.size() || s[i++] != ':' || !digits(s, &i, 2, &m)) return std::nullopt;
    if (i < s.size() && s[i] == ':') {
      ++i;
      if (!digits(s, &i, 2, &sec)) return std::nullopt;
      if (i < s.size() && (s[i] == '.' || s[i] == ',')) {
        const size_t f = ++i;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
        if (i == f) return std::nullopt;
      }
    }
    const auto off = utc_offset(s, i);
    if (!off) return std::nullopt;
    offset = *off;
  }
  if (M < 1 || M > 12 || D < 1 || D > days_in_month(Y, M) || h > 23 || m > 59 || sec > 60 || Y < 1970)
    return std::nullopt;  // timegm would roll 2025-02-30 over to March 2
  std::tm tm{};
  tm.tm_year = Y - 1900;
  tm.tm_mon = M - 1;
  tm.tm_mday = D;
  tm.tm_hour = h;
  tm.tm_min = m;
  tm.tm_sec = sec;
  return static_cast<long long>(timegm(&tm)) - offset;
}

std::optional<double> LogEntry::ratio() const {
  if (!achieved_step_s || *achieved_step_s <= 0 || predicted_step_s <= 0) return std::nullopt;
  return predicted_step_s / *achieved_step_s;
}

std::string LogEntry::fabric() const { return scenario ? advisor::to_string(scenario->cluster.fabric) : ""; }

std::string LogEntry::framework() const {
  return scenario ? advisor::to_string(scenario->training.framework) : "";
}

std::string LogEntry::framework_version() const {
  if (!plan_framework_version.empty()) return plan_framework_version;
  return scenario ? scenario->training.framework_version : "";  // "" on lines older than the versions
}

std::string LogEntry::model() const { return scenario ? scenario->model.name : ""; }

int LogEntry::gpus() const {
  if (scenario) return scenario->cluster.nodes * scenario->cluster.gpus_per_node;
  return nodes * gpus_per_node;
}

std::optional<double> LogEntry::predicted_per_gpu() const {
  if (predicted_tokens_per_s_per_gpu > 0) return predicted_tokens_per_s_per_gpu;
  if (predicted_tokens_per_s > 0 && gpus() > 0) return predicted_tokens_per_s / gpus();
  return std::nullopt;
}

std::optional<double> LogEntry::achieved_tokens_per_s_per_gpu() const {
  const auto r = ratio();
  const auto p = predicted_per_gpu();
  if (r && p) return *p * *r;
  if (!achieved_step_s || !scenario || gpus() <= 0) return std::nullopt;
  const double tokens = double(scenario->training.global_batch) * double(scenario->model.seq_len);
  if (!(tokens > 0)) return std::nullopt;
  return tokens / *achieved_step_s / gpus();
}

double LogEntry::gpu_memory_gib() const {
  if (!scenario || !advisor::is_gpu_key(scenario->cluster.gpu)) return 0;
  return advisor::effective_gpu(scenario->cluster).memory_gib;
}

TuningLog read_tuning_log(std::string_view content, const ReadLimits& lim) {
  TuningLog log;
  size_t pos = 0, line_no = 0, suppressed = 0;
  auto problem = [&](size_t line, std::string msg) {
    if (log.problems.size() < lim.max_problems) log.problems.push_back({line, std::move(msg)});
    else ++suppressed;
  };
  while (pos < content.size()) {
    size_t end = content.find('\n', pos);
    if (end == std::string_view::npos) end = content.size();
    std::string_view line = content.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    ++log.lines;
    if (line.size() > lim.max_line_bytes) {
      problem(line_no, "line longer than " + std::to_string(lim.max_line_bytes) + " bytes");
      continue;
    }
    const json j = json::parse(line.begin(), line.end(), nullptr, false);
    if (j.is_discarded()) {
      problem(line_no, "not valid JSON");
      continue;
    }
    if (!j.is_object()) {
      problem(line_no, "not a JSON object");
      continue;
    }
    detail::NlohmannBackend backend;
    LogEntry e = detail::entry_from(backend, &j, line_no);
    if (!e.scenario_problem.empty()) problem(line_no, e.scenario_problem + " (the line is kept without it)");
    log.entries.push_back(std::move(e));
  }
  if (suppressed) log.problems.push_back({line_no, std::to_string(suppressed) + " further problems not listed"});
  return log;
}

std::vector<std::string> expand_hostlist(std::string_view list) {
  std::vector<std::string> out;
  constexpr size_t kMax = 100000;
  size_t i = 0;
  while (i < list.size() && out.size() < kMax) {
    // one element: prefix[ranges]suffix up to a top-level comma
    size_t j = i;
    int depth = 0;
    while (j < list.size() && !(list[j] == ',' && depth == 0)) {
      if (list[j] == '[') ++depth;
      if (list[j] == ']') --depth;
      ++j;
    }
    const std::string_view el = list.substr(i, j - i);
    i = j + 1;
    if (el.empty()) continue;
    const size_t lb = el.find('['), rb = el.find(']');
    if (lb == std::string_view::npos || rb == std::string_view::npos || rb < lb) {
      out.emplace_back(el);
      continue;
    }
    const std::string prefix(el.substr(0, lb)), suffix(el.substr(rb + 1));
    const std::string_view ranges = el.substr(lb + 1, rb - lb - 1);
    size_t k = 0;
    while (k <= ranges.size() && out.size() < kMax) {
      size_t c = ranges.find(',', k);
      if (c == std::string_view::npos) c = ranges.size();
      const std::string_view r = ranges.substr(k, c - k);
      k = c + 1;
      const size_t dash = r.find('-');
      const std::string a(r.substr(0, dash)), b(dash == std::string_view::npos ? r : r.substr(dash + 1));
      if (a.empty() || b.empty() || a.size() > 9 || b.size() > 9 ||
          a.find_first_not_of("0123456789") != std::string::npos ||
          b.find_first_not_of("0123456789") != std::string::npos) {
        out.push_back(prefix + std::string(r) + suffix);
        continue;
      }
      const long lo = std::stol(a), hi = std::stol(b);
      for (long n = lo; n <= hi && out.size() < kMax; ++n) {
        std::string digits = std::to_string(n);
        if (digits.size() < a.size()) digits.insert(0, a.size() - digits.size(), '0');
        out.push_back(prefix + digits + suffix);
      }
    }
  }
  return out;
}

long long parse_date(std::string_view t) {
  const std::string s(t);
  const char* forms =
      "expected YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS[.fff]] (UTC unless it ends in Z or +HH:MM/-HH:MM) or unix seconds (@N)";
  if (!s.empty() && (s[0] == '@' || s.find_first_not_of("0123456789") == std::string::npos)) {
    const std::string d = s[0] == '@' ? s.substr(1) : s;
    if (d.empty() || d.size() > 12 || d.find_first_not_of("0123456789") != std::string::npos)
      throw std::invalid_argument("'" + s + "': " + forms);
    return std::stoll(d);
  }
  const auto v = detail::iso8601(t);
  if (!v) throw std::invalid_argument("'" + s + "': " + forms);
  return *v;
}

long long parse_date_end(std::string_view t) {
  const long long at = parse_date(t);
  const bool date_only = t.size() == 10 && t[4] == '-' && t[7] == '-';
  return date_only ? at + 86399 : at;
}

std::string format_date(long long t) {
  const std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%d %H:%M", &tm);
  return b;
}

bool LogFilter::matches(const LogEntry& e) const {
  if (since && e.time < *since) return false;
  if (until && e.time > *until) return false;
  if (!user.empty() && e.user != user) return false;
  if (!partition.empty() && e.partition != partition) return false;
  if (!job_id.empty() && e.job_id != job_id) return false;
  if (!gpu.empty() && e.gpu_model != gpu) return false;
  if (!framework.empty()) {
    // The streaming reader's first pass keeps the scenario only as parsed_scenario (not copied into the entry).
    const auto& sc = e.scenario ? e.scenario : e.parsed_scenario ? e.parsed_scenario->value : e.scenario;
    if (!sc || advisor::to_string(sc->training.framework) != framework) return false;
  }
  return true;
}

}  // namespace paratune::tuning
