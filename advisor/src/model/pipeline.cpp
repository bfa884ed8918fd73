// Pipeline terms: layers per stage, stage times and the fill/drain bubble, point-to-point traffic
// (Narayanan et al. 2021 §2.2; docs/model.md §3).
#include <algorithm>
#include <cmath>
#include <limits>

#include "terms.h"

namespace paratune::advisor {

namespace {

// nanotron's stage assignment (src/nanotron/models/base.py, build_model; block costs from models/llama.py,
// get_block_compute_costs): the blocks in order -- the embedding (no cost), L decoder layers (4 h^2 + 3 f h each:
// the attention projections counted without grouped KV heads, the gated MLP), the LM head (V h) -- each go to the
// current rank, which moves on once the cumulative cost passes its share (rank + 1) / p of the total. A large
// vocabulary thus takes layers off the last stage; late ranks may be left with no layer at all. `visit(rank,
// layers, head)` is called once per rank, in order.
template <class Visit>
void balanced_split(const ModelSpec& m, int p, Visit visit) {
  const double h = m.hidden, f = m.ffn_hidden;
  const int L = m.layers;
  const double layer = 4 * h * h + (m.gated_mlp ? 3 : 2) * f * h, head = double(m.vocab) * h;
  const double total = L * layer + head;
  int rank = 0, layers = 0;
  double cum = 0;
  for (int block = 0; block <= L; ++block) {  // blocks 0..L-1: layers; block L: the LM head
    const bool is_head = block == L;
    cum += is_head ? head : layer;
    if (!is_head) ++layers;
    const bool passed = cum > total * (rank + 1) / p && rank < p - 1;
    if (is_head || passed) {
      visit(rank, layers, is_head);
      layers = 0;
      ++rank;
    }
  }
  for (; rank < p; ++rank) visit(rank, 0, false);
}

}  // namespace

StageSplit pipeline_stages(const ModelSpec& m, PipelineSplit split, int pp) {
  StageSplit out;
  const int p = std::max(1, pp), L = m.layers;
  if (split == PipelineSplit::Balanced && p > 1) {
    balanced_split(m, p, [&](int rank, int layers, bool head) {
      out.layers.push_back(layers);
      if (head) out.head_rank = rank;
    });
    return out;
  }
  // Equal layer counts, as stage_layers below: (L+2)/p with the embedding and the loss counted as layers where
  // that divides, else ceil(L/p) with the remainder short on the last stage.
  Resolved R;
  R.s.model = m;
  Layout l;
  l.pp = p;
  int first, mid, last;
  terms::stage_layers(R, l, &first, &mid, &last);
  out.layers.assign(p, mid);
  out.layers.front() = first;
  if (p > 1) out.layers.back() = std::max(0, L - first - (p - 2) * mid);
  out.head_rank = p - 1;
  return out;
}

namespace terms {

void stage_layers(const Resolved& R, const Layout& l, int* first, int* mid, int* last) {
  const int L = R.s.model.layers, p = std::max(1, l.pp);
  if (p > 1 && (l.first_stage_layers > 0 || l.last_stage_layers > 0)) {
    // A planned layout: the first and last ranks as given, the rest over the middle ranks (the largest share).
    *first = l.first_stage_layers > 0 ? l.first_stage_layers : (L + p - 1) / p;
    *last = l.last_stage_layers > 0 ? l.last_stage_layers : L - *first - (p - 2) * ((L + p - 1) / p);
    if (p == 2) *last = L - *first;
    *mid = p > 2 ? (L - *first - *last + p - 3) / (p - 2) : std::max(*first, *last);
    return;
  }
  if (p > 1 && R.stack.balanced_stages) {
    // The first stage, the one holding the LM head (it carries the logits' memory), the largest of the rest.
    *first = *mid = *last = 0;
    balanced_split(R.s.model, p, [&](int rank, int layers, bool head) {
      if (rank == 0) *first = layers;
      if (head) *last = layers;
      else if (rank > 0) *mid = std::max(*mid, layers);
    });
    return;
  }
  if (p == 1) {
    *first = *mid = *last = L;
  } else if (L % p == 0) {
    *first = *mid = *last = L / p;
  } else if ((L + 2) % p == 0) {
    // Megatron --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split: the embedding and
    // the loss count as one layer each, so the first and last stages hold one transformer layer fewer.
    *mid = (L + 2) / p;
    *first = *last = *mid - 1;
  } else {
    *first = *mid = *last = (L + p - 1) / p;
  }
}

double Stages::max() const { return std::max({first, mid, last}); }

namespace {

// The candidate splits of plan_stage_layers: f layers on the first rank, la on the last, the rest over the middle
// ranks as evenly as whole layers allow; each rank's time is its layers' (and the embedding's or the LM head's).
struct StageSplits {
  int L, p, hi;
  double per_layer, emb, head;

