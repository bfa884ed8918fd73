// The step-time terms of a Breakdown (plan.h) by name, in one order: what `advise`'s runner-up note, `explain` and
// the accuracy report's recipe check walk when they compare two predictions term by term.
#pragma once

#include "paratune/advisor/plan.h"

namespace paratune::advisor {

struct BreakdownTerm {
  const char* name;
  double Breakdown::*field;
};

inline constexpr BreakdownTerm kBreakdownTerms[] = {
    {"compute", &Breakdown::compute},     {"recompute", &Breakdown::recompute},
    {"tp_comm", &Breakdown::tp_comm},     {"cp_comm", &Breakdown::cp_comm},
    {"pp_bubble", &Breakdown::pp_bubble}, {"pp_comm", &Breakdown::pp_comm},
    {"dp_comm_exposed", &Breakdown::dp_comm_exposed}, {"optimizer", &Breakdown::optimizer},
    {"other", &Breakdown::other},         {"ep_comm", &Breakdown::ep_comm},
    {"moe_imbalance", &Breakdown::moe_imbalance}, {"offload", &Breakdown::offload}};

}  // namespace paratune::advisor
