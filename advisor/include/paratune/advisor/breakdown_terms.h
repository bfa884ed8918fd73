// The step-time terms of a Breakdown (plan.h) by name, in one order: the one list that the plan JSON, `advise`'s
// breakdown line, bars and legend, its runner-up note, `explain` and the accuracy report's recipe check walk.
#pragma once

#include <string_view>

#include "paratune/advisor/plan.h"

namespace paratune::advisor {

struct BreakdownTerm {
  const char* name;           // the key in plan.json, the tuning log and `advise --json`
  double Breakdown::*field;
  char bar;                   // its character in `advise`'s breakdown bars
  const char* legend;         // what the bar's legend calls it
  const char* group;          // "" always shown; "moe", "offload", "stages": shown where a term of the group is priced
};

inline constexpr BreakdownTerm kBreakdownTerms[] = {
    {"compute", &Breakdown::compute, '#', "compute", ""},
    {"recompute", &Breakdown::recompute, 'r', "recompute", ""},
    {"tp_comm", &Breakdown::tp_comm, 't', "TP comm", ""},
    {"cp_comm", &Breakdown::cp_comm, 'c', "CP comm", ""},
    {"pp_bubble", &Breakdown::pp_bubble, 'b', "pipeline bubble", ""},
    {"pp_comm", &Breakdown::pp_comm, 'p', "PP comm", ""},
    {"dp_comm_exposed", &Breakdown::dp_comm_exposed, 'd', "DP/ZeRO comm exposed", ""},
    {"optimizer", &Breakdown::optimizer, 'o', "optimizer", ""},
    {"other", &Breakdown::other, '.', "other", ""},
    {"ep_comm", &Breakdown::ep_comm, 'e', "EP all-to-all", "moe"},
    {"moe_imbalance", &Breakdown::moe_imbalance, 'i', "MoE load imbalance", "moe"},
    {"offload", &Breakdown::offload, 'h', "host offload", "offload"},
    {"pp_imbalance", &Breakdown::pp_imbalance, 's', "stage imbalance", "stages"}};

// Whether a term is shown for this breakdown: a term of no group always; a grouped one (the mixture-of-experts
// terms; CPU activation offload; the pipeline stage imbalance) when any term of its group is priced.
inline bool shown(const Breakdown& b, const BreakdownTerm& term) {
  if (!*term.group) return true;
  for (const auto& t : kBreakdownTerms)
    if (std::string_view(t.group) == term.group && b.*t.field > 0) return true;
  return false;
}

}  // namespace paratune::advisor
