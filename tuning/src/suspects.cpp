#include "paratune/tuning/suspects.h"

#include <algorithm>
#include <map>

#include "paratune/tuning/report.h"

namespace paratune::tuning {

SuspectRule suspect_rule(const LogEntry& e, double threshold) {
  SuspectRule rule;
  rule.threshold = threshold;
  rule.calibrated = e.predicted_calibrated;
  return rule;
}

bool flagged(const LogEntry& e, double threshold) {
  const auto r = e.ratio();
  // A flag without a basis was set against the unwidened threshold (before the basis was recorded) and cries wolf
  // on uncalibrated predictions: judge the ratio again. Without a ratio there is nothing to judge it by.
  if (e.flagged && (!e.suspect_basis.empty() || !r)) return true;
  return r && suspect_rule(e, threshold).suspect(*r);
}

void SuspectTally::add(const LogEntry& e) {
  const bool f = flagged(e, threshold_);
  if (!f && !e.ratio()) return;
  const auto& names = (f && !e.flagged_nodes.empty()) ? e.flagged_nodes : e.node_names;
  for (const auto& n : names) {
    auto& s = by_[n];
    s.node = n;
    ++s.jobs;
    if (f) {
      ++s.flagged_jobs;
      s.job_ids.push_back(e.job_id);
    }
  }
}

std::vector<SuspectNode> SuspectTally::nodes(size_t min_flagged) const {
  std::vector<SuspectNode> out;
  for (const auto& [n, s] : by_)
    if (s.flagged_jobs >= std::max<size_t>(1, min_flagged)) out.push_back(s);
  std::sort(out.begin(), out.end(), [](const SuspectNode& a, const SuspectNode& b) {
    if (a.flagged_jobs != b.flagged_jobs) return a.flagged_jobs > b.flagged_jobs;
    const double fa = double(a.flagged_jobs) / double(a.jobs), fb = double(b.flagged_jobs) / double(b.jobs);
    if (fa != fb) return fa > fb;
    return a.node < b.node;
  });
  return out;
}

std::vector<SuspectNode> suspect_nodes(const std::vector<const LogEntry*>& entries, double threshold,
                                       size_t min_flagged) {
  SuspectTally t(threshold);
  for (const LogEntry* e : entries) t.add(*e);
  return t.nodes(min_flagged);
}

}  // namespace paratune::tuning
