// The overlap-sensitivity report behind `paratune explain`: the winner and its rivals predicted again with each
// overlap term at the ends of its band. Checked against what each term means (more hidden communication cannot make
// a step slower, more interference cannot make it faster, a term a layout never uses moves nothing) and against the
// search's own figures with the terms as used.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dgx_h100.h"
#include "paratune/advisor/advisor.h"
#include "paratune/advisor/catalog.h"
#include "paratune/advisor/overlap_sensitivity.h"

using namespace paratune::advisor;

namespace {

// Llama 3 70B on 16 DGX H100 nodes, Megatron with TP communication overlap.
Scenario llama70b_on_128_h100() {
  Scenario s = test_scenarios::on_dgx_h100("llama3-70b", 16, 1024);
  s.training.tp_comm_overlap = true;
  return s;
}

Contender fixed(Scenario s, Framework f, int tp, int pp, int zero_stage) {
  s.training.framework = f;
  s.parallel.tp = tp;
  s.parallel.pp = pp;
  s.parallel.zero_stage = zero_stage;
  return {f, layout_from_scenario(s)};
}

TermSensitivity term(const OverlapSensitivity& o, const std::string& name) {
  for (const auto& t : o.terms)
    if (t.term == name) return t;
  throw std::runtime_error("no term " + name);
}

}  // namespace

TEST(OverlapSensitivity, AsUsedReproducesTheSearch) {
  const Scenario s = llama70b_on_128_h100();
  SearchLimits l;
  l.top_n = 3;
  const Plan p = advise(s, l);
  ASSERT_GE(p.alternatives.size(), 2u);
  std::vector<Contender> rivals;
  for (const auto& a : p.alternatives) rivals.push_back({a.framework, a.layout});
  const auto o = overlap_sensitivity(s, {p.framework, p.layout}, rivals, shipped_params());
  EXPECT_NEAR(o.winner_s, p.prediction.step_time_s, 1e-9 * p.prediction.step_time_s);
  ASSERT_EQ(o.lead_pct.size(), rivals.size());
  for (size_t i = 0; i < rivals.size(); ++i)
    EXPECT_NEAR(o.lead_pct[i], 100 * (p.alternatives[i].prediction.step_time_s / p.prediction.step_time_s - 1), 1e-6);
  EXPECT_EQ(o.terms.size(), std::size(kOverlapTerms));
  for (const auto& t : o.terms) {
    EXPECT_EQ(t.lead_low_pct.size(), rivals.size());
    EXPECT_DOUBLE_EQ(t.low, t.value * 0.5) << t.term;
    EXPECT_DOUBLE_EQ(t.high, std::min(1.0, t.value * 1.5)) << t.term;
  }
}

// More of the TP communication hidden cannot slow a TP layout down; more interference cannot speed anything up.
TEST(OverlapSensitivity, EachTermMovesTheWayItMeans) {
  const Scenario s = llama70b_on_128_h100();
  const Contender tp8 = fixed(s, Framework::Megatron, 8, 2, 1), tp1 = fixed(s, Framework::Megatron, 1, 8, 1);
  const auto o = overlap_sensitivity(s, tp8, {tp1}, shipped_params());
  const TermSensitivity tp = term(o, "tp_overlap");
  EXPECT_TRUE(tp.applies);
  EXPECT_GT(tp.winner_low_s, o.winner_s) << "half the TP overlap must expose more TP communication";
  EXPECT_LT(tp.winner_high_s, o.winner_s);
  const TermSensitivity inter = term(o, "overlap_interference");
  EXPECT_TRUE(inter.applies);
  EXPECT_LE(inter.winner_low_s, o.winner_s);
  EXPECT_GE(inter.winner_high_s, o.winner_s);
  EXPECT_LT(inter.winner_low_s, inter.winner_high_s);
}

// ZeRO-3's DeepSpeed overlap share moves nothing for Megatron layouts without ZeRO-3, and moves a DeepSpeed ZeRO-3
// layout whose gathers outlast the compute meant to hide them (the positive control; where they are fully hidden the
// exposure is the interference share of the gathers, whatever the window).
TEST(OverlapSensitivity, ATermNoContenderUsesDoesNotApply) {
  const Scenario s = llama70b_on_128_h100();
  const Contender a = fixed(s, Framework::Megatron, 8, 2, 1), b = fixed(s, Framework::Megatron, 4, 4, 1);
  const auto o = overlap_sensitivity(s, a, {b}, shipped_params());
  const TermSensitivity z3 = term(o, "ds_zero3_overlap");
  EXPECT_FALSE(z3.applies);
  EXPECT_EQ(z3.winner_low_s, o.winner_s);
  EXPECT_EQ(z3.winner_high_s, o.winner_s);
  EXPECT_TRUE(z3.holds);
  // On one 100 Gb/s NIC per node, gathering a 70B layer's parameters from 128 ranks (~1.7 GB in 16-bit) takes longer
  // than the layer's compute: how much of that compute hides it is what the term says.
  Scenario thin = s;
  thin.cluster.nic_count = 1;
  thin.cluster.nic_gbps = 100;
  const Contender ds = fixed(thin, Framework::DeepSpeed, 1, 1, 3);
  const auto with_ds = overlap_sensitivity(thin, fixed(thin, Framework::Megatron, 8, 2, 1), {ds}, shipped_params());
  EXPECT_TRUE(term(with_ds, "ds_zero3_overlap").applies);
}

// The rule: a rival that becomes faster overtakes a winner it trailed; where the tie-break (the simpler layout within
// 1 %) chose the winner over a faster rival, only a rival more than 1 % faster overtakes it; a pair already in the
// other order is not overtaken again.
TEST(OverlapSensitivity, OvertakenFollowsTheTieBreak) {
  EXPECT_TRUE(overtaken(-0.1, 3.0));
  EXPECT_FALSE(overtaken(0.0, 3.0));
  EXPECT_FALSE(overtaken(2.0, 3.0));
  EXPECT_FALSE(overtaken(-0.8, -0.5));
  EXPECT_TRUE(overtaken(-1.2, -0.5));
  EXPECT_FALSE(overtaken(-3.0, -2.0)) << "ahead beyond the tie-break already: no change of order";
}

// A rival identical to the winner never overtakes it, whatever the terms.
TEST(OverlapSensitivity, ARivalIdenticalToTheWinnerNeverOvertakes) {
  const Scenario s = llama70b_on_128_h100();
  const Contender a = fixed(s, Framework::Megatron, 8, 2, 1);
  const auto o = overlap_sensitivity(s, a, {a}, shipped_params(), 0.9);
  EXPECT_TRUE(o.holds());
  for (const auto& t : o.terms) {
    EXPECT_DOUBLE_EQ(t.lead_low_pct[0], 0.0);
    EXPECT_DOUBLE_EQ(t.lead_high_pct[0], 0.0);
  }
}
