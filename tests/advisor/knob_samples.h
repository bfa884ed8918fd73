// A value for a knob that differs from what a base scenario holds, as the knob's getter gives it back: the surface
// tests (knobs_test.cpp, tests/tuning/knob_json_test.cpp, tests/planner/knob_spec_test.cpp) set it through a surface
// and look for it in the scenario that comes out.
#pragma once

#include <cstdio>
#include <string>

#include "paratune/advisor/catalog.h"
#include "paratune/advisor/knobs.h"

namespace paratune::knob_test {

using advisor::Knob;
using advisor::KnobType;
using advisor::KnobValue;

// `spec`: within the SPEC's own bound.
inline KnobValue sample_value(const Knob& k, const advisor::Scenario& base, bool spec = false) {
  const KnobValue was = k.get ? k.get(base) : KnobValue{};
  const std::string name = k.full_name();
  if (name == "model.preset")
    return std::string(std::get<std::string>(was) == "llama3-8b" ? "llama3-70b" : "llama3-8b");
  if (name == "cluster.gpu") return std::string("a100-sxm4-80gb");
  if (name == "training.framework_version") return std::string("core_v0.14");  // a megatron version, not the default
  if (name == "cluster.placement.nodes_per_leaf") return std::string("2,3");
  if (name == "cluster.te_version") return std::string("2.14");  // a version, not any text
  switch (k.type) {
    case KnobType::Int: {
      const double hi = spec && k.spec_hi > 0 ? k.spec_hi : k.hi;
      for (double x : {k.lo + 1, k.lo + 2, k.lo})
        if (x <= hi && KnobValue{static_cast<long>(x)} != was) return static_cast<long>(x);
      return {};
    }
    case KnobType::Number: return k.lo + 1.5;
    case KnobType::Bool: return !(std::holds_alternative<bool>(was) && std::get<bool>(was));
    case KnobType::Enum:
    case KnobType::Word:
    case KnobType::List: {
      const auto values = advisor::knob_values(k);
      for (auto it = values.rbegin(); it != values.rend(); ++it)
        if (KnobValue{*it} != was) return *it;
      return {};
    }
    case KnobType::Text: return "sample-" + std::string(k.name);
    case KnobType::Table: return {};
  }
  return {};
}

// The value as a TOML value.
inline std::string toml_text(const Knob& k, const KnobValue& v) {
  if (const auto* l = std::get_if<long>(&v)) return std::to_string(*l);
  if (const auto* d = std::get_if<double>(&v)) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3f", *d);
    return b;
  }
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  const std::string& s = std::get<std::string>(v);
  if (k.type != KnobType::List) return "\"" + s + "\"";
  const bool numbers = s.find_first_not_of("0123456789,") == std::string::npos;
  std::string out = "[";
  size_t from = 0;
  while (from <= s.size()) {
    size_t to = s.find(',', from);
    if (to == std::string::npos) to = s.size();
    const std::string item = s.substr(from, to - from);
    out += (out.size() > 1 ? ", " : "") + (numbers ? item : "\"" + item + "\"");
    from = to + 1;
  }
  return out + "]";
}

inline std::string shown(const KnobValue& v) {
  if (std::holds_alternative<std::monostate>(v)) return "(unset)";
  if (const auto* l = std::get_if<long>(&v)) return std::to_string(*l);
  if (const auto* d = std::get_if<double>(&v)) return std::to_string(*d);
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  return "'" + std::get<std::string>(v) + "'";
}

}  // namespace paratune::knob_test
