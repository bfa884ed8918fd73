// `paratune explain`: why the advised plan wins. Against the next best layouts, against the layout the user has in
// mind (--vs tp=8,pp=2), per framework and per layout family; differences inside the model's stated error said
// so; and what shaped the plan (the scenario's constraints, the site policy's caps, the calibration, the memory
// margin). cmd_advise.cpp runs the search and hands the result here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "paratune/advisor/advisor.h"
#include "paratune/advisor/calibration_file.h"
#include "paratune/policies/policy.h"

namespace paratune::cli {

// How far apart two predicted step times must be before the model can tell them apart. docs/accuracy.md, "Leave
// one source out": predicting each published run without its source, the median absolute error of the step time
// is 5.0 % (MAPE 8.6 %, 495 rows); "Ranking in layout-varying groups": pairs of layouts measured at least 5 % apart
// are ordered as measured in 86 % of cases. A difference under 5 % is inside the model's error: it is no reason.
inline constexpr double kModelErrorPct = 5.0;

struct ExplainInput {
  advisor::Scenario scenario;  // as the search saw it (the policy's facts and caps applied)
  advisor::Plan plan;
  advisor::SearchLimits limits;  // as the search used them (the policy's caps, the calibration)
  std::vector<std::string> notes;
  std::vector<policies::PolicyChange> changes;
  std::string policy_file;
  policies::EffectivePolicy policy;
  std::string calibration_file;
  std::optional<advisor::Calibration> calibration;
  std::optional<advisor::ParallelSpec> vs;  // --vs: the layout keys the user asks about
  std::string vs_text;
  bool as_json = false;
};

int explain(const ExplainInput& in);

}  // namespace paratune::cli
