// The step-time terms of a Breakdown (plan.h) by name, in one order: the one list that the plan JSON, `advise`'s
// breakdown line, bars and legend, its runner-up note, `explain` and the accuracy report's recipe check walk.
#pragma once

#include "paratune/advisor/plan.h"

namespace paratune::advisor {

struct BreakdownTerm {
  const char* name;           // the key in plan.json, the tuning log and `advise --json`
  double Breakdown::*field;
  char bar;                   // its character in `advise`'s breakdown bars
  const char* legend;         // what the bar's legend calls it
  bool moe_only;              // mixture-of-experts models only: left out of JSON and text when both MoE terms are 0
};

inline constexpr BreakdownTerm kBreakdownTerms[] = {
    {"compute", &Breakdown::compute, '#', "compute", false},
    {"recompute", &Breakdown::recompute, 'r', "recompute", false},
    {"tp_comm", &Breakdown::tp_comm, 't', "TP comm", false},
    {"cp_comm", &Breakdown::cp_comm, 'c', "CP comm", false},
    {"pp_bubble", &Breakdown::pp_bubble, 'b', "pipeline bubble", false},
    {"pp_comm", &Breakdown::pp_comm, 'p', "PP comm", false},
    {"dp_comm_exposed", &Breakdown::dp_comm_exposed, 'd', "DP/ZeRO comm exposed", false},
    {"optimizer", &Breakdown::optimizer, 'o', "optimizer", false},
    {"other", &Breakdown::other, '.', "other", false},
    {"ep_comm", &Breakdown::ep_comm, 'e', "EP all-to-all", true},
    {"moe_imbalance", &Breakdown::moe_imbalance, 'i', "MoE load imbalance", true}};

// Whether a breakdown has the mixture-of-experts terms (an MoE layout prices its all-to-all or imbalance).
inline bool has_moe_terms(const Breakdown& b) { return b.ep_comm > 0 || b.moe_imbalance > 0; }

}  // namespace paratune::advisor
