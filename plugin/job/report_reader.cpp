#include "report_reader.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <system_error>

#include "paratune/common/child_call.h"
#include "log_text.h"
#include "paratune/tuning/report.h"
#include "paratune/common/safe_file.h"

namespace paratune::job {

using common::read_bounded;
using common::call_in_child;

using nlohmann::json;

namespace {

// In the child, as the user: "M" (missing), or "T"/"C" (truncated/complete) + the content.
std::string read_tagged(const std::string& path) {
  bool truncated = false;
  try {
    std::string content = read_bounded(path, kMaxReportBytes, &truncated);
    return std::string(truncated ? "T" : "C") + content;
  } catch (const std::system_error& e) {
    if (e.code().value() == ENOENT) return std::string("M");
    throw;
  }
}

}  // namespace

ReportFile read_report_as_user(const std::string& path, const JobUser& user, int timeout_ms) {
  ReportFile out;
  try {
    const std::string reply = call_in_child(
        [&] {
          become_user_for_good(user);  // root never opens a path the user controls
          return read_tagged(path);
        },
        timeout_ms, "reading the report " + capped(path), kMaxReportBytes + 16);
    if (reply.empty() || reply[0] == 'M') {
      out.missing = true;
    } else {
      out.truncated = reply[0] == 'T';
      out.content = reply.substr(1);
    }
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

ReportFile read_report_as_user(const std::string& path, uid_t uid, gid_t gid, int timeout_ms) {
  return read_report_as_user(path, JobUser{uid, gid, {gid}, true}, timeout_ms);
}

namespace {

// The child's answer: {"status": one of the codes below, ...the summary when "read"}.
constexpr const char* kRead = "read";

// In the child, as the user: read (bounded, no links, regular files only) and summarise. Only numbers, counts,
// booleans and codes go back; the OOM message (the framework's own words, capped) is the one string.
json child_answer(const std::string& path) {
  bool truncated = false;
  std::string content;
  try {
    content = read_bounded(path, kMaxReportBytes, &truncated);
  } catch (const std::system_error& e) {
    const int err = e.code().value();
    if (err == ENOENT || err == ENOTDIR) return {{"status", "missing"}};
    if (err == ELOOP) return {{"status", "not a regular file"}};  // O_NOFOLLOW on a symbolic link
    return {{"status", "unreadable"}};
  } catch (const std::exception&) {
    return {{"status", "not a regular file"}};  // read_bounded's only other refusal: FIFO, directory, device
  }
  const auto s = tuning::summarize_report(content, truncated);
  json a = {{"status", kRead}, {"valid", s.valid}, {"truncated", s.truncated}, {"bad_lines", s.bad_lines},
            {"samples", s.samples}, {"warmup_excluded", s.warmup_excluded}, {"median", s.step_time.median},
            {"p10", s.step_time.p10}, {"p90", s.step_time.p90}, {"steps", s.step_time.n}};
  if (s.tokens_per_step) a["tokens_per_step"] = *s.tokens_per_step;
  if (s.peak_memory_gib) a["peak_memory_gib"] = *s.peak_memory_gib;
  if (s.oom) {
    json o = {{"kind", s.oom->kind}, {"message", s.oom->message}};
    if (s.oom->tried_gib) o["tried_gib"] = *s.oom->tried_gib;
    if (s.oom->capacity_gib) o["capacity_gib"] = *s.oom->capacity_gib;
    if (s.oom->free_gib) o["free_gib"] = *s.oom->free_gib;
    a["oom"] = o;
  }
  if (!s.valid) {
    const auto p = tuning::parse_report(content);
    if (p.lines == 0) a["invalid"] = "empty";
    else if (p.bad_lines > 0 && p.samples.empty() && !p.oom) a["invalid"] = "line";
    else a["invalid"] = "no step";
    // first_problem is "line N: why": only N goes back.
    long line = 0;
    if (p.first_problem.rfind("line ", 0) == 0) line = std::strtol(p.first_problem.c_str() + 5, nullptr, 10);
    a["first_bad_line"] = line;
    if (truncated) a["invalid"] = "too large";
  }
  return a;
}

struct Bad : std::runtime_error {
  using std::runtime_error::runtime_error;
};

double number(const json& j, const char* key, double lo, double hi) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) throw Bad(key);
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < lo || v > hi) throw Bad(key);
  return v;
}

size_t count(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_unsigned()) throw Bad(key);
  const auto v = it->get<unsigned long long>();
  if (v > (1ull << 40)) throw Bad(key);
  return static_cast<size_t>(v);
}

bool boolean(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_boolean()) throw Bad(key);
  return it->get<bool>();
}

std::optional<double> optional_number(const json& j, const char* key, double hi) {
  if (!j.contains(key)) return std::nullopt;
  return number(j, key, 0, hi);
}

