// When the search finds no valid layout at all (before memory is even asked), the user needs the obstacle, not a
// checklist: the first layout the scenario's constraints allow (least model parallelism first), why it is refused,
// and — where the refusal is the framework's — which frameworks run that same layout at their default versions.
#include "obstacle.h"

#include <string>
#include <vector>

#include "divisors.h"
#include "paratune/advisor/advisor.h"

namespace paratune::advisor {

namespace {

std::string degrees(const Layout& l) {
  return "tp=" + std::to_string(l.tp) + " pp=" + std::to_string(l.pp) + " cp=" + std::to_string(l.cp) +
         " dp=" + std::to_string(l.dp) + " micro_batch=" + std::to_string(l.micro_batch) +
         " zero_stage=" + std::to_string(l.zero_stage);
}

// The frameworks (default versions) that run the degrees of `l`, each with its own default ZeRO stage and
// recomputation unless the scenario fixes them.
std::vector<std::string> frameworks_that_run(const Scenario& s, const Layout& l, Framework refused) {
  std::vector<std::string> out;
  for (Framework g : {Framework::Megatron, Framework::DeepSpeed, Framework::Fsdp, Framework::Torchtitan}) {
    if (g == refused) continue;
    Scenario t = s;
    t.training.framework = g;
    t.training.framework_version.clear();
    t.parallel.tp = l.tp;
    t.parallel.pp = l.pp;
    t.parallel.cp = l.cp;
    if (layout_problem(t, layout_from_scenario(t), g).empty()) out.push_back(to_string(g));
  }
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i == 0 ? "" : i + 1 == v.size() ? " and " : ", ") + v[i];
  return out;
}

}  // namespace

std::string no_valid_layout_reason(const Scenario& s, Framework f) {
  const ParallelSpec& c = s.parallel;
  const int n = s.total_gpus();
  std::string first_reason;
  for (int tp : divisors(n)) {
    if (c.tp && *c.tp != tp) continue;
    for (int pp : divisors(n / tp)) {
      if (c.pp && *c.pp != pp) continue;
      for (int cp : divisors(n / tp / pp)) {
        if ((c.cp && *c.cp != cp) || (c.dp && *c.dp != n / tp / pp / cp)) continue;
        Scenario t = s;
        t.training.framework = f;
        t.parallel.tp = tp;
        t.parallel.pp = pp;
        t.parallel.cp = cp;
        const Layout l = layout_from_scenario(t);
        const std::string why = layout_problem(t, l, f);
        if (why.empty()) return "";  // a valid layout exists: the search limits excluded it
        if (!first_reason.empty()) continue;
        const std::vector<std::string> can = frameworks_that_run(s, l, f);
        first_reason = can.empty() ? degrees(l) + ": " + why
                                   : std::string("the framework: ") + to_string(f) + " cannot run " + degrees(l) + " (" + why +
                                         "); " + joined(can) + (can.size() == 1 ? " runs" : " run") + " it";
      }
    }
  }
  return first_reason;
}

}  // namespace paratune::advisor
