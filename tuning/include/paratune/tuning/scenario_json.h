// The scenario and layout of a tuning-log line (the JSON planner::to_json writes) back into advisor values, so that a
// logged job can be predicted again (with other parameters: the calibration fit, the breakdown plot).
#pragma once

#include <nlohmann/json.hpp>

#include "paratune/advisor/plan.h"
#include "paratune/advisor/scenario.h"

namespace paratune::tuning {

// Throw std::invalid_argument naming the field. Missing optional fields take the advisor's defaults; the few the
// log line does not carry today (tied_embeddings, dropout, flash_attention, overlap_dp_comm, nvls, rail_aligned)
// are read when present, and so are the catalog overrides cluster.gpu_spec {peak_tflops, memory_gib, hbm_tbps,
// nvlink_gbps} (written only when set), so that the job is predicted again on the baseline it was planned with.
// training.framework_version is the version the scenario ran (written resolved: the user's, the site's default or
// paratune's); an id that is not a supported version of training.framework is refused, naming the valid ones.
advisor::Scenario scenario_from_json(const nlohmann::json& j);
advisor::Layout layout_from_json(const nlohmann::json& j);

// The inverse, with every field scenario_from_json reads (used to generate histories for tests and docs).
nlohmann::json scenario_to_json(const advisor::Scenario& s);
nlohmann::json layout_to_json(const advisor::Layout& l);

}  // namespace paratune::tuning
