// Pipeline terms: layers per stage, stage times and the fill/drain bubble, point-to-point traffic
// (Narayanan et al. 2021 §2.2; docs/model.md §3).
#include <algorithm>

#include "terms.h"

namespace paratune::advisor::terms {

void stage_layers(const Resolved& R, const Layout& l, int* first, int* mid, int* last) {
  const int L = R.s.model.layers, p = std::max(1, l.pp);
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

Stages stage_times(const Resolved& R, const Layout& l, double per_layer, double emb, double head, double mb_over) {
  const int p = l.pp, v = std::max(1, l.virtual_stages);
  int Lf, Lm, Ll;
  stage_layers(R, l, &Lf, &Lm, &Ll);
  Stages st;
  if (p == 1) {
    st.first = st.mid = st.last = R.s.model.layers * per_layer + emb + head + mb_over;
  } else {
    st.first = Lf * per_layer + emb + mb_over;
    st.mid = Lm * per_layer + mb_over;
    st.last = Ll * per_layer + head + mb_over;
  }
  // Fill and drain: every stage but the slowest idles for its share, divided by the virtual chunks per rank.
  const double sum = p == 1 ? st.first : st.first + st.last + (p - 2) * st.mid;
  st.bubble = (sum - st.max()) / v;
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

}  // namespace paratune::advisor::terms
