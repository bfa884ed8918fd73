// A site calibration: per GPU model, fabric and (optionally) framework, multipliers on the model's fitted efficiencies, learned from the
// site's own logged jobs (`paratune calibrate`, docs/calibration.md). Pure: parsing from a string, no file I/O
// (the CLI and the plugin read the file at their edge and hand the text in).
//
// How it reaches the model: calibrated_params() turns (calibration, scenario) into the ModelParams to construct
// an Evaluator with; a scenario whose GPU model/fabric has no entry gets the shipped parameters unchanged.
// Entries are per framework because stacks differ in how far they fall short of the model on the same hardware
// (Megatron on H100 went from 9.8 % to 18.1 % error when FSDP jobs shared its fit); a framework-less entry is the
// fallback for stacks with too few jobs of their own.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "paratune/advisor/model.h"
#include "paratune/advisor/scenario.h"

namespace paratune::advisor {

struct CalibrationEntry {
  std::string gpu;             // catalog key (canonical, e.g. "h100-sxm5-80gb")
  std::string fabric;          // to_string(Fabric), e.g. "infiniband"; "" = any fabric
  std::string framework;       // to_string(Framework), e.g. "megatron"; "" = any framework (files without the key)
  double compute_scale = 1.0;  // multiplies gemm_eff of the GPU's architecture (result capped at 1.0)
  double network_scale = 1.0;  // multiplies fabric_eff of the fabric (result capped at 1.0)
  int samples = 0;             // jobs the fit used
  int multinode_samples = 0;   // of which spanned more than one node (what network_scale is identified by)
  double error_before = 0;     // mean |measured/predicted - 1| of the step time on those jobs, shipped parameters
  double error_after = 0;      // the same with this entry applied
};

// Memory head-room per GPU model and framework, learned from jobs that died of OOM or ran near the limit
// (tuning/memory_headroom.h): added to the model's memory reserve (Evaluator::headroom_gib) when advising.
struct MemoryEntry {
  std::string gpu;             // catalog key
  std::string framework;       // to_string(Framework); "" = any framework
  double headroom_gib = 0;     // extra reserve per GPU
  int oom_jobs = 0;            // evidence: jobs that died of an out-of-memory error
  int near_limit_jobs = 0;     //           jobs whose logged peak was near the GPU's memory
};

struct Calibration {
  int version = 1;
  std::string generated;       // ISO-8601 time the file was written (informational)
  std::string source;          // what it was fitted from (informational)
  std::vector<CalibrationEntry> entries;
  std::vector<MemoryEntry> memory;  // [[memory]]
};

// Parse a calibration file's text (TOML). Throws std::invalid_argument "ORIGIN:LINE:COL: field: what is valid".
Calibration parse_calibration(std::string_view toml_text, const std::string& origin);

// The TOML text of a calibration (parse_calibration(to_toml(c)) == c up to float formatting).
std::string to_toml(const Calibration& c);

// The entry for a GPU model, fabric and framework: the framework matched exactly first, then a framework-less
// ("any") entry; within each, an exact fabric match first, then a fabric-less ("any") entry. nullptr if none.
// `gpu` may be an alias; it is canonicalised through the catalog.
const CalibrationEntry* find_entry(const Calibration& c, const std::string& gpu, Fabric fabric, Framework framework);
// Without a framework: only framework-less entries (what a caller that does not know the stack may apply).
const CalibrationEntry* find_entry(const Calibration& c, const std::string& gpu, Fabric fabric);

// `base` with the scenario's entry applied (base itself when no entry matches); the entry is looked up with the
// scenario's training.framework.
ModelParams apply_entry(const CalibrationEntry& e, const Scenario& s, const ModelParams& base = shipped_params());
ModelParams calibrated_params(const Calibration& c, const Scenario& s, const ModelParams& base = shipped_params());

// The [[memory]] entry for a GPU model and framework (the framework's own first, then a framework-less one).
const MemoryEntry* find_memory_entry(const Calibration& c, const std::string& gpu, Framework framework);
// Its head-room for the scenario's GPU and training.framework, 0 when none: what the caller adds to
// SearchLimits::memory_headroom_gib (on top of the policy's).
double calibrated_headroom_gib(const Calibration& c, const Scenario& s);

}  // namespace paratune::advisor
