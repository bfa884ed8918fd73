// `paratune explain`'s overlap-sensitivity section: does the winner's lead over its nearest rivals hold when each of
// the model's overlap terms moves by half its value either way (advisor/overlap_sensitivity.h)?
#pragma once

#include <nlohmann/json.hpp>

#include "explain.h"

namespace paratune::cli {

// Rivals compared: the nearest alternatives of the plan, at most this many.
inline constexpr size_t kSensitivityRivals = 3;

nlohmann::json overlap_sensitivity_json(const ExplainInput& in);
void print_overlap_sensitivity(const nlohmann::json& j);

}  // namespace paratune::cli
