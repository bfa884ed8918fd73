// Memory per GPU (GiB): model states per ZeRO stage / framework (Rajbhandari et al. 2020; Megatron-LM distributed
// optimizer doc), activations (Korthikanti et al. 2022) with the 1F1B in-flight count, logits, buffers, reserve.
#include <algorithm>

#include "terms.h"

namespace paratune::advisor::terms {

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct StateBytes {
  double weights = 0, grads = 0, optimizer = 0;  // bytes per parameter held
  double step_only = 0;                           // optimizer bytes that exist only inside the optimizer step
  bool layer_buffers = false;                     // unsharded layer parameters gathered per layer (ZeRO-3 / FSDP)
};

StateBytes state_bytes(const Resolved& R, const Layout& l, double n_sh) {
  StateBytes b;
  const int z = l.zero_stage;
  switch (R.stack.framework) {
    case Framework::Megatron:
    case Framework::Nemo: {
      // 16-bit params, the main_grad buffer (fp32 or 16-bit), the optimizer's states (mcore_optimizer_bytes):
      // Megatron-LM's distributed optimizer doc, 6 + 12/d (bf16 params, fp32 grads) and 4 + 16/d (16-bit grads,
      // of which the fp32 gradient copy lives only inside the step). zero_stage 3 = Megatron-FSDP.
      const OptimizerBytes ob = mcore_optimizer_bytes(R, l);
      b = {2, R.stack.grad_bytes(), ob.persistent, ob.step_only, false};
      if (z >= 1) { b.optimizer /= n_sh; b.step_only /= n_sh; }
      if (z >= 3) { b.weights /= n_sh; b.grads /= n_sh; b.layer_buffers = true; }
      break;
    }
    case Framework::DeepSpeed:
      // bf16 params, fp32 gradient accumulation (BF16_Optimizer / ZeRO partitions), fp32 master + Adam.
      b = {2, 4, 12, false};
      if (z >= 1) b.optimizer /= n_sh;
      if (z >= 2) b.grads /= n_sh;
      if (z >= 3) { b.weights /= n_sh; b.layer_buffers = true; }
      break;
    case Framework::Fsdp:
    case Framework::Torchtitan:
    default:
      // fp32 sharded params, fp32 grads, Adam m, v: 16/n for full shard; DDP keeps all 16 bytes; shard-grad-op
      // keeps the unsharded bf16 params between forward and backward.
      b = {4, 4, 8, false};
      // ZeRO-1, which FSDP and torchtitan lack, as the PyTorch-native stacks that have it build it (nanotron's
      // ZeroDistributedOptimizer over its fp32 gradient accumulator, as DeepSpeed's): bf16 params, the full fp32
      // gradient accumulator, fp32 master weights and Adam m, v for this rank's shard only.
      if (z == 1) b = {2, 4, 12 / n_sh, false};
      if (z >= 2) { b.weights = 4 / n_sh + 2; b.grads /= n_sh; b.optimizer /= n_sh; }
      if (z >= 3) { b.weights = 4 / n_sh; b.layer_buffers = true; }
      break;
  }
  const bool fp8 = R.s.training.precision == Precision::Fp8;
  if (R.stack.fp8_params)
    b.weights = z >= 3 ? 1.0 / n_sh : 1.0;  // FP8 primary weights: no 16-bit copy (Transformer Engine fp8_model_init)
  else if (fp8 && R.stack.framework != Framework::Fsdp && R.stack.framework != Framework::DeepSpeed)
    b.weights += z >= 3 ? 1.0 / n_sh : 1.0;  // FP8 weight copies beside the 16-bit ones (TE, float8 training)
  return b;
}

// Buffers: CUDA context + library workspaces; NCCL buffers per communicator kind; NVLS; framework buckets;
// unsharded layer parameters (current + prefetched) and one layer's gradients for ZeRO-3 / FSDP.
double buffers_gib(const Resolved& R, const Layout& l, const StateBytes& b) {
  const int t = l.tp, c = l.cp, p = l.pp;
  double buf = 0.8;
  const int groups = (t > 1) + (c > 1) + (p > 1) + (l.dp * c > 1);
  buf += 0.2 * groups;
  if (t > 1 && R.gpu.nvls && R.s.cluster.nvls) buf += 1.0;
  if (R.stack.framework == Framework::DeepSpeed && l.zero_stage >= 1) buf += 0.75;  // 2e8-element buckets
  if (b.layer_buffers) buf += (2 * 2 + 4) * R.m.P_layer / t / kGiB;
  return buf;
}

}  // namespace

