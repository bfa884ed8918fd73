// Why a scenario admits no valid layout (obstacle.cpp): "" when the first layouts its constraints allow are valid
// (then the search limits — the site's caps, micro-batch bounds — excluded them), else the obstacle named: the
// framework (and which frameworks run the same layout) or the divisibility rule the layout breaks.
#pragma once

#include <string>

#include "paratune/advisor/scenario.h"

namespace paratune::advisor {

std::string no_valid_layout_reason(const Scenario& s, Framework f);

}  // namespace paratune::advisor
