// JSON forms of the scenario and the plan: the plan file ($PARATUNE_PLAN), the tuning log, `paratune advise --json`.
#pragma once

#include <nlohmann/json.hpp>

#include "paratune/advisor/calibration_file.h"
#include "paratune/advisor/plan.h"
#include "paratune/advisor/scenario.h"

namespace paratune::planner {

nlohmann::json to_json(const advisor::Scenario& s);
nlohmann::json to_json(const advisor::Layout& l);
nlohmann::json to_json(const advisor::Prediction& p);
nlohmann::json to_json(const advisor::Plan& p);

// What a site calibration did to the scenario's prediction, as the plan file and `paratune advise/explain --json`
// record it: {"calibrated": true when an efficiency entry matched the scenario's (GPU, fabric, framework) (the
// lookup calibrated_params makes), "entries": [{"kind": "efficiency", "gpu", "fabric", "framework", "compute_scale",
// "network_scale", "samples", "error_before", "error_after"}, {"kind": "memory", "gpu", "framework", "headroom_gib",
// "oom_jobs", "near_limit_jobs"}]} (only the entries that applied; "" = any).
nlohmann::json calibration_json(const advisor::Calibration& c, const advisor::Scenario& s);

}  // namespace paratune::planner
