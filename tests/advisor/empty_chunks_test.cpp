// Planned pipeline stages when a rank holds fewer layers than virtual chunks. Megatron-Core's layout accepts empty
// stages (docs/source/api-guide/pipeline_parallel_layout.md at core_v0.14.0 and core_v0.15.3: "Note that it is legal
// to have empty stages, e.g., `E||t|L`"; at main d98e8a64 docs/user-guide/features/pipeline_parallel_layout.md: "Empty
// stages are allowed"; PipelineParallelLayerLayout.validate_layer_layout checks only the counts), so the rank with the LM head may be lightened even where layers = pp x vpp. The model is Nemotron-22B as
// NVIDIA's NeMo 24.07 performance summary gives it (40 layers, hidden 6144, 48 heads, FFN 24576, vocabulary
// 256,000, sequence 4096; data/calibration/published/measurements.csv row NEMO2407-9) on 8 DGX H100 nodes, in the
// Megatron-Bridge recipe's layout tp 2, pp 4, vpp 10.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "dgx_h100.h"
#include "paratune/advisor/advisor.h"
#include "paratune/advisor/framework_args.h"
#include "paratune/advisor/model.h"

using namespace paratune::advisor;

namespace {

Layout recipe(int vpp) {
  Layout l;
  l.tp = 2; l.pp = 4; l.dp = 8; l.micro_batch = 1; l.virtual_stages = vpp;
  l.sequence_parallel = true;
  l.zero_stage = 1;
  l.recompute = Recompute::None;
  return l;
}

// The layout string's stages, split at '|'.
std::vector<std::string> stages_of(const std::string& layout) {
  std::vector<std::string> out(1);
  for (char c : layout) {
    if (c == '|') out.emplace_back();
    else out.back() += c;
  }
  return out;
}

// The value of `key` (a "--flag=" or "key=" prefix at a line's start) in the emitted file, quotes dropped.
std::string value_after(const std::string& content, const std::string& key) {
  size_t at = content.find(key);
  if (at == std::string::npos) return "";
  at += key.size();
  std::string v = content.substr(at, content.find('\n', at) - at);
  v.erase(std::remove(v.begin(), v.end(), '"'), v.end());
  return v;
}

// What the layout must say for layers split first / (middle ranks evenly, earlier ones one more) / last over pp
// ranks of vpp chunks each: pp x vpp stages, the embedding first and the loss last, every rank's layers spread over
// its chunks as evenly as whole layers allow (so a rank with n < vpp layers has vpp - n empty chunks).
void expect_layout(const std::string& layout, int L, int pp, int vpp, int first, int last) {
  std::vector<int> rank(pp, 0);
  rank.front() = first;
  rank.back() = last;
  for (int r = 1; r < pp - 1; ++r) rank[r] = (L - first - last) / (pp - 2) + (r - 1 < (L - first - last) % (pp - 2));
  const std::vector<std::string> st = stages_of(layout);
  ASSERT_EQ(int(st.size()), pp * vpp) << layout;
  EXPECT_EQ(std::count(layout.begin(), layout.end(), 't'), L) << layout;
  EXPECT_EQ(layout.front(), 'E') << layout;
  EXPECT_EQ(layout.back(), 'L') << layout;
  EXPECT_EQ(std::count(layout.begin(), layout.end(), 'E'), 1) << layout;
  EXPECT_EQ(std::count(layout.begin(), layout.end(), 'L'), 1) << layout;
  int empty = 0, want_empty = 0;
  for (int r = 0; r < pp; ++r) {
    int held = 0;
    for (int c = 0; c < vpp; ++c) {
      const int t = int(std::count(st[c * pp + r].begin(), st[c * pp + r].end(), 't'));
      held += t;
      empty += t == 0;
      EXPECT_GE(t, rank[r] / vpp) << "rank " << r << " chunk " << c << ": " << layout;
      EXPECT_LE(t, (rank[r] + vpp - 1) / vpp) << "rank " << r << " chunk " << c << ": " << layout;
    }
    EXPECT_EQ(held, rank[r]) << "rank " << r << ": " << layout;
    want_empty += std::max(0, vpp - rank[r]);
  }
  EXPECT_EQ(empty, want_empty) << layout;
}

// The conditions under which 11 / 11 / 11 / 7 is the best split (below): the LM head and loss weigh h layers with
// 3 + e < h < 5, the embedding e < 1 layer.
bool head_weighs_3_to_5_layers(const Evaluator::Result& r) {
  const double head = r.head_s / r.layer_s, emb = r.emb_s / r.layer_s;
  return emb < 1 && head > 3 + emb && head < 5;
}

}  // namespace

