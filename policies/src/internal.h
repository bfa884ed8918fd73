// Helpers shared by the policy sources (not installed).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "paratune/policies/policy.h"

namespace paratune::policies::detail {

inline bool is_paratune_var(const std::string& name) { return name.rfind("PARATUNE_", 0) == 0; }

template <typename T>
bool contains(const std::vector<T>& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

inline std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

// "4" for whole numbers, "12.5" otherwise.
std::string fmt_number(double v);
std::string fmt_octal_mode(unsigned mode);  // "0640"

// facts.kernels, limits.max_ep and limits.dispatchers applied to the scenario (apply_kernels.cpp): the installed
// kernels into the cluster, the defaults a stack without TE / FA3 runs, and the user's settings that break them
// removed; each change appended to `ch`.
void apply_kernels_and_experts(const EffectivePolicy& p, advisor::Scenario& s, std::vector<PolicyChange>& ch);

}  // namespace paratune::policies::detail
