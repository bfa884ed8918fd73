// The performance model's named terms (docs/model.md derives each). Every term is a pure function of the resolved
// scenario, the parameters and the layout; Evaluator::evaluate (evaluator.cpp) only adds them up.
#pragma once

#include "paratune/advisor/model.h"
#include "paratune/advisor/plan.h"
#include "paratune/advisor/resolved.h"

namespace paratune::advisor::terms {

// --- compute (compute.cpp) ----------------------------------------------------------------------------------------
// GEMM time on one GPU (FP8 gain on linear layers): max(2MNK / (peak x shape), bytes / HBM) + t0.
double gemm_s(const Resolved& R, const ModelParams& p, double M, double N, double K, bool linear = true);
double gemm_shape_factor(double M, double N, double K);

// One transformer layer, one micro-batch, one GPU: the work split by kind, forward and backward.
struct LayerCompute {
  double gemm_f = 0, gemm_b = 0;   // linear layers (data- and weight-gradient GEMMs backward)
  double attn_f = 0, attn_b = 0;   // attention core (fused or unfused)
  double elt_f = 0, elt_b = 0;     // elementwise work streamed through HBM
  double fwd() const { return gemm_f + attn_f + elt_f; }
  double bwd() const { return gemm_b + attn_b + elt_b; }
};
LayerCompute layer_compute(const Resolved& R, const ModelParams& p, const Layout& l);
// The forward work recomputed in the backward pass: the whole forward (full) or the attention core (selective).
double recompute_s(const LayerCompute& c, Recompute r);
// Embedding lookup (first stage) and LM head + loss (last stage), one micro-batch.
double embedding_s(const Resolved& R, const Layout& l);
double head_s(const Resolved& R, const ModelParams& p, const Layout& l);

// --- collectives (collectives.cpp) --------------------------------------------------------------------------------
// Bus bandwidth (GB/s) of a group of k GPUs whose ranks are `stride` apart (TP innermost, then CP, DP, PP).
double group_busbw_gbps(const Resolved& R, const ModelParams& p, int k, int stride, bool allreduce);
// Time of one collective of `bytes` (the full, unsharded buffer) on such a group.
double collective_s(const Resolved& R, const ModelParams& p, Coll c, double bytes, int k, int stride);

// --- parallelism (parallel_comm.cpp) ------------------------------------------------------------------------------
// Tensor-parallel all-reduces (or RS + AG with SP) of one layer and micro-batch, after comm/GEMM overlap.
struct TpComm {
  double per_layer = 0;   // exposed seconds
  double count = 0;       // collectives per layer (4, 6 with full recompute)
};
TpComm tp_comm(const Resolved& R, const ModelParams& p, const Layout& l);
// Context-parallel ring exchange of K/V blocks of one layer and micro-batch, overlapped with the attention.
double cp_comm_layer(const Resolved& R, const ModelParams& p, const Layout& l, const LayerCompute& c);
// ZeRO-3 / FSDP per-layer parameter all-gathers and gradient reduce-scatters, exposed beyond the layer's compute.
double shard_comm_layer(const Resolved& R, const ModelParams& p, const Layout& l, const LayerCompute& c,
                        double recompute, double tp_layer);
// When ZeRO/FSDP traffic happens per micro-batch instead of once per step: parameter all-gathers (ZeRO-3, FSDP's
// shard-grad-op) and gradient reduce-scatters (ZeRO-2/3 outside Megatron-Core, whose buffers reduce once per step).
struct ShardPattern {
  bool per_mb_ag = false, per_mb_rs = false;
};
ShardPattern shard_pattern(const Resolved& R, const Layout& l);
// Comm hidden behind compute still slows it (interference); without overlap it is all exposed.
double exposed(const Resolved& R, const ModelParams& p, double comm, double window);

// --- pipeline (pipeline.cpp) --------------------------------------------------------------------------------------
// Layers on the first, middle and last stage (Megatron's embedding/loss-aware uneven split included).
void stage_layers(const Resolved& R, const Layout& l, int* first, int* mid, int* last);
struct Stages {
  double first = 0, mid = 0, last = 0;  // seconds per micro-batch per stage (all virtual chunks)
  double max() const;
  double bubble = 0;                     // pipeline fill and drain per step
};
Stages stage_times(const Resolved& R, const Layout& l, double per_layer, double emb, double head, double mb_over);
// Point-to-point activations and gradients between stages, per step.
double pp_p2p(const Resolved& R, const ModelParams& p, const Layout& l, int microbatches);

// --- once per step (step_terms.cpp) -------------------------------------------------------------------------------
// Parameters held by the bottleneck stage, TP split applied.
double stage_params(const Resolved& R, const Layout& l);
// Data-parallel gradient reduction and parameter gather per step, exposed beyond the last/first micro-batch.
double dp_comm_exposed(const Resolved& R, const ModelParams& p, const Layout& l, const LayerCompute& c,
                       double recompute);
// Adam step: memory-bound, ~34 bytes per local parameter.
double optimizer_s(const Resolved& R, const Layout& l);
// Model FLOPs and the hardware FLOPs (recompute included) of one step.
void step_flops(const Resolved& R, const Layout& l, double* model_flops, double* hw_flops);

// --- memory (memory.cpp) ------------------------------------------------------------------------------------------
double memory_gib(const Resolved& R, const Layout& l, double headroom_gib, MemoryBreakdown* out);

}  // namespace paratune::advisor::terms