// The LM head and loss (V h = 1.57 G parameters, against 12 h^2 = 453 M a layer) weigh h layers, 3 + e < h < 5, and
// the embedding e < 1 layer. Then 11 / 11 / 11 / 7 is the only best split: a last rank of 8 or more pays 8 + h,
// more than 11 + e and than 7 + h; a first rank of 12 or more pays 12 + e, and a middle rank of 12 pays 12, both more
// than 7 + h and 11 + e; and with the first at most 11, the middle ranks at most 11 and the last at most 7, only
// 11 + 11 + 11 + 7 reaches 40 layers. The old rule (a layer per chunk) kept 10 on every rank at vpp 10.
TEST(EmptyChunks, TheHeadRankHoldsFewerLayersThanChunks) {
  const Evaluator ev(test_scenarios::nemotron_22b_on_dgx_h100(), Framework::Megatron);
  const Layout l = recipe(10);
  const auto r = ev.evaluate(l);
  ASSERT_TRUE(head_weighs_3_to_5_layers(r)) << r.head_s / r.layer_s << " " << r.emb_s / r.layer_s;
  const Layout planned = ev.with_planned_stages(l, r);
  EXPECT_EQ(planned.first_stage_layers, 11);
  EXPECT_EQ(planned.last_stage_layers, 7);
  EXPECT_LT(planned.last_stage_layers, l.virtual_stages);
  EXPECT_EQ(layout_problem(test_scenarios::nemotron_22b_on_dgx_h100(), planned, Framework::Megatron), "");
  const auto even = ev.evaluate(l), lighter = ev.evaluate(planned);
  EXPECT_LT(lighter.br.pp_imbalance, 0.5 * even.br.pp_imbalance);
  EXPECT_LT(lighter.step_s, even.step_s);
}

// Control: with more than two layers a chunk (40 > 4 x 2 x 2) the best split already held at least one layer per
// chunk, so the old bounds (first, last >= vpp) admitted it and the change leaves it alone: the same 11 / 7 as
// without interleaving, where the old and new bounds are the same.
TEST(EmptyChunks, FewerChunksThanLayersKeepTheSplit) {
  const Evaluator ev(test_scenarios::nemotron_22b_on_dgx_h100(), Framework::Megatron);
  for (int vpp : {1, 2}) {
    const auto r = ev.evaluate(recipe(vpp));
    ASSERT_TRUE(head_weighs_3_to_5_layers(r)) << r.head_s / r.layer_s << " " << r.emb_s / r.layer_s;
    const Layout planned = ev.with_planned_stages(recipe(vpp), r);
    EXPECT_EQ(planned.first_stage_layers, 11) << "vpp " << vpp;
    EXPECT_EQ(planned.last_stage_layers, 7) << "vpp " << vpp;
    EXPECT_GE(planned.last_stage_layers, vpp);
  }
}

// The advised plan at the recipe's degrees carries the lighter last rank into Megatron's and NeMo's layout
// argument, with empty stages where the split leaves a rank fewer layers than chunks.
TEST(EmptyChunks, TheEmittedLayoutHasEmptyStagesWhereTheSplitSays) {
  for (Framework f : {Framework::Megatron, Framework::Nemo}) {
    Scenario s = test_scenarios::nemotron_22b_on_dgx_h100();
    s.training.framework = f;
    s.parallel.tp = 2;
    s.parallel.pp = 4;
    s.parallel.virtual_stages = 10;
    const Plan p = advise(s);
    ASSERT_EQ(p.layout.pp, 4);
    ASSERT_EQ(p.layout.virtual_stages, 10);
    ASSERT_GT(p.layout.first_stage_layers, 0) << to_string(f);
    EXPECT_LT(p.layout.last_stage_layers, 10) << to_string(f);
    const std::string content = framework_args(s, p).files.at(0).content;
    const std::string layout = value_after(content, f == Framework::Megatron ? "--pipeline-model-parallel-layout="
                                                                            : "pipeline_model_parallel_layout=");
    ASSERT_FALSE(layout.empty()) << content;
    expect_layout(layout, 40, 4, 10, p.layout.first_stage_layers, p.layout.last_stage_layers);
    EXPECT_NE(layout.find("||"), std::string::npos) << "an empty stage between two others: " << layout;
  }
}

// The rule the check enforces now: every rank at least one layer, the counts adding up; fewer than vpp is fine.
TEST(EmptyChunks, StageLayoutProblemNeedsALayerOnEveryRank) {
  const Scenario s = test_scenarios::nemotron_22b_on_dgx_h100();
  auto split = [&](int pp, int first, int last) {
    Layout l = recipe(pp == 4 ? 10 : 1);
    l.pp = pp;
    l.dp = 32 / pp;
    l.first_stage_layers = first;
    l.last_stage_layers = last;
    return layout_problem(s, l, Framework::Megatron);
  };
  EXPECT_EQ(split(4, 11, 7), "");
  EXPECT_EQ(split(4, 1, 1), "");    // 38 over the two middle ranks
  EXPECT_EQ(split(4, 19, 19), "");  // one layer on each middle rank
  EXPECT_EQ(split(2, 33, 7), "");
  const std::string why = split(4, 20, 19);  // one layer for two middle ranks
  EXPECT_NE(why.find("do not split 40 layers over pp 4"), std::string::npos) << why;
  EXPECT_NE(why.find("at least one layer on every rank"), std::string::npos) << why;
  EXPECT_NE(split(4, 0, 7), "");   // an empty first rank
  EXPECT_NE(split(4, 11, 0), "");  // an empty last rank
  EXPECT_NE(split(4, -1, 7), "");
  EXPECT_NE(split(2, 33, 8), "");  // 41 layers
  EXPECT_NE(split(2, 32, 7), "");  // 39 layers
}
