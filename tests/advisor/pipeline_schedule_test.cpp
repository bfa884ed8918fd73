// The pipeline schedule as a scenario knob ([parallel] pipeline_schedule): each schedule's bubble and in-flight
// activations from its paper's formula, what each framework runs, and an open search that leaves the schedules no
// calibration row measures to the scenario. The fixture: Llama 3 8B (32 layers) under torchtitan on 4 DGX H100 nodes,
// tp 2, pp 4 (8 layers a rank: the first adds the embedding, the last the LM head and loss), dp 4, micro-batch 1,
// global batch 128: m = 128 / (4 x 1) = 32 micro-batches per pipeline, so m > p.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "dgx_h100.h"
#include "paratune/advisor/advisor.h"
#include "paratune/advisor/framework_args.h"
#include "paratune/advisor/knobs.h"
#include "paratune/advisor/model.h"
#include "paratune/advisor/scenario_toml.h"

using namespace paratune::advisor;

namespace {

constexpr int kLayers = 32, kPp = 4, kPerRank = kLayers / kPp, kMicrobatches = 32;

Scenario titan_8b() {
  Scenario s = test_scenarios::on_dgx_h100("llama3-8b", 4, 128);
  s.training.framework = Framework::Torchtitan;
  return s;
}

Layout piped(std::optional<PipelineSchedule> schedule, int v) {
  Layout l;
  l.tp = 2; l.pp = kPp; l.dp = 4; l.micro_batch = 1;
  l.sequence_parallel = true;
  l.zero_stage = 3;
  l.recompute = Recompute::None;
  l.virtual_stages = v;
  l.schedule = schedule;
  return l;
}

// The stages' per-micro-batch times as the fixture's own numbers give them (one layer's time, the embedding, the
// LM head, the per-micro-batch overhead): first, two middle ranks, last.
struct StageFacts {
  double first, mid, last, w;  // w: one layer's weight-gradient (W) time
  double slowest() const { return std::max({first, mid, last}); }
  double idle() const { return first + 2 * mid + last - slowest(); }  // every stage but the slowest
  double idle_w() const {  // their W passes: the layers off the slowest rank
    return (kLayers - kPerRank) * w;
  }
};

StageFacts facts(const Evaluator::Result& r) {
  const double over = shipped_params().mb_overhead_us * 1e-6;
  return {kPerRank * r.layer_s + r.emb_s + over, kPerRank * r.layer_s + over, kPerRank * r.layer_s + r.head_s + over,
          r.layer_w_s};
}

Evaluator::Result run(std::optional<PipelineSchedule> schedule, int v) {
  return Evaluator(titan_8b(), Framework::Torchtitan).evaluate(piped(schedule, v));
}

}  // namespace

// 1F1B (Narayanan et al. 2021 §2.2.1): (p - 1) stage times of fill and drain per step, here the three stages that
// are not the slowest; GPipe idles exactly as long (the bubble fraction (p - 1) / m for both).
TEST(PipelineSchedule, OneFOneBAndGPipeIdleTheOtherStagesTime) {
  const auto a = run(PipelineSchedule::OneFOneB, 1), g = run(PipelineSchedule::GPipe, 1);
  ASSERT_EQ(a.microbatches, kMicrobatches);
  const StageFacts f = facts(a);
  ASSERT_GT(f.last, f.first) << "the LM head outweighs the embedding: the last rank is the slowest";
  EXPECT_NEAR(a.br.pp_bubble, f.idle(), 1e-9 * a.step_s);
  EXPECT_NEAR(g.br.pp_bubble, f.idle(), 1e-9 * g.step_s);
  // Unset = implied by virtual_stages: the same numbers as an explicit 1f1b.
  EXPECT_DOUBLE_EQ(run(std::nullopt, 1).step_s, a.step_s);
}

// Interleaving divides the bubble by the chunks per rank (Narayanan et al. §2.2.2).
TEST(PipelineSchedule, InterleavedDividesItByTheChunks) {
  const auto r = run(PipelineSchedule::Interleaved, 2);
  EXPECT_NEAR(r.br.pp_bubble, facts(r).idle() / 2, 1e-9 * r.step_s);
  EXPECT_DOUBLE_EQ(run(std::nullopt, 2).step_s, r.step_s);
}