// Megatron-Core's optimizer (megatron/core/optimizer/distrib_optimizer.py, optimizer_config.py at the pinned
// versions): without the precision-aware optimizer, fp32 master weights and Adam's m and v (12 bytes), plus the fp32
// copy of a 16-bit gradient shard made for the step (shard_model_grad.float()). With it, the moments in their
// dtype; Transformer Engine's FusedAdam holds the master weights and reads the gradient buffer itself
// (decoupled_grad: no copy) unless FP8 with a scaling recipe other than delayed keeps Megatron's own fp32 masters
// (use_precision_aware_optimizer_no_fp8_or_ds_fp8); TE's masters with 16-bit parameters keep only the 16 bits the
// parameter lacks (store_param_remainders, default on: an int16 tensor) or an fp16 master.
// main_params bf16 is no Megatron-Core choice: it is NeMo 1.0's Apex DistributedFusedAdam with optim.dtype bf16 on a
// bf16 model, which keeps no master copy (nemo/collections/nlp/models/language_modeling/megatron_base_model.py:
// store_params = False when the optimizer dtype equals the model's) and reads the bf16 gradient buffer
// (grad_sync_dtype bf16): only the moments, sharded. Published NeMo 1.0 runs use it; no plan does.
OptimizerBytes mcore_optimizer_bytes(const Resolved& R, const Layout& l) {
  const double grad_copy = R.stack.grad_fp32 ? 0 : 4;
  if (!l.precision_aware_optimizer()) return {12, grad_copy};
  if (l.main_params == StateDtype::Bf16) return {2 * state_dtype_bytes(l.optimizer_moments), 0};
  const TrainingSpec& t = R.s.training;
  const bool fp8 = t.precision == Precision::Fp8;
  const bool te_masters = l.main_params != StateDtype::Fp32 || !fp8 || t.fp8_recipe.value_or(Fp8Recipe::Delayed) ==
                                                                             Fp8Recipe::Delayed;
  const double moments = 2 * state_dtype_bytes(l.optimizer_moments);
  if (!te_masters) return {4 + moments, grad_copy};
  const bool bf16_params = t.precision != Precision::Fp16;
  return {(bf16_params || l.main_params == StateDtype::Fp16 ? 2.0 : 4.0) + moments, 0};
}

double memory_gib(const Resolved& R, const Layout& l, double headroom_gib, MemoryBreakdown* out) {
  const ModelDims& d = R.m;
  const int t = l.tp, p = l.pp, c = l.cp, b = l.micro_batch;
  int Lf, Lm, Ll;
  stage_layers(R, l, &Lf, &Lm, &Ll);
  const int m = std::max(1, R.s.training.global_batch / std::max(1, l.dp * b));
  const bool sp = l.sequence_parallel && t > 1;
  const double n_sh = double(l.shard_group > 0 ? l.shard_group : l.dp * c);
  const bool fp8 = R.s.training.precision == Precision::Fp8;
  const double tok = double(b) * d.s / c;

  // Parameters held by this GPU on the first and last stages (embedding on the first, LM head on the last).
  double psi_first, psi_last;
  if (p == 1) {
    psi_first = psi_last = (d.L * d.P_layer + d.P_emb * (d.tied ? 1 : 2)) / t;
  } else {
    psi_first = (Lf * d.P_layer + d.P_emb) / t;
    psi_last = (Ll * d.P_layer + d.P_emb) / t;  // tied: a copy of the embedding; untied: the LM head
  }
  const StateBytes sb = state_bytes(R, l, n_sh);

  // Activations: in-flight micro-batches on the first stage under 1F1B (p of them, Narayanan et al. §2.2), times
  // 1 + (p-1)/(p v) with interleaving (Korthikanti et al. §4); the last stage keeps one; GPipe all m on both
  // (inflight_microbatches, pipeline.cpp).
  const double a_layer = activation_bytes_per_layer(R.s.model, b, t, c, sp, l.recompute, R.stack.flash, fp8,
                                                    recompute_module_set(R.s, l, false));
  const double inflight_first = inflight_microbatches(l, m, true), inflight_last = inflight_microbatches(l, m, false);
  double work = 0;  // full recompute: one layer's activations are rebuilt at a time
  if (l.recompute == Recompute::Full)
    work = activation_bytes_per_layer(R.s.model, b, t, c, sp, Recompute::None, R.stack.flash, fp8);
  const double act_first =
      resident_layers(l, Lf) * a_layer * inflight_first + work + 2 * tok * d.h / (sp ? t : 1) * inflight_first;
  const double act_last = resident_layers(l, Ll) * a_layer * inflight_last + work;
  // Logits of one micro-batch on the last stage, split by t: bf16 logits + an fp32 softmax for the loss, or only
  // the bf16 logits where Transformer Engine's fused loss writes its gradient into them (loss_fusion.h).
  const double logits = R.stack.loss_bytes * tok * d.V / t;

  const double per_param = sb.weights + sb.grads + sb.optimizer;
  const double state_first = psi_first * per_param, state_last = psi_last * per_param;
  const bool last_worse = p > 1 && (state_last + act_last + logits > state_first + act_first);
  const double psi = p == 1 ? psi_first : (last_worse ? psi_last : psi_first);

  MemoryBreakdown mb;
  mb.weights = psi * sb.weights / kGiB;
  mb.gradients = psi * sb.grads / kGiB;
  mb.activations = (p == 1 ? act_first : (last_worse ? act_last : act_first)) / kGiB;
  mb.logits = (p == 1 || last_worse ? logits : 0) / kGiB;
  mb.optimizer = optimizer_peak(psi * sb.optimizer / kGiB, psi * sb.step_only / kGiB, mb.activations + mb.logits);
  mb.buffers = buffers_gib(R, l, sb);
  // Allocator fragmentation: 0.5 GiB plus 7 % of the dynamic (activation) memory; policy headroom on top.
  mb.reserve = 0.5 + 0.07 * (mb.activations + mb.logits) + headroom_gib;
  if (out) *out = mb;
  return mb.total();
}

}  // namespace paratune::advisor::terms
