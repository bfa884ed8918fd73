#include "paratune/tuning/log_merge.h"

#include <algorithm>
#include <map>

namespace paratune::tuning {

namespace {

std::string where(const LogEntry& e) { return (e.file.empty() ? std::string("-") : e.file) + ":" + std::to_string(e.line); }

// Compares two copies of one job by the rules of log_merge.h; returns the rule that prefers `a`, "" when none does.
std::string prefers(const LogEntry& a, const LogEntry& b) {
  if (a.achieved_step_s.has_value() != b.achieved_step_s.has_value())
    return a.achieved_step_s ? "achieved figures" : "";
  if (a.oom.has_value() != b.oom.has_value()) return a.oom ? "out-of-memory record" : "";
  const bool a_plan = a.scenario && a.layout, b_plan = b.scenario && b.layout;
  if (a_plan != b_plan) return a_plan ? "scenario and plan" : "";
  if (a.truncated != b.truncated) return !a.truncated ? "not truncated" : "";
  if (a.time != b.time) return a.time > b.time ? "later end time" : "";
  return "";
}

// Whether `challenger` (read later) replaces `holder`; `why` says by which rule, or why the holder stayed.
bool replaces(const LogEntry& challenger, const LogEntry& holder, std::string* why) {
  if (std::string r = prefers(challenger, holder); !r.empty()) {
    *why = r;
    return true;
  }
  const std::string r = prefers(holder, challenger);
  *why = r.empty() ? "first read" : r;
  return false;
}

}  // namespace

MergedLog merge_logs(const std::vector<LogText>& sources, const ReadLimits& limits) {
  MergedLog m;
  std::vector<LogEntry> kept;
  std::map<std::string, size_t> by_job;  // job id -> index in kept
  for (const auto& src : sources) {
    ++m.files;
    TuningLog log = read_tuning_log(src.content, limits);
    m.lines += log.lines;
    for (auto& p : log.problems) m.problems.push_back({src.name, p.line, std::move(p.message)});
    m.unreadable += log.lines - log.entries.size();
    for (auto& e : log.entries) {
      e.file = src.name;
      if (e.job_id.empty()) {
        kept.push_back(std::move(e));
        continue;
      }
      const auto [it, fresh] = by_job.emplace(e.job_id, kept.size());
      if (fresh) {
        kept.push_back(std::move(e));
        continue;
      }
      LogEntry& holder = kept[it->second];
      std::string why;
      const bool swap = replaces(e, holder, &why);
      ++m.duplicates;
      if (m.dropped.size() < 1000)
        m.dropped.push_back({e.job_id, swap ? where(e) : where(holder), swap ? where(holder) : where(e), why});
      if (swap) holder = std::move(e);
    }
  }
  std::stable_sort(kept.begin(), kept.end(), [](const LogEntry& a, const LogEntry& b) { return a.time < b.time; });
  m.entries = std::move(kept);
  return m;
}

std::string merge_summary(const MergedLog& m) {
  std::map<std::string, size_t> by_reason;
  for (const auto& d : m.dropped) ++by_reason[d.why];
  std::string out = std::to_string(m.files) + (m.files == 1 ? " file, " : " files, ") + std::to_string(m.lines) +
                    " lines, " + std::to_string(m.entries.size()) + " jobs";
  if (m.duplicates == 0) return out;
  out += "; " + std::to_string(m.duplicates) + " duplicate line" + (m.duplicates == 1 ? "" : "s") + " dropped (";
  bool first = true;
  for (const auto& [why, n] : by_reason) {
    out += (first ? "" : ", ") + std::to_string(n) + " kept the other copy: " + why;
    first = false;
  }
  return out + ")";
}

}  // namespace paratune::tuning