// ZB-H1 (Qi et al. 2024, Table 2): (p - 1)(T_F + T_B - T_W) = (p - 1)(T - 2 T_W) with T = T_F + T_B + T_W, per
// chunk (InterleavedZeroBubble, the paper's ZB1P, with 2 chunks a rank).
TEST(PipelineSchedule, ZeroBubbleIsZbH1PerChunk) {
  const auto r = run(PipelineSchedule::ZeroBubble, 2);
  const StageFacts f = facts(r);
  ASSERT_GT(f.w, 0) << "the weight-gradient GEMMs take time";
  ASSERT_GT(f.idle(), 2 * f.idle_w());
  EXPECT_NEAR(r.br.pp_bubble, (f.idle() - 2 * f.idle_w()) / 2, 1e-9 * r.step_s);
  EXPECT_LT(r.br.pp_bubble, run(PipelineSchedule::Interleaved, 2).br.pp_bubble);
}

// ZB-V (Qi et al. §6; zero at T_F = T_B = T_W): ZB-H2's (p - 1)(T_F + T_B - 2 T_W) = (p - 1)(T - 3 T_W) on one
// chunk's (half a rank's) times, never below zero.
TEST(PipelineSchedule, ZbvIsZbH2OnHalfARanksTimes) {
  const auto r = run(PipelineSchedule::Zbv, 2);
  const StageFacts f = facts(r);
  EXPECT_NEAR(r.br.pp_bubble, std::max(0.0, f.idle() - 3 * f.idle_w()) / 2, 1e-9 * r.step_s);
  EXPECT_LE(r.br.pp_bubble, run(PipelineSchedule::ZeroBubble, 2).br.pp_bubble);
}

// GPipe keeps all m micro-batches' activations (every forward before any backward), 1F1B p of them on the first
// rank: m / p = 8 times the activations at m = 32 > p = 4 -- a little less here, as GPipe's worst rank is the last
// (its logits), which lacks the first rank's input buffers. ZB-V keeps 1F1B's (the authors' table: 1x), the
// interleaved schedules 1 + (p - 1) / (p v) times more (Korthikanti et al. 2022 §4).
TEST(PipelineSchedule, InFlightActivationsFollowTheSchedule) {
  const auto a = run(PipelineSchedule::OneFOneB, 1), g = run(PipelineSchedule::GPipe, 1);
  EXPECT_GT(g.mem_gib, a.mem_gib);
  const double ratio = g.mem.activations / a.mem.activations, m_over_p = double(kMicrobatches) / kPp;
  EXPECT_LE(ratio, m_over_p * (1 + 1e-12));
  EXPECT_GT(ratio, 0.95 * m_over_p);
  EXPECT_GT(g.mem.logits, 0) << "GPipe's worst rank is the last";
  const auto z = run(PipelineSchedule::Zbv, 2), i = run(PipelineSchedule::Interleaved, 2);
  EXPECT_NEAR(z.mem.activations, a.mem.activations, 1e-12);
  EXPECT_NEAR(i.mem.activations / a.mem.activations, 1 + (kPp - 1.0) / (kPp * 2), 1e-9);
  EXPECT_NEAR(run(PipelineSchedule::ZeroBubble, 2).mem.activations, i.mem.activations, 1e-12);
}