// The child's OOM record, field by field: a kind from the reader's own set, sizes in range, the message capped
// and escaped (the framework's words: in the tuning log, never in the "report" field or the AdminComment).
tuning::ReportOom oom_of(const json& j) {
  if (!j.is_object()) throw Bad("oom");
  tuning::ReportOom o;
  const std::string kind = j.contains("kind") && j["kind"].is_string() ? j["kind"].get<std::string>() : "";
  o.kind = kind == "cuda" || kind == "hip" || kind == "nccl" ? kind : "unknown";
  o.tried_gib = optional_number(j, "tried_gib", 1048576);
  o.capacity_gib = optional_number(j, "capacity_gib", 1048576);
  o.free_gib = optional_number(j, "free_gib", 1048576);
  if (j.contains("message") && j["message"].is_string()) o.message = capped(j["message"].get<std::string>(), 300);
  return o;
}

std::string plural_lines(size_t n) { return std::to_string(n) + " bad line" + (n == 1 ? "" : "s") + " ignored"; }

// "ok...", or the reason the summary is invalid, in the vocabulary.
std::string reason_of(const tuning::ReportSummary& s, const json& a) {
  if (s.valid) {
    std::string out = "ok";
    if (s.bad_lines) out += ": " + plural_lines(s.bad_lines);
    if (s.truncated) out += std::string(s.bad_lines ? ";" : ":") + " truncated at the size limit";
    return out;
  }
  const auto it = a.find("invalid");
  const std::string why = it != a.end() && it->is_string() ? it->get<std::string>() : "";
  if (why == "empty") return "empty";
  if (why == "too large") return "too large";
  if (why == "no step") return "no step reported";
  if (why == "line") {
    const auto n = static_cast<long long>(number(a, "first_bad_line", 1, 1e12));
    return "invalid line " + std::to_string(n);
  }
  throw Bad("invalid");
}

json fields_of_read(const json& a, const json& predicted, double threshold) {
  tuning::ReportSummary s;
  s.valid = boolean(a, "valid");
  s.truncated = boolean(a, "truncated");
  s.bad_lines = count(a, "bad_lines");
  s.samples = count(a, "samples");
  s.warmup_excluded = count(a, "warmup_excluded");
  s.step_time.n = count(a, "steps");
  s.step_time.median = number(a, "median", 0, 1e9);
  s.step_time.p10 = number(a, "p10", 0, 1e9);
  s.step_time.p90 = number(a, "p90", 0, 1e9);
  s.tokens_per_step = optional_number(a, "tokens_per_step", 1e15);
  s.peak_memory_gib = optional_number(a, "peak_memory_gib", 1048576);
  if (a.contains("oom")) s.oom = oom_of(a["oom"]);
  if (s.valid && !(s.step_time.median > 0 && s.step_time.n > 0)) throw Bad("median");
  const std::string reason = reason_of(s, a);
  json record = {{"predicted", predicted.is_object() ? predicted : json::object()}};
  tuning::add_achieved(record, s, tuning::suspect_rule_for(record, threshold), {});
  record.erase("predicted");
  record["report"] = reason;
  return record;
}

}  // namespace

json report_fields_from_answer(const std::string& answer, const json& predicted, double suspect_threshold) {
  try {
    const json a = json::parse(answer);
    if (!a.is_object() || !a.contains("status") || !a["status"].is_string()) return {{"report", "unreadable"}};
    const std::string status = a["status"].get<std::string>();
    if (status == kRead) return fields_of_read(a, predicted, suspect_threshold);
    for (const char* code : {"missing", "not a regular file", "unreadable"})
      if (status == code) return {{"report", code}};
  } catch (const std::exception&) {
  }
  return {{"report", "unreadable"}};  // not an answer the child gives: nothing of it is taken
}

json report_fields_as_user(const std::string& path, const JobUser& user, const json& predicted,
                           double suspect_threshold, int timeout_ms) {
  std::string answer;
  try {
    answer = call_in_child(
        [&] {
          become_user_for_good(user);
          return child_answer(path).dump(-1, ' ', false, json::error_handler_t::replace);
        },
        timeout_ms, "reading the report", 1u << 20);
  } catch (const std::exception& e) {
    const bool late = std::string(e.what()).find("did not finish within") != std::string::npos;
    return {{"report", late ? "timed out" : "unreadable"}};
  }
  return report_fields_from_answer(answer, predicted, suspect_threshold);
}

bool is_report_reason(const std::string& r) {
  for (const char* fixed : {"ok", "missing", "not a regular file", "too large", "unreadable", "timed out", "empty",
                            "no step reported", "ok: truncated at the size limit"})
    if (r == fixed) return true;
  auto digits_then = [](const std::string& s, size_t from, const std::string& tail) {
    size_t i = from;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    return i > from && i - from <= 13 && s.compare(i, std::string::npos, tail) == 0;
  };
  if (r.rfind("invalid line ", 0) == 0) return digits_then(r, 13, "");
  if (r.rfind("ok: ", 0) == 0)
    return digits_then(r, 4, " bad line ignored") || digits_then(r, 4, " bad lines ignored") ||
           digits_then(r, 4, " bad line ignored; truncated at the size limit") ||
           digits_then(r, 4, " bad lines ignored; truncated at the size limit");
  return false;
}

}  // namespace paratune::job
