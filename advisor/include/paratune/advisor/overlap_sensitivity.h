// How much a plan's lead rests on the model's overlap terms: the winner and its nearest rivals predicted again with
// each overlap term moved down and up by a band, and whether the winner stays ahead. A plan whose lead flips when one
// overlap term moves is a plan the model cannot vouch for (`paratune explain` says so).
#pragma once

#include <string>
#include <vector>

#include "paratune/advisor/model.h"
#include "paratune/advisor/scenario.h"

namespace paratune::advisor {

// The model's overlap terms: the fractions of a communication the model takes as hidden behind computation, or as
// still slowing it. Every one is a share in [0, 1]; a new overlap term of ModelParams belongs here.
struct OverlapTerm {
  const char* name;
  double ModelParams::*field;
  const char* meaning;
};
inline constexpr OverlapTerm kOverlapTerms[] = {
    {"overlap_interference", &ModelParams::overlap_interference,
     "share of overlapped communication that still slows the computation beside it"},
    {"tp_overlap", &ModelParams::tp_overlap, "share of tensor-parallel communication hidden by comm/GEMM overlap"},
    {"pp_overlap", &ModelParams::pp_overlap, "share of pipeline point-to-point hidden in interleaved schedules"},
    {"ds_zero3_overlap", &ModelParams::ds_zero3_overlap,
     "share of a layer's compute that hides DeepSpeed ZeRO-3's gathers and reduce-scatters"},
};

// A layout as a framework would run it.
struct Contender {
  Framework framework = Framework::Megatron;
  Layout layout;
};

// One overlap term moved to the two ends of its band.
struct TermSensitivity {
  std::string term;
  double value = 0, low = 0, high = 0;      // the term as used, and the band's ends
  bool applies = false;                     // moving it changes some contender's predicted step time
  double winner_low_s = 0, winner_high_s = 0;  // the winner's step time with the term at low / high
  std::vector<double> lead_low_pct, lead_high_pct;  // per rival: how much slower than the winner (%), at low / high
  bool holds = true;                        // no rival overtakes the winner at either end
};

struct OverlapSensitivity {
  double band = 0;                          // relative move of each term (0.5: from half to 1.5 times its value)
  double winner_s = 0;                      // the winner's step time with the terms as used
  std::vector<double> lead_pct;             // per rival, with the terms as used
  std::vector<TermSensitivity> terms;       // one per kOverlapTerms entry
  bool holds() const;                       // the lead holds under every term
};

// A rival overtakes the winner when it becomes faster, beyond the search's 1 % tie-break where the tie-break (the
// simpler layout within 1 %) chose the winner in the first place.
inline constexpr double kTieBreakPct = 1.0;
// Whether a rival `lead_base_pct` % slower than the winner with the terms as used has overtaken it at `lead_now_pct`
// (never where it was ahead beyond the tie-break already).
bool overtaken(double lead_now_pct, double lead_base_pct);

// The winner and each rival predicted with `params` and with each overlap term at (1 - band) and (1 + band) times
// its value, clamped to [0, 1]. Pure: the scenario is the one the search saw; each contender's framework is set on it.
OverlapSensitivity overlap_sensitivity(const Scenario& s, const Contender& winner, const std::vector<Contender>& rivals,
                                       const ModelParams& params, double band = 0.5);

}  // namespace paratune::advisor
