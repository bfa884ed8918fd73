// The planned stage split (terms::plan_stage_layers): its pruned search must keep exactly the split the exhaustive
// search keeps (the fastest slowest rank; ties: the more even split, then the first in f-major order). The
// exhaustive search below is the definition, written out as the rule states it; the two are compared over a grid
// of layer counts, pipeline depths and embedding / LM-head weights, including exact ties (integer-valued times).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>

#include "../../advisor/src/model/terms.h"

using paratune::advisor::terms::plan_stage_layers;

namespace {

void exhaustive_split(int L, int p, double per_layer, double emb, double head, int* first, int* last) {
  *first = *last = 0;
  if (p < 2 || per_layer <= 0 || L < p) return;
  const int hi = std::min(L - (p - 1), 2 * ((L + p - 1) / p) + 2);
  double best = 1e300;
  int best_skew = 1 << 30;
  for (int f = 1; f <= hi; ++f)
    for (int la = p == 2 ? L - f : 1; la <= (p == 2 ? L - f : hi); ++la) {
      const int rest = L - f - la;
      if (p == 2 ? rest != 0 : rest < p - 2) continue;
      const int mid = p > 2 ? (rest + p - 3) / (p - 2) : 0;
      const double slowest = std::max({emb + f * per_layer, head + la * per_layer, mid * per_layer});
      const int skew = std::abs(f - la) + std::abs(f - mid);
      if (slowest < best * (1 - 1e-12) || (slowest <= best * (1 + 1e-12) && skew < best_skew))
        best = slowest, best_skew = skew, *first = f, *last = la;
    }
}

void expect_same(int L, int p, double w, double emb, double head) {
  int f0, l0, f1, l1;
  exhaustive_split(L, p, w, emb, head, &f0, &l0);
  plan_stage_layers(L, p, w, emb, head, &f1, &l1);
  EXPECT_EQ(f1, f0) << "L " << L << " p " << p << " w " << w << " emb " << emb << " head " << head;
  EXPECT_EQ(l1, l0) << "L " << L << " p " << p << " w " << w << " emb " << emb << " head " << head;
}

}  // namespace

TEST(StageSplitSearch, KeepsTheExhaustiveSearchsSplit) {
  int planned = 0;
  // Integer-valued times (many exact ties between splits) and the edge counts (L = p, two ranks, deep pipelines).
  for (int L : {2, 3, 7, 16, 24, 32, 40, 61, 80, 94, 96, 126, 128})
    for (int p : {2, 3, 4, 5, 8, 12, 16, 32})
      for (double emb : {0.0, 0.5, 1.0, 3.0})
        for (double head : {0.0, 1.0, 2.0, 4.0, 9.0}) {
          expect_same(L, p, 1.0, emb, head);
          int f = 0, la = 0;
          plan_stage_layers(L, p, 1.0, emb, head, &f, &la);
          planned += f > 0;
        }
  // Real-valued times: a layer's time and the extra stages' loads drawn at random (fixed seed).
  std::mt19937 rng(20261207);
  std::uniform_real_distribution<double> layer(1e-4, 0.2), extra(0.0, 6.0);
  for (int i = 0; i < 4000; ++i) {
    const int L = 2 + int(rng() % 160), p = 2 + int(rng() % 31);
    const double w = layer(rng);
    expect_same(L, p, w, extra(rng) * w, extra(rng) * w);
  }
  EXPECT_GT(planned, 1000) << "control: the grid reaches splits, not only the degenerate cases";
  int f = -1, la = -1;
  plan_stage_layers(8, 1, 1.0, 1.0, 1.0, &f, &la);
  EXPECT_EQ(f + la, 0) << "no pipeline: nothing planned";
}
