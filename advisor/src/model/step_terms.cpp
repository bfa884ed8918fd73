// Once-per-step terms: data-parallel gradient reduction and parameter gather, the optimizer, FLOP counts
// (docs/model.md §5-6).
#include <algorithm>
#include <cmath>

#include "terms.h"

namespace paratune::advisor::terms {

double stage_params(const Resolved& R, const Layout& l) {
  int Lf, Lm, Ll;
  stage_layers(R, l, &Lf, &Lm, &Ll);
  const ModelDims& d = R.m;
  return (std::max({Lf, Lm, Ll}) * d.P_layer + (l.pp == 1 ? d.P_emb * (d.tied ? 1 : 2) : d.P_emb)) / l.tp;
}

// A scope smaller than the data-parallel ranks is Megatron-Core's partial distributed optimizer
// (--num-distributed-optimizer-instances): param_and_grad_buffer.py reduce-scatters each gradient bucket inside the
// instance (INTRA_PARTIAL_DATA_PARALLEL_GROUP_WITH_CP, k contiguous dp-cp ranks: one node when k * tp GPUs are)
// and then all-reduces the bucket's 1/k shard over the inter-instance group (one rank per instance, k * stride
// apart: over the fabric, one NIC per GPU), both on one communication stream behind the backward; the distributed
// optimizer all-gathers the updated parameters inside the instance. Across nodes the scoped layout moves the same
// gradient bytes per NIC twice (all-reduce = reduce-scatter + all-gather) but gathers no parameters there, and its
// collectives take ~n/k ring steps over the fabric instead of n: at hundreds of ranks the latency, not the bytes,
// is what the node-local scope saves.
StepShardComm step_shard_comm(const Resolved& R, const ModelParams& p, double params, int n, int k, int stride) {
  k = k > 0 && k < n ? k : n;
  const double gbytes = params * R.stack.grad_bytes();
  StepShardComm c;
  c.reduce = collective_s(R, p, Coll::ReduceScatter, gbytes, k, stride) +
             collective_s(R, p, Coll::AllReduce, gbytes / k, n / k, stride * k);
  c.gather = collective_s(R, p, Coll::AllGather, params * R.stack.gather_bytes(), k, stride);
  return c;
}

// The PyTorch-native ZeRO-1 (nanotron's, the one the stacks here have: memory.cpp) reduce-scatters each DDP
// gradient bucket (ddp_bucket_cap_mb 25 of 16-bit gradients, PyTorch's default) from a communication hook that
// first flattens the bucket's segments once per data-parallel rank (nanotron distributed.py reduce_scatter_coalesced:
// one _flatten_dense_tensors per group rank; optim/gradient_accumulator.py get_fp32_accum_hook): data-parallel-size
// host ops per bucket, each an eager op's dispatch (~20 us: the prior of cpu_layer_us, ~120 such ops a layer; a
// physical prior, not fitted). The hooks run in the last micro-batch's backward on the thread that issues it: they
// hide in the host's slack behind the GPU's backward (GPU time beyond the host's own issue time, a backward being
// two thirds of a layer's kernels) and the rest makes the GPU wait. Hundreds of ranks make it tenths of a second.
double zero1_hook_host_s(const Resolved& R, const ModelParams& p, const Layout& l, double stage_params_per_gpu,
                         double stage_bwd_s, int layers) {
  const int ndp = l.dp * l.cp;
  if (!R.stack.pytorch_native || l.zero_stage != 1 || ndp <= 1) return 0;
  constexpr double kBucketBytes = 25.0 * 1024 * 1024, kEagerOpS = 20e-6;
  const double hooks = std::ceil(stage_params_per_gpu * 2 / kBucketBytes) * ndp * kEagerOpS;
  const double host_bwd = layers * p.cpu_layer_us[stack_index(R.stack.framework)] * 1e-6 * 2 / 3;
  return std::max(0.0, hooks - std::max(0.0, stage_bwd_s - host_bwd));
}

// Gradient all-reduce (ZeRO 0) or reduce-scatter + parameter all-gather (ZeRO 1/2), overlapped with the last
// micro-batch's backward / the first micro-batch's forward; HSDP replicas all-reduce their shard once per step.
double dp_comm_exposed(const Resolved& R, const ModelParams& p, const Layout& l, const LayerCompute& lc,
                       double recompute) {
  const int ndp = l.dp * l.cp, t = l.tp, z = l.zero_stage, v = std::max(1, l.virtual_stages);
  if (ndp <= 1) return 0;
  int Lf, Lm, Ll;
  stage_layers(R, l, &Lf, &Lm, &Ll);
  const int Lmax = std::max({Lf, Lm, Ll});
  const double psi = stage_params(R, l);
  const double stage_bwd = Lmax * (lc.bwd() + recompute) / v;
  const double stage_fwd = Lmax * lc.fwd() / v;
  const double gbytes = R.stack.grad_bytes();
  const auto [per_mb_ag, per_mb_rs] = shard_pattern(R, l);
  if (l.shard_group > 0 && l.shard_group < ndp && z >= 2) {
    const double ar = collective_s(R, p, Coll::AllReduce, psi * gbytes / l.shard_group, ndp / l.shard_group,
                                   t * l.shard_group);
    return exposed(R, p, ar, stage_bwd);
  }
  if (z == 0) return exposed(R, p, collective_s(R, p, Coll::AllReduce, psi * gbytes, ndp, t), stage_bwd);
  // The updated parameters' all-gather: behind the next forward, or after the optimizer step with nothing to hide
  // behind (overlap_param_gather = false). ZeRO-1 shards within its scope (step_shard_comm).
  const StepShardComm sc = step_shard_comm(R, p, psi, ndp, z == 1 ? l.shard_group : ndp, t);
  const double gather_exposed = R.stack.overlap_param_gather ? exposed(R, p, sc.gather, stage_fwd) : sc.gather;
  if (z == 1 || (z == 2 && !per_mb_rs)) {
    const double hook = zero1_hook_host_s(R, p, l, psi, Lmax * (lc.bwd() + recompute), Lmax);
    return exposed(R, p, sc.reduce, stage_bwd) + gather_exposed + hook;
  }
  // ZeRO-2 / shard-grad-op: gradients reduced per micro-batch (shard_comm_layer), params gathered per step.
  if (z == 2 && !per_mb_ag) return gather_exposed;
  return 0;
}

// Adam is memory-bound: ~34 bytes per local parameter (fp32 master, m, v read+write, gradient read, 16-bit copy
// written, gradient-norm pass), plus a few kernel launches.
double optimizer_s(const Resolved& R, const Layout& l) {
  const double psi = stage_params(R, l);
  const int ndp = l.dp * l.cp;
  const double local = l.zero_stage >= 1 ? psi / (l.shard_group > 0 ? l.shard_group : ndp) : psi;
  return 34 * local / R.hbm + 50e-6 * 3;
}

void step_flops(const Resolved& R, const Layout& l, double* model_flops, double* hw_flops) {
  const ModelDims& d = R.m;
  const double tokens = double(R.s.training.global_batch) * d.s;
  *model_flops = tokens * R.model_flops_per_token;
  const double rc = l.recompute == Recompute::Full        ? tokens * (2 * d.L * d.P_layer + 4.0 * d.L * d.h * d.s)
                    : l.recompute == Recompute::Selective ? tokens * 4.0 * d.L * d.h * d.s
                                                          : 0;
  *hw_flops = *model_flops + rc;
}

}  // namespace paratune::advisor::terms