// What each schedule needs, and who runs it: refusals name the rule and, for another framework's schedule, the
// framework that runs it.
TEST(PipelineSchedule, RefusedWhereItCannotRun) {
  const Scenario s = titan_8b();
  const auto problem = [&](std::optional<PipelineSchedule> p, int v, Framework f = Framework::Torchtitan) {
    return layout_problem(s, piped(p, v), f);
  };
  EXPECT_EQ(problem(PipelineSchedule::Zbv, 2), "");  // control: every refusal below changes one thing
  EXPECT_NE(problem(PipelineSchedule::Zbv, 3).find("virtual_stages must be 2"), std::string::npos);
  Layout v_with_counts = piped(PipelineSchedule::Zbv, 2);
  v_with_counts.first_stage_layers = 7, v_with_counts.last_stage_layers = 7;  // looped counts mean nothing in a V
  EXPECT_NE(layout_problem(s, v_with_counts, Framework::Torchtitan).find("in a V"), std::string::npos);
  EXPECT_NE(problem(PipelineSchedule::Zbv, 4).find("virtual_stages must be 2"), std::string::npos);
  EXPECT_NE(problem(PipelineSchedule::ZeroBubble, 1).find("virtual_stages must be >= 2"), std::string::npos);
  EXPECT_NE(problem(PipelineSchedule::Interleaved, 1).find("virtual_stages must be >= 2"), std::string::npos);
  EXPECT_NE(problem(PipelineSchedule::GPipe, 2).find("virtual_stages must be 1"), std::string::npos);
  EXPECT_NE(problem(PipelineSchedule::OneFOneB, 2).find("virtual_stages must be 1"), std::string::npos);
  Scenario mega = s;
  mega.training.framework = Framework::Megatron;
  Layout zero1 = piped(PipelineSchedule::ZeroBubble, 2);
  zero1.zero_stage = 1;  // Megatron pipelines with the distributed optimizer, not ZeRO-3
  const std::string zb = layout_problem(mega, zero1, Framework::Megatron);
  EXPECT_NE(zb.find("not run by megatron"), std::string::npos) << zb;
  EXPECT_NE(zb.find("torchtitan"), std::string::npos) << zb;
  zero1.schedule = PipelineSchedule::Interleaved;
  EXPECT_EQ(layout_problem(mega, zero1, Framework::Megatron), "") << "control: Megatron interleaves";
  EXPECT_NE(problem(PipelineSchedule::GPipe, 1, Framework::Nemo).find("torchtitan"), std::string::npos);
  EXPECT_NE(problem(PipelineSchedule::Zbv, 2, Framework::DeepSpeed).find("torchtitan"), std::string::npos);
  // advise with the knob on a framework that lacks the schedule: the obstacle names it, and torchtitan.
  Scenario asks = test_scenarios::on_dgx_h100("llama3-8b", 4, 128);
  asks.parallel.pipeline_schedule = PipelineSchedule::ZeroBubble;
  try {
    advise(asks);
    ADD_FAILURE() << "Megatron runs no zero-bubble schedule";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("not run by megatron"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("torchtitan"), std::string::npos) << e.what();
  }
  asks.parallel.pipeline_schedule = PipelineSchedule::Interleaved;
  EXPECT_EQ(schedule_of(advise(asks).layout), PipelineSchedule::Interleaved) << "control";
  Layout flat = piped(PipelineSchedule::GPipe, 1);
  flat.pp = 1;
  flat.dp = 16;
  EXPECT_NE(layout_problem(s, flat, Framework::Torchtitan).find("needs pp >= 2"), std::string::npos);
}

// predict prices what the scenario names (zbv takes its 2 chunks when virtual_stages is unset), and torchtitan's
// arguments carry torch.distributed.pipelining's name in both forms (v0.2 TOML, main's CLI flag).
TEST(PipelineSchedule, PredictAndAdviseHonourTheKnob) {
  Scenario s = titan_8b();
  s.parallel.tp = 2; s.parallel.pp = kPp; s.parallel.dp = 4; s.parallel.micro_batch = 1; s.parallel.zero_stage = 3;
  s.parallel.pipeline_schedule = PipelineSchedule::Zbv;
  EXPECT_EQ(layout_from_scenario(s).virtual_stages, 2);
  const Prediction z = predict(s);
  s.parallel.pipeline_schedule = PipelineSchedule::Interleaved;
  const Prediction i = predict(s);
  EXPECT_LT(z.breakdown.pp_bubble, i.breakdown.pp_bubble);
  s.parallel.pipeline_schedule = PipelineSchedule::Zbv;
  s.parallel.virtual_stages = 3;
  EXPECT_THROW(predict(s), std::invalid_argument);

  Scenario open = titan_8b();
  open.parallel.pipeline_schedule = PipelineSchedule::ZeroBubble;
  const Plan p = advise(open);
  EXPECT_EQ(schedule_of(p.layout), PipelineSchedule::ZeroBubble);
  EXPECT_GE(p.layout.pp, 2);
  EXPECT_GE(p.layout.virtual_stages, 2);
  for (const auto& a : p.alternatives) EXPECT_EQ(schedule_of(a.layout), PipelineSchedule::ZeroBubble);
  const std::string toml = framework_args(open, p).files.at(0).content;
  EXPECT_NE(toml.find("pipeline_parallel_schedule = \"InterleavedZeroBubble\""), std::string::npos) << toml;
  open.training.framework_version = "main";
  const std::string flags = framework_args(open, p).files.at(0).content;
  EXPECT_NE(flags.find("--parallelism.pipeline_parallel_schedule=InterleavedZeroBubble"), std::string::npos) << flags;
}

