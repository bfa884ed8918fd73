#include "overlap_report.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "advisor_cli.h"
#include "paratune/advisor/overlap_sensitivity.h"

namespace paratune::cli {

using nlohmann::json;
using namespace paratune::advisor;

json overlap_sensitivity_json(const ExplainInput& in) {
  std::vector<Contender> rivals;
  for (const auto& c : in.plan.alternatives) {
    if (rivals.size() == kSensitivityRivals) break;
    rivals.push_back({c.framework, c.layout});
  }
  const ModelParams params = in.limits.params.value_or(shipped_params());
  const OverlapSensitivity o = overlap_sensitivity(in.scenario, {in.plan.framework, in.plan.layout}, rivals, params);
  json rivals_json = json::array();
  for (size_t i = 0; i < rivals.size(); ++i)
    rivals_json.push_back({{"framework", to_string(rivals[i].framework)},
                           {"layout", advisor_cli::layout_text(rivals[i].layout)},
                           {"slower_by_pct", o.lead_pct[i]}});
  json terms = json::array();
  for (const auto& t : o.terms)
    terms.push_back({{"term", t.term},
                     {"value", t.value},
                     {"low", t.low},
                     {"high", t.high},
                     {"applies", t.applies},
                     {"winner_step_time_s", {t.winner_low_s, t.winner_high_s}},
                     {"rivals_slower_by_pct_low", t.lead_low_pct},
                     {"rivals_slower_by_pct_high", t.lead_high_pct},
                     {"holds", t.holds}});
  return {{"band", o.band}, {"rivals", rivals_json}, {"terms", terms}, {"holds", o.holds()}};
}

namespace {

std::string leads_text(const json& lo, const json& hi) {
  std::string out;
  for (size_t i = 0; i < lo.size(); ++i) {
    char b[96];
    std::snprintf(b, sizeof b, "%s#%zu %+.1f .. %+.1f %%", i ? ", " : "", i + 1, lo[i].get<double>(), hi[i].get<double>());
    out += b;
  }
  return out;
}

}  // namespace

void print_overlap_sensitivity(const json& j) {
  if (j["rivals"].empty()) return;
  std::printf("\nhow much the lead rests on the overlap terms (each at %.1fx and %.1fx its value; how much slower the "
              "next best are, at the low and the high end):\n",
              1 - j["band"].get<double>(), 1 + j["band"].get<double>());
  for (const auto& t : j["terms"]) {
    const std::string name = t["term"].get<std::string>();
    if (!t["applies"].get<bool>()) {
      std::printf("  %-21s %.2f: moves none of these layouts\n", name.c_str(), t["value"].get<double>());
      continue;
    }
    std::printf("  %-21s %.2f (%.2f .. %.2f): winner %.3f .. %.3f s; %s%s\n", name.c_str(), t["value"].get<double>(),
                t["low"].get<double>(), t["high"].get<double>(), t["winner_step_time_s"][0].get<double>(),
                t["winner_step_time_s"][1].get<double>(),
                leads_text(t["rivals_slower_by_pct_low"], t["rivals_slower_by_pct_high"]).c_str(),
                t["holds"].get<bool>() ? "" : "  <- a rival overtakes the winner");
  }
  std::printf("  %s\n", j["holds"].get<bool>()
                            ? "the winner stays ahead whichever overlap term moves"
                            : "the lead hinges on an overlap term marked above: the model cannot vouch for this choice "
                              "over that rival until a run measures it");
}

}  // namespace paratune::cli
