// The advisor's entry points: pure functions, values in, values out.
#pragma once

#include <stdexcept>
#include <optional>
#include <string>

#include "paratune/advisor/model.h"
#include "paratune/advisor/plan.h"
#include "paratune/advisor/scenario.h"

namespace paratune::advisor {

// Limits on the search that come from outside the scenario (the site policy).
struct SearchLimits {
  int max_tp = 0, max_pp = 0, max_cp = 0;            // 0 = no cap
  std::vector<int> zero_stages;                       // empty = all the framework supports
  std::vector<Recompute> recompute_modes;             // empty = all
  std::vector<Framework> frameworks;                  // empty = all
  int max_ep = 0;                                     // expert-parallel degree cap (MoE); 0 = no cap
  std::vector<Dispatcher> dispatchers;                // MoE token dispatchers allowed; empty = all
  int min_micro_batch = 1, max_micro_batch = 0;       // 0 = no cap
  double memory_headroom_gib = 0;                     // extra reserve per GPU
  // Share of each GPU's memory the search keeps free for the memory model's own error; the headroom above (the
  // policy's, the site's OOM history) counts towards it. Unset = kMemoryMargin.
  std::optional<double> memory_margin;
  int top_n = 5;
  bool all_frameworks = false;                        // also search the other frameworks (those in `frameworks`)
  bool allow_tp_beyond_nvlink = false;                // TP groups may span nodes beyond the NVLink domain (slow;
                                                      // off); inside a node TP is searched at its PCIe cost
  std::optional<ModelParams> params;                  // the site's calibration (calibration_file.h); unset = shipped
  double time_budget_s = 5.0;                         // stop searching after this long and say so (0 = no budget)
  // CUDA_DEVICE_MAX_CONNECTIONS as the site's policy imposes it on every job (its forced value; "" when it forbids
  // the variable): layouts whose framework stops at start-up under it are not planned (cuda_connections_problem).
  std::optional<std::string> cuda_device_max_connections;
};

// The search keeps 5 % of each GPU's memory free unless told otherwise: no advised plan above 95 % of the memory.
// The memory model has no measured peaks of the Megatron family to size it by; against the PyTorch-native sweep's
// peaks it is further off (docs/accuracy.md, "Memory against measured peaks"), which the site's OOM history
// (`paratune calibrate`, [[memory]]) and the policy's memory_headroom_gib add to.
inline constexpr double kMemoryMargin = 0.05;

// Nothing fits: the message says what would (more GPUs, full recompute, ...).
struct NothingFits : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Predict one fully specified layout (scenario.parallel must give it; defaults fill the rest).
Prediction predict(const Scenario& s);
Prediction predict(const Scenario& s, const Layout& layout);
Prediction predict(const Scenario& s, const Layout& layout, const ModelParams& params);

// Search all valid layouts; throws NothingFits when no layout fits memory.
Plan advise(const Scenario& s, const SearchLimits& limits = {});

// Whether a layout is valid for the scenario's allocation and model (divisibility, NVLink domain, framework
// support); returns "" when valid, else the reason.
std::string layout_problem(const Scenario& s, const Layout& l, Framework f);

// The layout `predict` uses: scenario.parallel with defaults filled (dp = the GPUs left over, sp = tp > 1, ...).
Layout layout_from_scenario(const Scenario& s);

}  // namespace paratune::advisor
