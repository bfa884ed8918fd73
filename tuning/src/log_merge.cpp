#include "paratune/tuning/log_merge.h"

#include <algorithm>
#include <map>

namespace paratune::tuning {

namespace {

std::string where(const LogEntry& e) { return (e.file.empty() ? std::string("-") : e.file) + ":" + std::to_string(e.line); }

}  // namespace

CopyKeys copy_keys(const LogEntry& e) {
  return {e.achieved_step_s.has_value(), e.oom.has_value(), e.scenario && e.layout, e.truncated, e.time};
}

std::string prefers(const CopyKeys& a, const CopyKeys& b) {
  if (a.achieved != b.achieved) return a.achieved ? "achieved figures" : "";
  if (a.oom != b.oom) return a.oom ? "out-of-memory record" : "";
  if (a.plan != b.plan) return a.plan ? "scenario and plan" : "";
  if (a.truncated != b.truncated) return !a.truncated ? "not truncated" : "";
  if (a.time != b.time) return a.time > b.time ? "later end time" : "";
  return "";
}

bool replaces(const CopyKeys& challenger, const CopyKeys& holder, std::string* why) {
  if (std::string r = prefers(challenger, holder); !r.empty()) {
    *why = r;
    return true;
  }
  const std::string r = prefers(holder, challenger);
  *why = r.empty() ? "first read" : r;
  return false;
}

MergedLog merge_logs(const std::vector<LogText>& sources, const ReadLimits& limits) {
  MergedLog m;
  std::vector<LogEntry> kept;
  std::map<std::string, size_t> by_job;  // merge key (cluster and job id) -> index in kept
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
      const auto [it, fresh] = by_job.emplace(e.merge_key(), kept.size());
      if (fresh) {
        kept.push_back(std::move(e));
        continue;
      }
      LogEntry& holder = kept[it->second];
      std::string why;
      const bool swap = replaces(copy_keys(e), copy_keys(holder), &why);
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
  return merge_summary(m.files, m.lines, m.entries.size(), m.duplicates, m.dropped);
}

std::string merge_summary(size_t files, size_t lines, size_t jobs, size_t duplicates,
                          const std::vector<DroppedCopy>& dropped) {
  std::map<std::string, size_t> by_reason;
  for (const auto& d : dropped) ++by_reason[d.why];
  std::string out = std::to_string(files) + (files == 1 ? " file, " : " files, ") + std::to_string(lines) +
                    " lines, " + std::to_string(jobs) + " jobs";
  if (duplicates == 0) return out;
  out += "; " + std::to_string(duplicates) + " duplicate line" + (duplicates == 1 ? "" : "s") + " dropped (";
  bool first = true;
  for (const auto& [why, n] : by_reason) {
    out += (first ? "" : ", ") + std::to_string(n) + " kept the other copy: " + why;
    first = false;
  }
  return out + ")";
}

}  // namespace paratune::tuning
