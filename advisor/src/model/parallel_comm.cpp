// Communication inside a micro-batch: tensor-parallel collectives, the context-parallel ring, and the per-layer
// parameter gathers and gradient reduce-scatters of ZeRO-3 / FSDP (docs/model.md §4-5).
#include <algorithm>
#include <cmath>

#include "terms.h"

namespace paratune::advisor::terms {

double exposed(const Resolved& R, const ModelParams& p, double comm, double window) {
  const double sig = p.overlap_interference;
  return R.stack.overlap_dp ? std::max(0.0, comm - window) + sig * std::min(comm, window) : comm;
}

// 2 all-reduces forward + 2 backward per layer (or reduce-scatter + all-gather pairs with SP, same volume;
// Korthikanti et al. §4.2.2), +2 when the forward is recomputed.
TpComm tp_comm(const Resolved& R, const ModelParams& p, const Layout& l) {
  const double tok = double(l.micro_batch) * R.m.s / l.cp;
  const bool sp = l.sequence_parallel && l.tp > 1;
  TpComm tc;
  tc.count = 4 + (l.recompute == Recompute::Full ? 2 : 0);
  const double one = collective_s(R, p, Coll::AllReduce, tok * R.m.h * 2, l.tp, 1);
  tc.per_layer = one * tc.count * (1 - (R.stack.tp_overlap && sp ? p.tp_overlap : 0));
  return tc;
}

// Ring exchange of K and V blocks, c-1 steps forward, twice the bytes backward, overlapped with the attention of
// the block already present.
double cp_comm_layer(const Resolved& R, const ModelParams& p, const Layout& l, const LayerCompute& lc) {
  const int c = l.cp, t = l.tp;
  if (c <= 1) return 0;
  const ModelDims& d = R.m;
  const double kv_heads_local = std::max(1.0, d.g / t);
  const double step_bytes = 2.0 * l.micro_batch * (d.s / c) * kv_heads_local * (d.h / d.a) * 2;
  const double st_f = collective_s(R, p, Coll::SendRecv, step_bytes, c, t);
  const double st_b = collective_s(R, p, Coll::SendRecv, 2 * step_bytes, c, t);
  const double blk_f = lc.attn_f / c, blk_b = lc.attn_b / c;
  const double sig = p.overlap_interference;
  double per_layer = (c - 1) * (std::max(0.0, st_f - blk_f) + sig * std::min(st_f, blk_f) +
                                std::max(0.0, st_b - blk_b) + sig * std::min(st_b, blk_b));
  if (l.recompute == Recompute::Full) per_layer *= 1.5;
  return per_layer;
}

ShardPattern shard_pattern(const Resolved& R, const Layout& l) {
  const int z = l.zero_stage;
  return {z >= 3 || (R.stack.pytorch_native && z == 2), z >= 2 && !R.stack.megatron_core};
}

// Prefetched one layer ahead: only what exceeds the layer's compute is exposed.
double shard_comm_layer(const Resolved& R, const ModelParams& p, const Layout& l, const LayerCompute& lc,
                        double recompute, double tp_layer) {
  const int z = l.zero_stage;
  const int nsh = l.shard_group > 0 ? l.shard_group : l.dp * l.cp;
  const auto [per_mb_ag, per_mb_rs] = shard_pattern(R, l);
  if (nsh <= 1 || !(per_mb_ag || per_mb_rs || z >= 3)) return 0;
  const double layer_param = R.moe.on ? moe_layer_params_per_gpu(R, l) : R.m.P_layer / l.tp;  // experts: / (ep etp)
  // How many collectives a layer's parameters take: FSDP and Megatron-FSDP gather one wrapped block at once;
  // DeepSpeed ZeRO-3 gathers in prefetch buckets of stage3_prefetch_bucket_size = 5e7 elements and reduces in
  // reduce_bucket_size = 2e8, the sizes deepspeed.json states (frameworks/deepspeed.cpp), each collective paying the
  // ring's latency.
  const bool ds = R.stack.framework == Framework::DeepSpeed;
  const double n_ag = ds ? std::ceil(layer_param / 5e7) : 1, n_rs = ds ? std::ceil(layer_param / 2e8) : 1;
  const double ag =
      per_mb_ag ? n_ag * collective_s(R, p, Coll::AllGather, layer_param * R.stack.gather_bytes() / n_ag, nsh, l.tp) : 0;
  const double rs =
      per_mb_rs || z >= 3
          ? n_rs * collective_s(R, p, Coll::ReduceScatter, layer_param * R.stack.grad_bytes() / n_rs, nsh, l.tp)
          : 0;
  const double hide = ds && z >= 3 ? p.ds_zero3_overlap : 1.0;
  const double fwd_window = hide * (lc.fwd() + tp_layer / 2), bwd_window = hide * (lc.bwd() + recompute + tp_layer / 2);
  return exposed(R, p, ag, fwd_window) + exposed(R, p, (z >= 3 ? ag : 0) + rs, bwd_window);
}

}  // namespace paratune::advisor::terms
