// Supported framework versions: what each one accepts and which plans it cannot run. The table is the public
// contract documented in docs/frameworks.md ("Framework versions") and paratune(1); each row names the source the contract
// tests check it against (tests/contracts/*.json, produced by scripts/contracts/extract.py).
#pragma once

#include <string>
#include <vector>

#include "paratune/advisor/plan.h"
#include "paratune/advisor/scenario.h"

namespace paratune::advisor {

struct FrameworkVersion {
  Framework framework;
  std::string id;          // the value of framework_version, e.g. "core_v0.15"
  std::string label;       // what it is, e.g. "Megatron-LM / Megatron-Core 0.15"
  std::string source;      // repository and ref the contract is extracted from
  std::string contract;    // tests/contracts/<file>.json
  bool is_default = false;
};

// Every supported version, grouped by framework, the default first within each framework.
const std::vector<FrameworkVersion>& framework_versions();

// The version a scenario runs: training.framework_version when given (for the scenario's own framework), else
// the site policy's default for that framework (training.site_versions), else the framework's default. Throws
// std::invalid_argument listing the valid ids.
const FrameworkVersion& resolve_version(Framework f, const std::string& id);
const FrameworkVersion& version_for(const Scenario& s, Framework f);

// "" when the scenario's framework version can run what the scenario asks for (precision, FP8 recipe, async
// TP, ...), else why not and what would. Checked by validate().
std::string stack_problem(const Scenario& s);

// "" when the version can run this layout, else why not (the search skips such layouts; predict refuses them).
std::string version_problem(const Scenario& s, const Layout& l, Framework f);
// The NeMo AutoModel part of it (frameworks/automodel_rules.cpp).
std::string automodel_problem(const Scenario& s, const Layout& l);
// The memory-feature part of it (precision-aware optimizer, recompute modules, CPU activation offload).
std::string memory_feature_problem(const Scenario& s, const Layout& l, Framework f, const FrameworkVersion& v);

}  // namespace paratune::advisor
