// The scenario's knobs, each once: its one name, where it lives, its type and range, its help, the surfaces that
// take it and the old spellings still accepted. The one list that the --paratune SPEC parser (plugin/job/
// option_spec.cpp), the scenario file reader (scenario_toml.cpp), the tuning log's scenario JSON
// (tuning/src/scenario_json.cpp), the CLI's completion and the man pages' knob tables (paratune-knobs) walk; tests
// (tests/advisor/test_knobs.cpp, tests/unit/knob_surfaces_test.cpp) fail when a surface lacks a knob.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "paratune/advisor/scenario.h"

namespace paratune::advisor {

enum class KnobType {
  Int,     // an integer lo..hi
  Number,  // a number lo..hi
  Bool,    // true/false (the SPEC: yes/no)
  Enum,    // a name the knob's setter parses (and a few spellings of its own); `values` the canonical names
  Word,    // one of `values`, kept as written
  Text,    // free text: a name, a path, a version id (`values` is the placeholder shown in help)
  List,    // several of `values` (TOML: an array; SPEC: joined by '+'; JSON: joined by ',')
  Table,   // a TOML sub-table: its keys are the knobs of the section "SECTION.NAME"
};

// The surfaces a knob is on: the --paratune SPEC, the scenario file (TOML), the scenario/layout JSON of plan.json
// and the tuning log.
namespace surface {
constexpr unsigned kSpec = 1, kToml = 2, kJson = 4;
}  // namespace surface

// A knob's value as the readers hand it over: Int as long, Number as double, Bool, the rest as text
// (List: names joined by ','). monostate: unset (a getter's answer where the knob is not set or not written).
using KnobValue = std::variant<std::monostate, long, double, bool, std::string>;

struct Knob {
  const char* section;   // "model", "training", "cluster", "cluster.gpu_spec", "cluster.nic", "cluster.placement",
                         // "parallel"; "job": keys only the SPEC has (what the plugin does, not what is trained)
  const char* name;      // the one name: the key in its TOML table and JSON object, and in the SPEC
  KnobType type;
  double lo, hi;         // Int, Number: the valid range
  const char* values;    // Enum, Word, List: the valid names "a|b|c"; others: the value's placeholder ("N", "ID")
  unsigned surfaces;     // surface::k* bits
  const char* spec_key;  // the SPEC's short form where it has one ("gbs" for global_batch); "" = none
  double spec_hi;        // the SPEC's tighter bound (Slurm hands the SPEC to every step); 0 = hi
  const char* alias;     // the old spelling, accepted with a warning ("" = none)
  const char* help;      // one line
  // Reads a value into a scenario (throws std::invalid_argument saying what is valid); nullptr: the reader parses
  // it itself (a sub-table, an array of numbers) or it is the SPEC's own (section "job").
  void (*set)(Scenario&, const KnobValue&);
  // The knob's value in a scenario; monostate where unset or not written (the JSON writer leaves it out).
  KnobValue (*get)(const Scenario&);

  std::string full_name() const { return std::string(section) + "." + name; }
  bool on(unsigned s) const { return (surfaces & s) != 0; }
};

// Every knob, in the order the readers apply them (model.preset first: it sets the whole model).
std::span<const Knob> knobs();
// The knobs of one section ("model", "cluster.gpu_spec", ...), in table order.
std::vector<const Knob*> knobs_of(std::string_view section);
// "section.name" -> knob; nullptr if none.
const Knob* find_knob(std::string_view full_name);
// The SPEC's key (its name, short form or old spelling) -> knob; nullptr if none.
const Knob* find_spec_knob(std::string_view key);
// The sections in order: "model", "training", "cluster", its sub-tables, "parallel", "job".
std::span<const char* const> knob_sections();
// `values` as a list: "a|b|c" -> {"a", "b", "c"}.
std::vector<std::string> knob_values(const Knob& k);
// The range or the valid names, as help and the man pages show them: "1 … 1024", "bf16, fp16, fp8".
std::string knob_range(const Knob& k, bool spec = false);

}  // namespace paratune::advisor
