// JSON forms of the scenario and the plan: the plan file ($PARATUNE_PLAN), the tuning log, `paratune advise --json`.
#pragma once

#include <nlohmann/json.hpp>

#include "paratune/advisor/plan.h"
#include "paratune/advisor/scenario.h"

namespace paratune::job {

nlohmann::json to_json(const advisor::Scenario& s);
nlohmann::json to_json(const advisor::Layout& l);
nlohmann::json to_json(const advisor::Prediction& p);
nlohmann::json to_json(const advisor::Plan& p);

}  // namespace paratune::job
