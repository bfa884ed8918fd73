// Evaluator: the scenario resolved once, and one layout's step time as the sum of the named terms (terms.h).
#include <algorithm>

#include "paratune/advisor/breakdown_terms.h"
#include "paratune/advisor/model.h"
#include "terms.h"

namespace paratune::advisor {

Evaluator::Evaluator(const Scenario& s, Framework f, const ModelParams& p) : p_(p), r_(resolve(s, f, p)) {}

Evaluator::Evaluator(Resolved r, const ModelParams& p) : p_(p), r_(std::move(r)) {}

double Evaluator::gemm_shape_factor(double M, double N, double K) { return terms::gemm_shape_factor(M, N, K); }
double Evaluator::grouped_shape_factor(double M, double N, double K) {
  return terms::grouped_shape_factor(M, N, K);
}

double Evaluator::a2a_interference(const Layout& l) const { return terms::a2a_interference(r_, p_, l); }

double Evaluator::gemm_s(double M, double N, double K, bool linear) const {
  return terms::gemm_s(r_, p_, M, N, K, linear);
}

double Evaluator::group_busbw_gbps(int k, int stride, bool allreduce) const {
  return terms::group_busbw_gbps(r_, p_, k, stride, allreduce);
}

double Evaluator::collective_s(Coll c, double bytes, int k, int stride) const {
  return terms::collective_s(r_, p_, c, bytes, k, stride);
}

double Evaluator::memory_gib(const Layout& l, MemoryBreakdown* out) const {
  if (r_.moe.on) return terms::moe_memory_gib(r_, p_, l, headroom_gib, out);  // MoE / MLA (moe_memory.cpp)
  return terms::memory_gib(r_, l, headroom_gib, out);
}

namespace {

// The bottleneck stage's per-micro-batch time split into the breakdown's terms, scaled so that they add up to the
// ranks' mean stage time, times the micro-batches; the slowest rank's excess over that mean (the layers and the LM
// head it carries beyond an even share) is the pipeline's stage imbalance; the once-per-step terms on top.
struct PerLayer {
  double compute, recompute, tp, cp, shard, stack, ep = 0, imbalance = 0;  // ep, imbalance: MoE only (0 dense)
  double total() const { return compute + recompute + tp + cp + shard + stack + ep + imbalance; }
};

Breakdown assemble(const PerLayer& pl, int Lmax, double head_part, double mb_over, const terms::Stages& st, int m,
                   double pp_comm, double dp_exposed, double optimizer, double step_overhead) {
  const double parts[] = {Lmax * pl.compute + head_part, Lmax * pl.recompute, Lmax * pl.tp, Lmax * pl.cp,
                          Lmax * pl.shard, Lmax * pl.stack + mb_over, Lmax * pl.ep, Lmax * pl.imbalance};
  double sum = 0;
  for (double x : parts) sum += x;
  const double slowest = st.max(), even = st.mean > 0 ? std::min(slowest, st.mean) : slowest;
  const double scale = sum > 0 ? even / sum : 1;
  const double k = m * scale;
  Breakdown br;
  br.pp_imbalance = m * (slowest - even);
  br.compute = k * parts[0];
  br.recompute = k * parts[1];
  br.tp_comm = k * parts[2];
  br.cp_comm = k * parts[3];
  br.dp_comm_exposed = k * parts[4] + dp_exposed;
  br.pp_bubble = st.bubble;
  br.pp_comm = pp_comm;
  br.optimizer = optimizer;
  br.other = k * parts[5] + step_overhead;
  br.ep_comm = k * parts[6];
  br.moe_imbalance = k * parts[7];
  return br;
}

// The host issues a layer's kernels while the GPU runs the previous ones: a layer whose GPU time is shorter than
// the host's issue time (recompute issues the forward again) waits for the host; the excess is the stack's cost.
double host_bound_excess(const Resolved& R, const ModelParams& p, const Layout& l, double gpu_layer_s) {
  const double fwd_share = 1.0 / 3;  // the forward issues about a third of a layer's kernels
  const double rc = l.recompute == Recompute::Full ? fwd_share : l.recompute == Recompute::Selective ? 0.05 : 0;
  const double host = p.cpu_layer_us[stack_index(R.stack.framework)] * 1e-6 * (1 + rc);
  return std::max(0.0, host - gpu_layer_s);
}

double step_of(const Breakdown& b) {
  double sum = 0;
  for (const auto& t : kBreakdownTerms) sum += b.*t.field;
  return sum;
}

}  // namespace

double Evaluator::offload_layer_bytes(const Layout& l) const {
  if (r_.moe.on) return terms::moe_layer_activation_bytes(r_, p_, l);
  return activation_bytes_per_layer(r_.s.model, l.micro_batch, l.tp, l.cp, l.sequence_parallel && l.tp > 1,
                                    l.recompute, r_.stack.flash, r_.s.training.precision == Precision::Fp8,
                                    recompute_module_set(r_.s, l, false));
}

// Offload runs at pp 1 (Megatron-Core asserts it): one micro-batch's offloaded layers sit in host memory at a time.
double Evaluator::host_offload_gib(const Layout& l) const {
  if (l.offload_layers <= 0) return 0;
  return std::min(l.offload_layers, r_.s.model.layers) * offload_layer_bytes(l) / double(1ull << 30);
}

Layout Evaluator::with_planned_stages(Layout l) const {
  l.first_stage_layers = l.last_stage_layers = 0;
  if (l.pp < 2 || r_.stack.balanced_stages) return l;
  return with_planned_stages(l, evaluate(l));
}

Layout Evaluator::with_planned_stages(Layout l, const Result& r) const {
  l.first_stage_layers = l.last_stage_layers = 0;
  if (l.pp < 2 || r_.stack.balanced_stages) return l;
  terms::plan_stage_layers(r_.s.model.layers, l.pp, r.layer_s, r.emb_s, r.head_s,
                           &l.first_stage_layers, &l.last_stage_layers);
  return l;
}

Evaluator::Result Evaluator::evaluate(const Layout& l) const {
  using namespace terms;
  Result r;
  const int m = std::max(1, r_.s.training.global_batch / std::max(1, l.dp * l.micro_batch));
  r.microbatches = m;

  // MoE / MLA / head_dim models take the generalised layer (moe_*.cpp); dense models the dense terms only.
  const bool moe = r_.moe.on;
  double gemm_imbalance = 0;
  const LayerCompute lc = moe ? moe_layer_compute(r_, p_, l, &gemm_imbalance) : layer_compute(r_, p_, l);
  const double rc = moe ? moe_recompute_s(r_, p_, l, lc) : recompute_s(r_, p_, l, lc);
  TpComm tp = tp_comm(r_, p_, l);
  if (moe) tp.per_layer *= moe_tp_comm_share(r_, l);
  const double cp = cp_comm_layer(r_, p_, l, lc);
  const double shard = shard_comm_layer(r_, p_, l, lc, rc, tp.per_layer);
  PerLayer pl{lc.fwd() + lc.bwd(), rc, tp.per_layer, cp, shard, 0};
  if (moe) {
    const MoeComm ep = moe_comm_layer(r_, p_, l, lc, rc);
    pl.ep = ep.exposed;
    pl.imbalance = gemm_imbalance + ep.imbalance;
  }
  pl.stack = host_bound_excess(r_, p_, l, pl.total()) +
             p_.layer_overhead_us[stack_index(r_.stack.framework)] * 1e-6 +
             (moe ? moe_layer_overhead_s(r_, p_, l) : 0);
  r.layer_fwd_s = lc.fwd() + tp.per_layer * 2 / tp.count + cp / 3 + (pl.ep + pl.imbalance) / 3;
  r.layer_bwd_s = lc.bwd() + rc + tp.per_layer * (tp.count - 2) / tp.count + cp * 2 / 3 + (pl.ep + pl.imbalance) * 2 / 3;

  const double mb_over = p_.mb_overhead_us * 1e-6;
  const double emb = embedding_s(r_, l), head = head_s(r_, p_, l) + (moe ? mtp_s(r_, p_, l, pl.total()) : 0);
  r.layer_s = pl.total();
  r.emb_s = emb;
  r.head_s = head;
  // The weight-gradient (W) pass of a layer: half its linear layers' backward GEMMs (dW = X^T dY costs what
  // dX = dY W^T does); the attention core and the elementwise work have no weights.
  const double w_layer = lc.gemm_b / 2;
  r.layer_w_s = w_layer;
  const Stages st = stage_times(r_, l, pl.total(), emb, head, mb_over, w_layer);
  int Lf, Lm, Ll;
  stage_layers(r_, l, &Lf, &Lm, &Ll);
  double head_part = l.pp == 1 ? emb + head : (st.last >= st.max() ? head : 0);
  int Lmax = std::max({Lf, Lm, Ll});
  if (st.slow_layers >= 0) {  // balanced split: the slowest stage's own contents
    Lmax = st.slow_layers;
    head_part = (st.slow_emb ? emb : 0) + (st.slow_head ? head : 0);
  }
  r.br = assemble(pl, Lmax, head_part, mb_over, st, m, pp_p2p(r_, p_, l, m),
                  moe ? moe_dp_comm_exposed(r_, p_, l, lc, rc) : dp_comm_exposed(r_, p_, l, lc, rc),
                  moe ? moe_optimizer_s(r_, l) : optimizer_s(r_, l), p_.step_overhead_s);
  if (l.offload_layers > 0) {  // every micro-batch sends the offloaded layers' activations out and back
    r.br.offload = m * offload_exposed_s(r_, offload_layer_bytes(l), std::min(l.offload_layers, Lmax), Lmax,
                                         r.layer_fwd_s, r.layer_bwd_s);
    r.host_gib = host_offload_gib(l);
    r.host_fits = r.host_gib <= r_.host_capacity_gib;
  }
  r.step_s = step_of(r.br);

  if (moe) moe_step_flops(r_, l, &r.model_flops_step, &r.hw_flops_step);
  else step_flops(r_, l, &r.model_flops_step, &r.hw_flops_step);
  r.mem_gib = memory_gib(l, &r.mem);
  r.fits = r.mem_gib <= r_.capacity_gib && r.host_fits;
  if (r.mem_gib > r_.capacity_gib) {
    const double t[6] = {r.mem.weights, r.mem.gradients, r.mem.optimizer, r.mem.activations, r.mem.logits,
                         r.mem.buffers};
    r.overflow_term = int(std::max_element(t, t + 6) - t);
  }
  return r;
}

}  // namespace paratune::advisor