// No calibration row measures GPipe or the zero-bubble schedules: an open search never picks them, whatever it
// pipelines (the same policy as ZeRO-1's sharding scope). Control: fixing one gets it.
TEST(PipelineSchedule, OpenSearchLeavesTheUnmeasuredSchedulesToTheScenario) {
  for (const char* preset : {"llama3-8b", "llama3-70b"}) {
    Scenario s = test_scenarios::on_dgx_h100(preset, 16, 512);
    s.training.framework = Framework::Torchtitan;
    s.parallel.pp = 4;  // a pipeline, so that a schedule is chosen at all
    const Plan p = advise(s);
    std::vector<Layout> all{p.layout};
    for (const auto& a : p.alternatives) all.push_back(a.layout);
    for (const Layout& l : all) {
      EXPECT_FALSE(l.schedule.has_value()) << preset;
      const PipelineSchedule got = schedule_of(l);
      EXPECT_TRUE(got == PipelineSchedule::OneFOneB || got == PipelineSchedule::Interleaved) << to_string(got);
    }
    s.parallel.pipeline_schedule = PipelineSchedule::GPipe;
    EXPECT_EQ(schedule_of(advise(s).layout), PipelineSchedule::GPipe) << "control: " << preset;
  }
}

// The knob on every surface: the SPEC key, the TOML key, the tuning log's JSON, and the parser's message.
TEST(PipelineSchedule, KnobRoundTripsAndNamesTheValidValues) {
  const Knob* k = find_knob("parallel.pipeline_schedule");
  ASSERT_NE(k, nullptr);
  EXPECT_TRUE(k->on(surface::kSpec) && k->on(surface::kToml) && k->on(surface::kJson));
  EXPECT_EQ(find_spec_knob("pipeline_schedule"), k);
  for (PipelineSchedule p : {PipelineSchedule::OneFOneB, PipelineSchedule::Interleaved, PipelineSchedule::GPipe,
                             PipelineSchedule::ZeroBubble, PipelineSchedule::Zbv}) {
    Scenario s = titan_8b();
    k->set(s, KnobValue{std::string(to_string(p))});
    ASSERT_TRUE(s.parallel.pipeline_schedule.has_value());
    EXPECT_EQ(*s.parallel.pipeline_schedule, p);
    EXPECT_EQ(std::get<std::string>(k->get(s)), to_string(p));
  }
  EXPECT_EQ(pipeline_schedule_from_string("ZBVZeroBubble"), PipelineSchedule::Zbv);  // PyTorch's names too
  try {
    pipeline_schedule_from_string("dualpipe");
    ADD_FAILURE() << "an unknown schedule must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("1f1b, interleaved, gpipe, zero_bubble, zbv"), std::string::npos);
  }
  Scenario unset = titan_8b();
  EXPECT_TRUE(std::holds_alternative<std::monostate>(k->get(unset)));
}

// Megatron-Core's interleaved schedule takes the micro-batches in groups of pp (schedules.py at core_v0.15.3:
// fewer than pp, or a last group of 1..pp-1, raises at the first step): such a plan is refused with the count,
// and a search never returns one. Llama 3 70B on 16 DGX H100 nodes, tp 8, pp 4, dp 4, micro-batch 1.
TEST(PipelineSchedule, InterleavingNeedsWholeGroupsOfPpMicrobatches) {
  Scenario s = test_scenarios::on_dgx_h100("llama3-70b", 16, 24);  // 24 / 4 = 6 micro-batches: 6 % 4 = 2
  Layout l;
  l.tp = 8; l.pp = 4; l.dp = 4; l.micro_batch = 1; l.virtual_stages = 2;
  l.sequence_parallel = true;
  l.zero_stage = 1;
  for (Framework f : {Framework::Megatron, Framework::Nemo}) {
    const std::string why = layout_problem(s, l, f);
    EXPECT_NE(why.find("global_batch / (dp * micro_batch) = 6"), std::string::npos) << to_string(f) << ": " << why;
    EXPECT_NE(why.find("multiple of pp = 4"), std::string::npos) << why;
  }
  l.virtual_stages = 1;  // the plain 1F1B schedule has no such rule
  EXPECT_EQ(layout_problem(s, l, Framework::Megatron), "");
  s.training.global_batch = 32;  // 8 micro-batches: two whole groups
  l.virtual_stages = 2;
  EXPECT_EQ(layout_problem(s, l, Framework::Megatron), "");
  s.training.global_batch = 24;
  const Plan plan = advise(s);
  std::vector<Layout> found{plan.layout};
  for (const auto& alt : plan.alternatives) found.push_back(alt.layout);
  for (const Layout& f : found) {
    if (f.virtual_stages > 1) {
      EXPECT_EQ((24 / (f.dp * f.micro_batch)) % f.pp, 0) << f.pp << " " << f.dp;
    }
  }
}
