// Expert-parallel communication (docs/model.md §9): the all-to-all as α–β over the island logic of collectives.cpp
// (which share of a rank's traffic stays on NVLink, which crosses the NICs), the three token dispatchers, their
// overlap with another micro-batch, and the once-per-step terms of the experts' own data-parallel group.
#include <algorithm>
#include <cmath>

#include "terms.h"

namespace paratune::advisor::terms {

double alltoall_s(const Resolved& R, const ModelParams& p, double bytes, int k, int stride, double net_share) {
  if (k <= 1 || bytes <= 0) return 0;
  int q, islands;
  island_split(R, k, stride, &q, &islands);
  const long span = long(stride) * k;
  // Ranks on the rank's own island get (q-1)/k of its bytes over NVLink (PCIe where the island has no NVLink
  // domain covering them); the other (k-q)/k leave on the island's NICs, which its GPUs share (rail-aligned: one
  // NIC's worth per GPU; NVL72: the rack's NICs for its 72 GPUs).
  const bool nvl = R.D > 1 && std::min<long>(span, R.island()) <= R.D;
  const double local_bw = (nvl ? R.gpu.nvlink_gbps * p.a2a_nvl_eff : R.pcie_gbps) * 1e9;
  const double net_bw = std::max(1e-3, R.node_net_gbps / R.G * p.a2a_net_eff) * 1e9;
  const double local = bytes * (q - 1) / k / local_bw;
  const double net = islands > 1 ? bytes * double(k - q) / k * net_share / net_bw : 0;
  const double alpha = (islands > 1 ? p.alpha_net_us : p.alpha_nvl_us) * 1e-6;
  return p.a2a_latency_us * 1e-6 + alpha + std::max(local, net);
}

namespace {

// DeepEP / HybridEP send a token once per destination island and forward it over NVLink there. With top-k experts
// spread uniformly over I islands, a token reaches I (1 - (1 - 1/I)^k) of them, the remote ones among them
// (I-1)/I of that, where the NCCL all-to-all sends k (I-1)/I copies across.
double dedup_share(const Resolved& R, const Layout& l) {
  int q, islands;
  island_split(R, l.ep, l.etp, &q, &islands);
  if (islands <= 1 || R.moe.k <= 1) return 1.0;
  const double I = islands, k = R.moe.k;
  const double distinct_remote = (I - 1) * (1 - std::pow(1 - 1 / I, k));
  return std::min(1.0, distinct_remote / (k * (I - 1) / I));
}

// One dispatch and one combine (forward) of one MoE layer and micro-batch at balanced routing.
double dispatch_combine_s(const Resolved& R, const ModelParams& p, const Layout& l) {
  const double row_bytes = R.m.h * 2;  // 16-bit hidden states
  const double t_in = moe_tokens_in(R, l);
  if (l.dispatcher == Dispatcher::AllGather) {
    // Every token to every rank of the EP x ETP group, then a reduce-scatter of the expert outputs.
    const int k = l.ep * l.etp;
    const double full = k * t_in * row_bytes;
    return collective_s(R, p, Coll::AllGather, full, k, 1) + collective_s(R, p, Coll::ReduceScatter, full, k, 1);
  }
  const double send = t_in * R.moe.k * row_bytes;
  // DeepEP / HybridEP dispatch FP8 rows in FP8 runs (1 byte + a scale per 128 values) and combine in BF16 (DeepEP
  // README: "FP8 dispatching and BF16 combining"); NCCL's all-to-all moves the 16-bit hidden states both ways.
  const bool fp8_dispatch = l.dispatcher == Dispatcher::Flex && R.s.training.precision == Precision::Fp8;
  const double dispatch_bytes = fp8_dispatch ? send * (1 + 4.0 / 128) / 2 : send;
  double a2a = 0;
  if (l.ep > 1) {
    if (l.dispatcher == Dispatcher::Flex) {
      const double share = dedup_share(R, l);
      a2a = alltoall_s(R, p, dispatch_bytes, l.ep, l.etp, share) + alltoall_s(R, p, send, l.ep, l.etp, share);
    } else {
      a2a = 2 * collective_s(R, p, Coll::AllToAll, send, l.ep, l.etp) / p.nccl_a2a_eff;
    }
  }
  // Expert TP > 1: the received rows are gathered in the expert-TP group, the outputs reduce-scattered back.
  const double etp = l.etp > 1 ? collective_s(R, p, Coll::AllGather, l.etp * send, l.etp, 1) : 0;
  return a2a + 2 * etp;
}

}  // namespace

bool moe_a2a_overlap_on(const MoeDims& d, const Layout& l) {
  // Megatron-Core's TransformerConfig asserts: EP > 1, the alltoall or flex dispatcher, no full recompute, and with
  // PP > 1 an interleaved schedule (the merged 1F1B needs virtual stages).
  return d.a2a_overlap && l.ep > 1 && l.dispatcher != Dispatcher::AllGather && l.recompute != Recompute::Full &&
         (l.pp == 1 || l.virtual_stages > 1) && d.mtp <= 1;
}

MoeComm moe_comm_layer(const Resolved& R, const ModelParams& p, const Layout& l, const LayerCompute& c,
                       double recompute) {
  MoeComm mc;
  if (!R.moe.moe || (l.ep <= 1 && l.etp <= 1)) return mc;
  // Forward dispatch + combine, the same two backward (their transposes), once more with full recompute.
  const double passes = 2 + (l.recompute == Recompute::Full ? 1 : 0);
  mc.raw = R.moe.mix * passes * dispatch_combine_s(R, p, l);
  // With --overlap-moe-expert-parallel-comm Megatron-Core runs one micro-batch's dispatch/combine beside another's
  // compute (1F1B merged); only part of the layer's compute is such a window (steady state, not warm-up/cool-down).
  const bool overlap = moe_a2a_overlap_on(R.moe, l);
  if (overlap) {
    const double window = p.ep_overlap * (c.fwd() + c.bwd() + recompute);
    mc.exposed = std::max(0.0, mc.raw - window) + p.overlap_interference * std::min(mc.raw, window);
  } else {
    mc.exposed = mc.raw;
  }
  // The busiest rank receives f times the rows: its all-to-all lasts that much longer, and the others wait.
  mc.imbalance = (moe_imbalance_factor(R, p, l) - 1) * mc.exposed;
  return mc;
}

double moe_layer_overhead_s(const Resolved& R, const ModelParams& p) {
  return R.moe.moe ? R.moe.mix * p.moe_layer_us * 1e-6 : 0;
}

double moe_stage_params(const Resolved& R, const Layout& l, double* expert_part) {
  int Lf, Lm, Ll;
  stage_layers(R, l, &Lf, &Lm, &Ll);
  const double Lmax = std::max({Lf, Lm, Ll});
  const ModelDims& d = R.m;
  const double emb = l.pp == 1 ? d.P_emb * (d.tied ? 1 : 2) : d.P_emb;
  if (expert_part) *expert_part = Lmax * R.moe.avg_layer_expert() / (double(l.ep) * l.etp);
  return (Lmax * R.moe.avg_layer_nonexpert() + emb) / l.tp;
}

double moe_dp_comm_exposed(const Resolved& R, const ModelParams& p, const Layout& l, const LayerCompute& lc,
                           double recompute) {
  const int ndp = l.dp * l.cp, z = l.zero_stage, v = std::max(1, l.virtual_stages);
  const int edp = std::max(1, l.tp * l.cp * l.dp / (l.ep * l.etp));
  if (z >= 3 || (ndp <= 1 && edp <= 1)) return 0;  // FSDP-style sharding: per layer (shard_comm_layer)
  int Lf, Lm, Ll;
  stage_layers(R, l, &Lf, &Lm, &Ll);
  const int Lmax = std::max({Lf, Lm, Ll});
  double psi_e = 0;
  const double psi_d = moe_stage_params(R, l, &psi_e);
  const double bwd = Lmax * (lc.bwd() + recompute) / v, fwd = Lmax * lc.fwd() / v;
  const double gb = R.stack.grad_bytes(), pb = R.stack.gather_bytes();
  // Dense part over the dp x cp ranks (TP innermost); experts over their edp ranks, ep x etp apart (Megatron-Core's
  // expert rank order: expert TP, EP, expert DP, PP).
  auto group = [&](double psi, int n, int stride) {
    if (n <= 1 || psi <= 0) return 0.0;
    if (z == 0) return exposed(R, p, collective_s(R, p, Coll::AllReduce, psi * gb, n, stride), bwd);
    return exposed(R, p, collective_s(R, p, Coll::ReduceScatter, psi * gb, n, stride), bwd) +
           exposed(R, p, collective_s(R, p, Coll::AllGather, psi * pb, n, stride), fwd);
  };
  return group(psi_d, ndp, l.tp) + group(psi_e, edp, l.ep * l.etp);
}

double moe_optimizer_s(const Resolved& R, const Layout& l) {
  double psi_e = 0;
  const double psi_d = moe_stage_params(R, l, &psi_e);
  const double edp = std::max(1, l.tp * l.cp * l.dp / (l.ep * l.etp));
  const double local = l.zero_stage >= 1 ? psi_d / (l.dp * l.cp) + psi_e / edp : psi_d + psi_e;
  return 34 * local / R.hbm + 50e-6 * 3;
}

void moe_step_flops(const Resolved& R, const Layout& l, double* model_flops, double* hw_flops) {
  const ModelDims& d = R.m;
  const double tokens = double(R.s.training.global_batch) * d.s;
  *model_flops = tokens * model_flops_per_token(R.s.model);
  const double attn = 2.0 * d.L * d.s * d.a * (R.moe.dqk + R.moe.dv);  // forward attention scores, per token
  const double active_layer = R.moe.P_attn + (1 - R.moe.mix) * R.moe.P_dense_mlp +
                              R.moe.mix * (R.moe.P_shared + R.moe.P_router + R.moe.k * R.moe.P_expert);
  const double rc = l.recompute == Recompute::Full        ? tokens * (2 * d.L * active_layer + attn)
                    : l.recompute == Recompute::Selective ? tokens * attn
                                                          : 0;
  *hw_flops = *model_flops + rc;
}

}  // namespace paratune::advisor::terms

namespace paratune::advisor {
bool moe_a2a_overlap(const Scenario& s, const Layout& l, Framework f) {
  return terms::moe_a2a_overlap_on(moe_dims(s, f), l);
}
}  // namespace paratune::advisor
