#include "paratune/advisor/overlap_sensitivity.h"

#include <algorithm>

#include "paratune/advisor/advisor.h"

namespace paratune::advisor {
namespace {

double step_s(Scenario s, const Contender& c, const ModelParams& p) {
  s.training.framework = c.framework;
  return predict(s, c.layout, p).step_time_s;
}

double lead_pct(double rival_s, double winner_s) { return 100 * (rival_s / winner_s - 1); }

}  // namespace

// Faster than the winner, and beyond the tie-break margin where the winner was already inside it. A rival already
// ahead beyond the margin (a caller's own pair, not the search's) overtakes nothing.
bool overtaken(double lead_now_pct, double lead_base_pct) {
  if (lead_base_pct < -kTieBreakPct) return false;
  return lead_now_pct < 0 && (lead_base_pct >= 0 || lead_now_pct < -kTieBreakPct);
}

bool OverlapSensitivity::holds() const {
  return std::all_of(terms.begin(), terms.end(), [](const TermSensitivity& t) { return t.holds; });
}

OverlapSensitivity overlap_sensitivity(const Scenario& s, const Contender& winner, const std::vector<Contender>& rivals,
                                       const ModelParams& params, double band) {
  OverlapSensitivity out;
  out.band = band;
  out.winner_s = step_s(s, winner, params);
  std::vector<double> rival_s;
  for (const auto& r : rivals) {
    rival_s.push_back(step_s(s, r, params));
    out.lead_pct.push_back(lead_pct(rival_s.back(), out.winner_s));
  }
  for (const auto& term : kOverlapTerms) {
    TermSensitivity t;
    t.term = term.name;
    t.value = params.*term.field;
    t.low = std::clamp(t.value * (1 - band), 0.0, 1.0);
    t.high = std::clamp(t.value * (1 + band), 0.0, 1.0);
    ModelParams lo = params, hi = params;
    lo.*term.field = t.low;
    hi.*term.field = t.high;
    t.winner_low_s = step_s(s, winner, lo);
    t.winner_high_s = step_s(s, winner, hi);
    t.applies = t.winner_low_s != out.winner_s || t.winner_high_s != out.winner_s;
    for (size_t i = 0; i < rivals.size(); ++i) {
      const double rl = step_s(s, rivals[i], lo), rh = step_s(s, rivals[i], hi);
      t.applies = t.applies || rl != rival_s[i] || rh != rival_s[i];
      t.lead_low_pct.push_back(lead_pct(rl, t.winner_low_s));
      t.lead_high_pct.push_back(lead_pct(rh, t.winner_high_s));
      if (overtaken(t.lead_low_pct.back(), out.lead_pct[i]) || overtaken(t.lead_high_pct.back(), out.lead_pct[i]))
        t.holds = false;
    }
    out.terms.push_back(std::move(t));
  }
  return out;
}

}  // namespace paratune::advisor
