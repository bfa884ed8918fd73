// The `--paratune[=SPEC]` option: grammar, parsing and validation (no Slurm here).
//
//   --paratune                      the site/default scenario
//   --paratune=PRESET               a model preset from the catalog, e.g. llama3-70b
//   --paratune=key=value,...        keys: the knob table's SPEC keys (advisor/knobs.h), by name or short form
//                                   (gbs, mbs, seq, zero, model); an old spelling is accepted with a note
//   --paratune=PRESET,key=value...  a preset refined by keys
//   --paratune=@FILE                a scenario TOML file
//   resume=PLAN (a key)             the plan.json of the run whose checkpoints this one loads: the plan keeps
//                                   its checkpoint format and sharding family (framework_checkpoint.h)
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "paratune/policies/policy.h"

namespace paratune::planner {

// One notion of mode for the option, the plugstack default and the site policy.
using Mode = policies::Mode;
using policies::mode_from_string;  // throws std::invalid_argument listing the valid modes
using policies::to_string;

struct SpecError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

struct OptionSpec {
  std::string raw;                         // what the user typed ("" for bare --paratune)
  std::string scenario_file;               // @FILE
  std::optional<std::string> model;        // preset key
  std::optional<int> seq, gbs, mbs, tp, pp, cp, zero, ep, etp, offload_layers;
  std::optional<std::string> framework, framework_version, precision, recompute, attention, fp8_recipe, dispatcher;
  std::optional<std::string> optimizer_moments, main_params, recompute_modules;  // canonical spellings
  std::optional<std::string> pipeline_schedule;
  std::optional<bool> compile, tp_comm_overlap;
  std::vector<std::string> notes;          // what the parser accepted but would rather see spelled otherwise
  std::optional<Mode> mode;
  std::optional<std::string> resume_plan;  // resume=PLAN: a previous plan.json (relative: the submit directory)
};

// Parse and validate; throws SpecError whose message names the bad token and lists what is valid.
OptionSpec parse_option_spec(std::string_view text);

// The usage text shown by `sbatch --help` (kept short: Slurm prints it in one column).
const char* option_usage();

}  // namespace paratune::planner