  int la_first(int f) const { return p == 2 ? L - f : 1; }
  int la_last(int f) const { return p == 2 ? L - f : std::min(hi, L - f - (p - 2)); }  // the middle keeps >= 1 each
  int mid(int f, int la) const { return p > 2 ? (L - f - la + p - 3) / (p - 2) : 0; }
  double first_s(int f) const { return emb + f * per_layer; }
  double last_s(int la) const { return head + la * per_layer; }
  double slowest(int f, int la) const { return std::max({first_s(f), last_s(la), mid(f, la) * per_layer}); }

  // The fastest slowest rank over every split. For a given f the last rank's time rises with la and the middle's
  // falls, so the best la is where they cross (a binary search); the first rank's time rises with f, so once it
  // alone reaches the best found no larger f can do better.
  double fastest() const {
    double best = std::numeric_limits<double>::infinity();
    for (int f = 1; f <= hi && first_s(f) < best; ++f) {
      int lo = la_first(f), up = la_last(f);
      if (lo > up) continue;
      int a = lo, b = up + 1;
      while (a < b) {
        const int m = a + (b - a) / 2;
        if (last_s(m) >= mid(f, m) * per_layer) b = m;
        else a = m + 1;
      }
      if (a <= up) best = std::min(best, slowest(f, a));
      if (a - 1 >= lo) best = std::min(best, slowest(f, a - 1));
    }
    return best;
  }
};

}  // namespace

void plan_stage_layers(int L, int p, double per_layer, double emb, double head, int* first, int* last) {
  *first = *last = 0;
  // Times are the evaluator's, finite; anything else plans no split (the search below relies on ordered times).
  if (p < 2 || !(per_layer > 0) || L < p || !std::isfinite(per_layer + emb + head)) return;
  // Every rank keeps at least one layer; a virtual chunk may be left empty (Megatron-Core's layout accepts empty
  // stages: docs/source/api-guide/pipeline_parallel_layout.md at core_v0.14/0.15, "it is legal to have empty
  // stages"), so a rank may hold fewer layers than chunks. The interleaved schedule still runs an empty chunk's slots
  // (its activations pass on, with no compute): that cost is not modelled, stage_times divides the bubble by v as
  // for full chunks. The middle ranks share the rest as evenly as whole layers allow. Of the first/last counts around
  // the balance point keep the one whose slowest rank is the fastest (ties: the more even split, then the first in
  // f-major order). A rank never needs more than twice the mean (the others would then hold less than theirs).
  const StageSplits sp{L, p, std::min(L - (p - 1), 2 * ((L + p - 1) / p) + 2), per_layer, emb, head};
  // Only splits within a hair of the fastest can be kept (a tie moves the best by 1e-12 at most per step of
  // evenness, a few hundred steps at most), so the ranking pass visits just those, in the same order.
  const double cap = sp.fastest() * (1 + 1e-6);
  double best = 1e300;
  int best_skew = 1 << 30;
  for (int f = 1; f <= sp.hi && sp.first_s(f) <= cap; ++f) {
    int lo = sp.la_first(f);
    const int up = sp.la_last(f);
    if (p > 2) {  // skip the splits whose middle ranks alone are slower than the cap
      const double most_mid = std::floor(cap / per_layer) + 1;
      const double from = L - f - most_mid * (p - 2);
      if (from > lo) lo = from > up ? up + 1 : int(from);
    }
    for (int la = lo; la <= up && sp.last_s(la) <= cap; ++la) {
      const double slowest = sp.slowest(f, la);
      const int skew = std::abs(f - la) + std::abs(f - sp.mid(f, la));
      if (slowest < best * (1 - 1e-12) || (slowest <= best * (1 + 1e-12) && skew < best_skew)) {
        best = slowest, best_skew = skew, *first = f, *last = la;
      }
    }
  }
}

double schedule_bubble(PipelineSchedule s, double idle, double idle_w, int v) {
  const int chunks = std::max(1, v);
  switch (s) {
    case PipelineSchedule::OneFOneB:
    case PipelineSchedule::GPipe:
    case PipelineSchedule::Interleaved:
      // (p-1)(T_F + T_B + T_W) over the chunks per rank: GPipe and 1F1B idle alike (Narayanan et al. 2021 §2.2.1,
      // bubble fraction (p-1)/m for both), interleaving divides it by v (§2.2.2).
      return idle / chunks;
    case PipelineSchedule::ZeroBubble:
      // ZB-H1 (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", Table 2): (p-1)(T_F + T_B - T_W), the W passes
      // fill the rest; per chunk with interleaving (PyTorch's InterleavedZeroBubble is the paper's ZB1P).
      return std::max(0.0, idle - 2 * idle_w) / chunks;
    case PipelineSchedule::Zbv:
      // ZB-V (Qi et al. §6): zero at T_F = T_B = T_W (the authors' comparison table). Taken as ZB-H2's
      // (p-1)(T_F + T_B - 2 T_W) with one chunk's (half a rank's) times: an assumption for other ratios.
      return std::max(0.0, idle - 3 * idle_w) / chunks;
  }
  return idle / chunks;
}

double inflight_microbatches(const Layout& l, int microbatches, bool first) {
  const int p = l.pp, v = std::max(1, l.virtual_stages), m = std::max(1, microbatches);
  if (p <= 1) return 1;
  switch (schedule_of(l)) {
    case PipelineSchedule::GPipe:
      return m;  // every forward before any backward: all m micro-batches on every stage (Huang et al. 2019)
    case PipelineSchedule::Zbv:
      // ZB-V keeps 1F1B's activation memory (Qi et al. §6; the authors' table: 1x), on every rank.
      return first ? std::min(m, p) : 1;
    case PipelineSchedule::Interleaved:
    case PipelineSchedule::ZeroBubble:
      // 1F1B's p times 1 + (p-1)/(p v) (Korthikanti et al. 2022 §4); ZB-H1 stays within 1F1B's peak (Qi et al.
      // §2.1), so its interleaved form within the interleaved one.
      return first ? std::min(m, p) * (1 + double(p - 1) / (double(p) * v)) : 1;
    case PipelineSchedule::OneFOneB:
      break;
  }
  return first ? std::min(m, p) : 1;  // 1F1B: p in flight on the first stage (Narayanan et al. §2.2.1)
}

Stages stage_times(const Resolved& R, const Layout& l, double per_layer, double emb, double head, double mb_over,
                   double w_layer) {
  const int p = l.pp, v = std::max(1, l.virtual_stages);
  int Lf, Lm, Ll;
  stage_layers(R, l, &Lf, &Lm, &Ll);
  Stages st;
  if (p > 1 && R.stack.balanced_stages) {
    // Each rank's time; the slowest sets the pace (its layer count and whether it holds the head kept for the
    // breakdown); first / mid / last as stage_layers reports them.
    double sum = 0, slowest = -1;
    balanced_split(R.s.model, p, [&](int rank, int layers, bool has_head) {
      const double t = layers * per_layer + (rank == 0 ? emb : 0) + (has_head ? head : 0) + mb_over;
      sum += t;
      if (rank == 0) st.first = t;
      if (has_head) st.last = t;
      else if (rank > 0) st.mid = std::max(st.mid, t);
      if (t > slowest) { slowest = t; st.slow_layers = layers; st.slow_head = has_head; st.slow_emb = rank == 0; }
    });
    const double idle_w = (R.s.model.layers - st.slow_layers) * w_layer;
    st.bubble = schedule_bubble(schedule_of(l), sum - st.max(), idle_w, v);
    st.mean = sum / p;
    return st;
  }
  if (p == 1) {
    st.first = st.mid = st.last = R.s.model.layers * per_layer + emb + head + mb_over;
  } else {
    st.first = Lf * per_layer + emb + mb_over;
    st.mid = Lm * per_layer + mb_over;
    st.last = Ll * per_layer + head + mb_over;
  }
  // Fill and drain: every stage but the slowest idles for its share, divided by the virtual chunks per rank (and
  // less the weight-gradient passes the zero-bubble schedules move into it).
  const double sum = p == 1 ? st.first : st.first + st.last + (p - 2) * st.mid;
  const int slow_layers = p == 1 ? 0 : st.first >= st.max() ? Lf : st.last >= st.max() ? Ll : Lm;
  const double idle_w = p == 1 ? 0 : (R.s.model.layers - slow_layers) * w_layer;
  st.bubble = schedule_bubble(schedule_of(l), sum - st.max(), idle_w, v);
  st.mean = sum / p;
  return st;
}

// Activations forward, gradients backward (split by t with scatter/gather or SP); hidden in part behind compute
// with interleaved schedules.
double pp_p2p(const Resolved& R, const ModelParams& p, const Layout& l, int microbatches) {
  if (l.pp <= 1) return 0;
  const int t = l.tp, v = std::max(1, l.virtual_stages);
  const double tok = double(l.micro_batch) * R.m.s / l.cp;
  const double bytes = tok * R.m.h * 2 / (t > 1 ? t : 1);
  const double one = collective_s(R, p, Coll::SendRecv, bytes, 2, t * l.cp * l.dp);
  return (2.0 * microbatches * v + 2.0 * (l.pp - 1)) * one * (1 - (v > 1 && R.stack.overlap_dp ? p.pp_overlap : 0));
}

}  // namespace terms
}  // namespace paratune::advisor
