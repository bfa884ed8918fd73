// Expert-parallel communication (docs/model.md §9): the all-to-all as α–β over the island logic of collectives.cpp
// (which share of a rank's traffic stays on NVLink, which crosses the NICs), the three token dispatchers, their
// overlap with another micro-batch, and the once-per-step terms of the experts' own data-parallel group.
#include <algorithm>
#include <cmath>

#include "terms.h"

namespace paratune::advisor::terms {

double alltoall_s(const Resolved& R, const ModelParams& p, double bytes, int k, int stride, double net_share,
                  double local_share) {
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
  const double local = bytes * (q - 1) / k * local_share / local_bw;
  const double net = islands > 1 ? bytes * double(k - q) / k * net_share / net_bw : 0;
  const double alpha = (islands > 1 ? p.alpha_net_us : p.alpha_nvl_us) * 1e-6;
  return p.a2a_latency_us * 1e-6 + alpha + std::max(local, net);
}

double group_hit_probability(double experts, double k, double groups) {
  if (groups <= 1) return 1.0;
  const double per_group = experts / groups;
  double miss = 1;
  for (int i = 0; i < int(k); ++i) miss *= std::max(0.0, (experts - per_group - i) / (experts - i));
  return 1 - miss;
}

double island_hit_probability(const MoeDims& d, int ep, int per_island) {
  const int islands = (ep + per_island - 1) / per_island;
  const double unrestricted = group_hit_probability(d.E, d.k, islands);
  const double G = d.groups, g = d.group_topk;
  // With group_topk >= top_k a group is ranked by its best expert alone, so the groups of the token's top-k experts
  // always win: unrestricted. Islands of unequal size (an NVL72 rack's 72 ranks beside 56) hold no whole number
  // of groups each: unrestricted too.
  if (G <= 1 || g >= G || g >= d.k || islands <= 1 || ep % per_island != 0) return unrestricted;
  const double island_experts = d.E * per_island / ep, group_experts = d.E / G;
  double limited = unrestricted;
  // Whole groups per island: reached when one of its groups is among the g chosen, taking each chosen group to
  // receive one of the token's experts (Megatron-Core ranks groups by their top experts' scores; an approximation:
  // a chosen group can still lose all k picks to the others). A group over several islands: chosen with g/G, then
  // its islands share the token's experts as unrestricted routing over the chosen groups' experts would.
  if (std::fmod(island_experts, group_experts) == 0)
    limited = group_hit_probability(G, g, islands);
  else if (std::fmod(group_experts, island_experts) == 0)
    limited = g / G * group_hit_probability(g * group_experts, d.k, g * group_experts / island_experts);
  return std::min(limited, unrestricted);
}

namespace {

// DeepEP / HybridEP send a token once per destination: once per island across the network (forwarded over NVLink
// there) and once per rank inside the island, with the combine reducing per rank before it sends back (DeepEP
// tests/test_intranode.py: rank_idx = topk_idx // experts_per_rank, made unique per token; the README's NVLink
// GB/s are these deduplicated received bytes). The NCCL all-to-all sends one copy per (token, expert): k (I-1)/I
// copies across islands, k (q-1)/ep to the other ranks of its own. The shares scale those copies down.
struct Dedup {
  double net = 1, local = 1;
};
Dedup dedup_shares(const Resolved& R, const Layout& l) {
  int q, islands;
  island_split(R, l.ep, l.etp, &q, &islands);
  Dedup d;
  if (R.moe.k <= 1) return d;
  const double E = R.moe.E, k = R.moe.k, I = islands;
  if (islands > 1) d.net = std::min(1.0, (I - 1) * island_hit_probability(R.moe, l.ep, q) / (k * (I - 1) / I));
  if (q > 1) d.local = std::min(1.0, group_hit_probability(E, k, l.ep) * l.ep / k);
  return d;
}

// NCCL's token traffic inside an MoE layer: its NVLink share at nccl_a2a_eff of the DeepEP-class rate; across the
// NICs NCCL's all-to-all reaches their rate as DeepEP's does (nccl_alltoall.csv: 0.84-0.97 of it from 2 to 48
// nodes; alltoall_bw.csv's DeepEP / HybridEP median 0.91), so the network share does not pay it.
ModelParams nccl_rates(const ModelParams& p) {
  ModelParams nccl = p;
  nccl.a2a_nvl_eff = p.a2a_nvl_eff * p.nccl_a2a_eff;
  return nccl;
}

// The four transfers of one MoE layer and micro-batch: dispatch and combine forward, and their transposes backward
// (the combine's gradient travels as a dispatch, the dispatch's as a combine), each with its expert-TP gather.
struct A2aPhases {
  double dispatch_f = 0, combine_f = 0, dispatch_b = 0, combine_b = 0;
  double sum() const { return dispatch_f + combine_f + dispatch_b + combine_b; }
};

A2aPhases a2a_phases(const Resolved& R, const ModelParams& p, const Layout& l) {
  const double row_bytes = R.m.h * 2;  // 16-bit hidden states
  const double t_in = moe_tokens_in(R, l);
  A2aPhases a;
  if (l.dispatcher == Dispatcher::AllGather) {
    // Every token to every rank of the EP x ETP group, then a reduce-scatter of the expert outputs: a rank's t_in
    // rows go to each of the k - 1 others, an all-to-all of identical blocks, one copy per destination rank however
    // many of its experts a token picks. NCCL moves them over the same NVLink, in the same layer, as the alltoall
    // dispatcher's rows, so at the same rate (nccl-tests put NCCL's all-gather and all-to-all within 10 % of each
    // other on NVLink, nccl_busbw.csv and nccl_alltoall.csv); the dense rings' rate would make these token rows
    // twice as cheap as the alltoall dispatcher's.
    const int k = l.ep * l.etp;
    const double each = alltoall_s(R, nccl_rates(p), k * t_in * row_bytes, k, 1);
    a.dispatch_f = a.combine_b = a.combine_f = a.dispatch_b = each;
    // NeMo AutoModel's "torch" dispatcher (GroupedExperts.forward, moe/experts.py at v0.5.0) all-gathers the
    // 16-bit rows (:355), but sums the experts' outputs into an fp32 buffer (:420 loop, :490 grouped GEMMs) and
    // all-reduces that in fp32 (:399) before casting back (:403): an all-reduce is a reduce-scatter's traffic and an
    // all-gather's, of rows twice as wide, so 4 x each; its gradient is the same fp32 all-reduce (torch.distributed.nn
    // _AllReduce.backward). The gather's backward is an all-reduce of the 16-bit gradient rows, not a
    // reduce-scatter (_AllGatherConcatVarlenFn, :45-79, :77): 2 x each. The routing weights, indices and mask
    // gathered beside the rows (:356-358: 12 bytes per top-k slot and one per token) are not priced.
    if (R.stack.framework == Framework::Automodel) {
      a.combine_f = a.combine_b = 4 * each;
      a.dispatch_b = 2 * each;
    }
    return a;
  }
  // Padded to capacity, the router itself fills every expert to its capacity with the highest-scoring tokens
  // (Megatron-Core router.py apply_router_token_dropping(pad_to_capacity): the routing map becomes the capacity
  // mask), so the token dispatchers move capacity rows per expert, cf times the routed ones (for DeepEP/HybridEP
  // an upper bound: their per-rank de-duplication of the extra rows is not modelled); the allgather dispatcher
  // moves every token anyway.
  const double padded = expert_rows(R.moe);
  const double send = t_in * R.moe.k * row_bytes * padded;
  // DeepEP / HybridEP dispatch FP8 rows in FP8 runs (1 byte + a scale per 128 values) and combine in BF16 (DeepEP
  // README: "FP8 dispatching and BF16 combining"); gradients travel in BF16 both ways; NCCL's all-to-all moves the
  // 16-bit hidden states. torchtitan's DeepEP/HybridEP dispatch BF16 (v0.2.2; main's use_fp8_dispatch = False);
  // AutoModel's FP8 (model.backend.te_fp8) is not planned.
  const bool fp8_dispatch = l.dispatcher == Dispatcher::Flex && R.s.training.precision == Precision::Fp8 &&
                            R.stack.framework != Framework::Torchtitan && R.stack.framework != Framework::Automodel;
  const double dispatch_bytes = fp8_dispatch ? send * (1 + 4.0 / 128) / 2 : send;
  if (l.ep > 1) {
    if (l.dispatcher == Dispatcher::Flex) {
      const Dedup share = dedup_shares(R, l);
      a.dispatch_f = alltoall_s(R, p, dispatch_bytes, l.ep, l.etp, share.net, share.local);
      a.combine_f = a.dispatch_b = a.combine_b = alltoall_s(R, p, send, l.ep, l.etp, share.net, share.local);
    } else {
      a.dispatch_f = a.combine_f = a.dispatch_b = a.combine_b =
          collective_s(R, nccl_rates(p), Coll::AllToAll, send, l.ep, l.etp);
    }
  }
  // Expert TP > 1: the received rows are gathered in the expert-TP group, the outputs reduce-scattered back.
  if (l.etp > 1) {
    const double etp = collective_s(R, p, Coll::AllGather, l.etp * send, l.etp, 1);
    a.dispatch_f += etp, a.combine_f += etp, a.dispatch_b += etp, a.combine_b += etp;
  }
  return a;
}

// One forward layer of a micro-batch beside the backward layer of an earlier one, as Megatron-Core's combined 1F1B
// runs them on a computation and a communication stream (TransformerLayerSchedulePlan.run):
//   comm: combine_b        | dispatch_f -> dispatch_b     | combine_f
//   comp: pre_dispatch_f   | mlp_b -> mlp_b_dw -> mlp_f   | pre_dispatch_b
// each operation waiting for its stream and for the data it needs. Returns the pair's critical path.
double layer_pair_s(const MoePhases& c, const A2aPhases& a) {
  const double x = a.combine_b;                              // comm: gradient into the MLP's backward
  const double pre_f = c.pre_f;                              // comp: attention block of the forward
  const double y = std::max(x, pre_f) + a.dispatch_f;        // comm: the forward's tokens out (needs pre_f)
  const double mlp_b = std::max(pre_f, x) + c.mlp_dgrad;     // comp: needs the combine's gradient
  const double z = std::max(y, mlp_b) + a.dispatch_b;        // comm: the MLP's input gradient back (needs mlp_b)
  const double dw = mlp_b + c.mlp_wgrad;
  const double mlp_f = std::max(dw, y) + c.mlp_f;            // comp: needs the dispatched tokens
  const double w = std::max(z, mlp_f) + a.combine_f;         // comm: the forward's outputs home
  const double pre_b = std::max(mlp_f, z) + c.pre_b;         // comp: needs the dispatch's gradient
  return std::max(w, pre_b);
}

// The share of a rank's layer passes that run paired: all but the warm-up forwards and the cool-down backwards
// (Megatron's interleaved schedule: 2 (p - 1 - rank) + (v - 1) p warm-up chunks on a rank, p - 1 + (v - 1) p on
// average; without a pipeline the first forward and the last backward).
double paired_share(const Resolved& R, const Layout& l) {
  const int m = std::max(1, R.s.training.global_batch / std::max(1, l.dp * l.micro_batch));
  const int v = std::max(1, l.virtual_stages);
  const double passes = double(m) * v;
  const double warm_up = l.pp == 1 ? 1.0 : (l.pp - 1) + double(v - 1) * l.pp;
  return std::clamp((passes - warm_up) / passes, 0.0, 1.0);
}

}  // namespace

// The compute a hidden transfer of this dispatcher slows: DeepEP / HybridEP run on a fixed set of SMs (Megatron-Core
// TransformerConfig: moe_hybridep_num_sms = 16, moe_deepep_num_sms = 20; the HybridEP README measures its rates at
// 16 SMs on B200), so the computation overlapped with them runs on the rest of the GPU and loses that share of its
// SMs for as long as the transfer lasts. NCCL's all-to-all (its channels' SMs and the HBM traffic of its copies)
// keeps the interference fitted on the dense stacks' overlapped collectives.
double a2a_interference(const Resolved& R, const ModelParams& p, const Layout& l) {
  if (l.dispatcher != Dispatcher::Flex || R.gpu.sm_count <= 0) return p.overlap_interference;
  const bool deepep_only = R.s.cluster.lacks(Kernel::HybridEP) && !R.s.cluster.lacks(Kernel::DeepEP);
  const double sms = deepep_only ? 20 : 16;
  return std::min(1.0, sms / R.gpu.sm_count);
}

bool moe_a2a_overlap_on(const MoeDims& d, const Layout& l) {
  // Megatron-Core's TransformerConfig asserts: EP > 1, the alltoall or flex dispatcher, no full recompute, and with
  // PP > 1 an interleaved schedule (the merged 1F1B needs virtual stages).
  return d.a2a_overlap && l.ep > 1 && l.dispatcher != Dispatcher::AllGather && l.recompute != Recompute::Full &&
         (l.pp == 1 || l.virtual_stages > 1) && d.mtp <= 1;
}

MoeComm moe_comm_layer(const Resolved& R, const ModelParams& p, const Layout& l, const LayerCompute&,
                       double recompute) {
  MoeComm mc;
  if (!R.moe.moe || (l.ep <= 1 && l.etp <= 1)) return mc;
  const A2aPhases a = a2a_phases(R, p, l);
  // Full recompute, or selective recompute of the MoE block, runs its forward again, dispatch and combine included.
  const bool again = l.recompute == Recompute::Full || (recompute_module_set(R.s, l, true) & recompute_module::kMoe);
  const double comm = a.sum() + (again ? a.dispatch_f + a.combine_f : 0);
  mc.raw = R.moe.mix * comm;
  mc.exposed = mc.raw;
  if (moe_a2a_overlap_on(R.moe, l)) {
    // Paired passes expose what the other micro-batch's computation cannot cover; the hidden part still takes the
    // SMs the communication kernels run on (a2a_interference); unpaired passes expose all of it.
    MoePhases c = moe_layer_phases(R, p, l);
    c.pre_b += recompute;
    const double exposed_pair = std::max(0.0, layer_pair_s(c, a) - c.sum());
    const double hidden = std::max(0.0, comm - exposed_pair);
    const double share = paired_share(R, l);
    mc.exposed = R.moe.mix * (share * (exposed_pair + a2a_interference(R, p, l) * hidden) + (1 - share) * comm);
  }
  // The busiest rank receives f times the rows: its all-to-all lasts that much longer, and the others wait.
  mc.imbalance = (moe_imbalance_factor(R, p, l) - 1) * mc.exposed;
  return mc;
}

double moe_layer_overhead_s(const Resolved& R, const ModelParams& p, const Layout& l) {
  if (!R.moe.moe) return 0;
  // The host waits for the dropless token counts of each dispatch (DeepEP README: the CPU waits for the GPU's
  // received-count signal; the all-to-all dispatcher's splits): with nothing queued behind the wait the GPU idles.
  // In the combined 1F1B schedule the other micro-batch's layer is queued on the computation stream when the host
  // waits, so only the unpaired passes idle.
  const double exposed_share = moe_a2a_overlap_on(R.moe, l) ? 1 - paired_share(R, l) : 1.0;
  return R.moe.mix * p.moe_layer_us * 1e-6 * exposed_share;
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
  const int edp = l.expert_dp();
  if (z >= 3 || (ndp <= 1 && edp <= 1)) return 0;  // FSDP-style sharding: per layer (shard_comm_layer)
  int Lf, Lm, Ll;
  stage_layers(R, l, &Lf, &Lm, &Ll);
  const int Lmax = std::max({Lf, Lm, Ll});
  double psi_e = 0;
  const double psi_d = moe_stage_params(R, l, &psi_e);
  const double bwd = Lmax * (lc.bwd() + recompute) / v, fwd = Lmax * lc.fwd() / v;
  const double gb = R.stack.grad_bytes();
  // Dense part over the dp x cp ranks (TP innermost); experts over their edp ranks, ep x etp apart (Megatron-Core's
  // expert rank order: expert TP, EP, expert DP, PP). Distributed-optimizer instances split both groups
  // (parallel_state.py: the intra-partial dp-cp and expert-dp groups, each n / instances contiguous ranks).
  const int inst = l.optimizer_instances();
  auto group = [&](double psi, int n, int stride) {
    if (n <= 1 || psi <= 0) return 0.0;
    if (z == 0) return exposed(R, p, collective_s(R, p, Coll::AllReduce, psi * gb, n, stride), bwd);
    const StepShardComm c = step_shard_comm(R, p, psi, n, n / inst, stride);
    return exposed(R, p, c.reduce, bwd) + exposed(R, p, c.gather, fwd);
  };
  return group(psi_d, ndp, l.tp) + group(psi_e, edp, l.ep * l.etp);
}

double moe_optimizer_s(const Resolved& R, const Layout& l) {
  double psi_e = 0;
  const double psi_d = moe_stage_params(R, l, &psi_e);
  const double edp = l.expert_dp();
  const double inst = l.optimizer_instances();  // each instance shards the whole state: 1/instances as many ways
  const double local = l.zero_stage >= 1 ? (psi_d / (l.dp * l.cp) + psi_e / edp) * inst : psi_d + psi_e;
  return 34 * local / R.hbm + 50e-6 * 3;
}

void moe_step_flops(const Resolved& R, const Layout& l, double* model_flops, double* hw_flops) {
  const ModelDims& d = R.m;
  const double tokens = double(R.s.training.global_batch) * d.s;
  *model_flops = tokens * R.model_flops_per_token;
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
