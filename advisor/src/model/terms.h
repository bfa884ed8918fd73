// The performance model's named terms (docs/model.md derives each). Every term is a pure function of the resolved
// scenario, the parameters and the layout; Evaluator::evaluate (evaluator.cpp) only adds them up.
#pragma once

#include <algorithm>

#include "paratune/advisor/model.h"
#include "paratune/advisor/plan.h"
#include "paratune/advisor/resolved.h"

namespace paratune::advisor {
// The generalised layer's counts (moe_dims.cpp): all parameters, MTP modules excluded.
double moe_total_params(const ModelSpec& m);
double moe_flops_per_token(const ModelSpec& m);  // the MFU convention with active parameters and head widths
inline bool uses_moe_layer(const ModelSpec& m) { return m.generalised_layer(); }
}  // namespace paratune::advisor

namespace paratune::advisor::terms {

// --- compute (compute.cpp) ----------------------------------------------------------------------------------------
// GEMM time on one GPU (FP8 gain on linear layers): max(2MNK / (peak x shape), bytes / HBM) + t0.
double gemm_s(const Resolved& R, const ModelParams& p, double M, double N, double K, bool linear = true);
double gemm_shape_factor(double M, double N, double K);
// The grouped expert kernel's shape factor (moe_compute.cpp; DeepGEMM's tables in grouped_gemm.csv).
double grouped_shape_factor(double M, double N, double K);

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
// Recompute time per layer and micro-batch: the whole forward (full), or the modules selective recompute rebuilds
// (recompute_module_set(): the attention core, the norms, the MLP's GEMMs and activation).
double recompute_s(const Resolved& R, const ModelParams& p, const Layout& l, const LayerCompute& c);
// Embedding lookup (first stage) and LM head + loss (last stage), one micro-batch.
double embedding_s(const Resolved& R, const Layout& l);
double head_s(const Resolved& R, const ModelParams& p, const Layout& l);

// --- collectives (collectives.cpp) --------------------------------------------------------------------------------
// Ranks of a group of k GPUs `stride` apart that share an island (node, or multi-node NVLink domain), and how many
// islands the group spans.
void island_split(const Resolved& R, int k, int stride, int* per_island, int* islands);
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
// The first and last ranks' layer counts that make the slowest of L layers over p ranks fastest, with `emb` on the
// first rank and `head` on the last (0, 0 when p < 2); every rank keeps a layer, its virtual chunks may be empty.
void plan_stage_layers(int L, int p, double per_layer, double emb, double head, int* first, int* last);
// Layers on the first, middle and last stage (Megatron's embedding/loss-aware uneven split included).
void stage_layers(const Resolved& R, const Layout& l, int* first, int* mid, int* last);
struct Stages {
  double first = 0, mid = 0, last = 0;  // seconds per micro-batch per stage (all virtual chunks)
  double mean = 0;                       // the ranks' mean: what each would take if the work were spread evenly
  double max() const;
  double bubble = 0;                     // pipeline fill and drain per step
  // Balanced splits only (StackProfile::balanced_stages): the slowest stage's layers, and whether it holds the
  // embedding / the LM head; -1 = equal layer counts (the evaluator takes the largest stage_layers count).
  int slow_layers = -1;
  bool slow_emb = false, slow_head = false;
};
// `w_layer`: one layer's weight-gradient time per micro-batch (the W pass the zero-bubble schedules move into the
// bubble); the bubble term follows the layout's schedule (schedule_bubble).
Stages stage_times(const Resolved& R, const Layout& l, double per_layer, double emb, double head, double mb_over,
                   double w_layer = 0);
// The fill/drain bubble per step under schedule s: `idle` is the summed per-micro-batch time (F + B + W) of every
// stage but the slowest, `idle_w` their weight-gradient (W) share, v the model chunks per rank.
double schedule_bubble(PipelineSchedule s, double idle, double idle_w, int v);
// Micro-batches whose activations a stage holds at its peak: the first stage (`first`) or the last.
double inflight_microbatches(const Layout& l, int microbatches, bool first);
// Point-to-point activations and gradients between stages, per step.
double pp_p2p(const Resolved& R, const ModelParams& p, const Layout& l, int microbatches);

// --- once per step (step_terms.cpp) -------------------------------------------------------------------------------
// Parameters held by the bottleneck stage, TP split applied.
double stage_params(const Resolved& R, const Layout& l);
// Data-parallel gradient reduction and parameter gather per step, exposed beyond the last/first micro-batch.
// Host time of nanotron's ZeRO-1 gradient hook per step (data-parallel flattens per bucket) beyond the host's slack
// behind one micro-batch's backward on the stage (stage_bwd_s over `layers` layers): what the GPU waits.
double zero1_hook_host_s(const Resolved& R, const ModelParams& p, const Layout& l, double stage_params_per_gpu,
                         double stage_bwd_s, int layers);
double dp_comm_exposed(const Resolved& R, const ModelParams& p, const Layout& l, const LayerCompute& c,
                       double recompute);
// The once-per-step traffic of a distributed optimizer (ZeRO-1, and ZeRO-2 with step-wise reduction) over n
// data-parallel ranks `stride` apart that shard within contiguous scopes of k of them (k = n: over all): gradient
// reduce-scatter within the scope plus the all-reduce of each 1/k shard across the n/k scopes (behind the
// backward), and the updated parameters' all-gather within the scope (behind the forward).
struct StepShardComm {
  double reduce = 0, gather = 0;  // seconds, before overlap
};
StepShardComm step_shard_comm(const Resolved& R, const ModelParams& p, double params, int n, int k, int stride);
// Adam step: memory-bound, ~34 bytes per local parameter.
double optimizer_s(const Resolved& R, const Layout& l);
// Model FLOPs and the hardware FLOPs (recompute included) of one step.
void step_flops(const Resolved& R, const Layout& l, double* model_flops, double* hw_flops);

// --- memory (memory.cpp) ------------------------------------------------------------------------------------------
double memory_gib(const Resolved& R, const Layout& l, double headroom_gib, MemoryBreakdown* out);
// Megatron-Core / NeMo optimizer states per parameter before sharding (docs/model.md §3): the bytes held for the
// whole run, and those that exist only inside the optimizer step, when the activations are gone (the fp32 copy of
// a 16-bit gradient shard the fp32 master weights are updated from).
struct OptimizerBytes {
  double persistent = 0, step_only = 0;
};
OptimizerBytes mcore_optimizer_bytes(const Resolved& R, const Layout& l);
// The optimizer term with its step-only bytes: they need memory only where they exceed what the activations and
// logits (freed before the step) leave behind.
inline double optimizer_peak(double persistent, double step_only, double dynamic) {
  return persistent + std::max(0.0, step_only - dynamic);
}
// CPU activation offload (offload.cpp): the transformer layers of a stage that keep their activations on the GPU
// (the offloaded ones leave one layer's staging buffer), the host-link time of one layer's activations one way, and
// what of one micro-batch's copies out (forward) and back (backward) the stage's compute does not hide.
double resident_layers(const Layout& l, int stage_layers);
double offload_copy_s(const Resolved& R, double layer_bytes);
double offload_exposed_s(const Resolved& R, double layer_bytes, int offloaded, int layers, double layer_fwd_s,
                         double layer_bwd_s);
// The host memory one GPU may pin for offloaded activations (GiB): the node's stated host memory, else its reference
// system's (data sheets), shared by the node's GPUs, less what the job's processes need.
double host_capacity_gib(const Resolved& R);

// --- mixture of experts, MLA, MTP: the generalised layer (moe_*.cpp; docs/model.md §9) -----------------------------
// Taken only when R.moe.on; a plain dense model never reaches these, so its numbers are the dense terms'.
// Parameters of one layer averaged over the layer mix (all experts), and those one GPU holds (experts over ep x etp).
double moe_layer_params_avg(const Resolved& R);
double moe_layer_params_per_gpu(const Resolved& R, const Layout& l);
// Tokens one GPU feeds into the MoE block per micro-batch (its sequence-parallel shard) and the expert rows it
// computes when routing is balanced (etp x tokens x top-k).
double moe_tokens_in(const Resolved& R, const Layout& l);
// The busiest EP rank's rows over the mean: learned routing (or 1 when force-balanced) times the statistical spread
// of the maximum over ep ranks, capped by the capacity factor when tokens are dropped.
double moe_imbalance_factor(const Resolved& R, const ModelParams& p, const Layout& l);
// Expert rows per fair share: the capacity factor when padded to capacity, else 1.
double expert_rows(const MoeDims& d);
// One layer averaged over the layer mix (dense leading layers, MoE layers): attention projections (MLA or
// head_dim-wide), the attention core, dense MLP or router + grouped expert GEMMs + shared experts, elementwise work
// (norms, permutation, activation) — at balanced routing. `imbalance` (if given) receives the extra forward+backward
// GEMM time of the busiest rank.
LayerCompute moe_layer_compute(const Resolved& R, const ModelParams& p, const Layout& l, double* imbalance = nullptr);
// One MoE layer (not mix-averaged) split as Megatron-Core's layer schedule splits it (model_chunk_schedule_plan.py):
// the computation before the dispatch (attention block, norms, router) and the MLP (routed and shared experts,
// permutation, activation); backward with the MLP's input- and weight-gradient halves apart.
struct MoePhases {
  double pre_f = 0, mlp_f = 0;
  double pre_b = 0, mlp_dgrad = 0, mlp_wgrad = 0;
  double sum() const { return pre_f + mlp_f + pre_b + mlp_dgrad + mlp_wgrad; }
};
MoePhases moe_layer_phases(const Resolved& R, const ModelParams& p, const Layout& l);
// Selective recompute of the generalised layer is Megatron-Core's MoE set (core attention, norms, MLA
// up-projections, activation functions): what it recomputes beyond the attention core (recompute_s).
// The generalised layer's selective recompute, module by module (the attention core, norms, activation functions,
// MLA up-projections, the dense MLP, the MoE block, the shared experts).
double moe_recompute_s(const Resolved& R, const ModelParams& p, const Layout& l, const LayerCompute& c);
// Activation bytes one generalised layer keeps per micro-batch (averaged over the layer mix).
double moe_layer_activation_bytes(const Resolved& R, const ModelParams& p, const Layout& l);
// Share of the dense per-layer TP collectives a layer of the mix still has: MoE layers keep the attention's two and
// the MLP's only for shared experts or expert TP.
double moe_tp_comm_share(const Resolved& R, const Layout& l);
// All-to-all of `bytes` per rank over k ranks `stride` apart (Coll::AllToAll): the NVLink share and the network
// share of the traffic, each at its achieved bandwidth (the island's NICs shared by its GPUs), the slower decides.
// `net_share` scales the bytes that cross the network (DeepEP / HybridEP send one copy per destination island and
// forward it over NVLink there: less than 1 for top-k > 1), `local_share` those that stay on the island (they send
// one copy per destination rank).
double alltoall_s(const Resolved& R, const ModelParams& p, double bytes, int k, int stride, double net_share = 1.0,
                  double local_share = 1.0);
// The probability that a token's top-k (k distinct experts of E, chosen uniformly) reaches a given one of `groups`
// equal groups of experts (a rank's, an island's): 1 - C(E - E/groups, k) / C(E, k).
double group_hit_probability(double experts, double k, double groups);
// The same for one island of an EP group of `ep` ranks, `per_island` of them on each island (consecutive experts),
// under group-limited routing (d.groups, d.group_topk): a token's experts come from its best group_topk groups.
double island_hit_probability(const MoeDims& d, int ep, int per_island);
// Dispatch + combine of one MoE layer and micro-batch, forward and backward, averaged over the layer mix.
struct MoeComm {
  double raw = 0;        // seconds on the wire, balanced routing
  double exposed = 0;    // after overlap with another micro-batch (dispatcher and stack permitting)
  double imbalance = 0;  // the busiest rank's extra all-to-all time (exposed share)
};
// The share of the overlapped computation a hidden dispatch/combine slows: the SMs the flex dispatcher's kernels
// hold (HybridEP 16, DeepEP 20) over the GPU's; NCCL's all-to-all keeps the fitted overlap_interference.
double a2a_interference(const Resolved& R, const ModelParams& p, const Layout& l);
// Whether dispatch/combine overlap another micro-batch in this layout (--overlap-moe-expert-parallel-comm).
bool moe_a2a_overlap_on(const MoeDims& d, const Layout& l);
MoeComm moe_comm_layer(const Resolved& R, const ModelParams& p, const Layout& l, const LayerCompute& c, double recompute);
// Per layer (mix-averaged) and micro-batch: the MoE block's host-bound overhead (small kernels, token-count sync),
// exposed only in the passes no paired micro-batch's layer is queued behind (all of them without the 1F1B overlap).
double moe_layer_overhead_s(const Resolved& R, const ModelParams& p, const Layout& l);
// Multi-token prediction on the last stage: one more MoE layer and the LM head again per MTP module.
double mtp_s(const Resolved& R, const ModelParams& p, const Layout& l, double layer_s);
// Once-per-step terms with the experts' own data-parallel group (edp = tp cp dp / (ep etp), ranks ep etp apart).
double moe_stage_params(const Resolved& R, const Layout& l, double* expert_part);
double moe_dp_comm_exposed(const Resolved& R, const ModelParams& p, const Layout& l, const LayerCompute& c,
                           double recompute);
double moe_optimizer_s(const Resolved& R, const Layout& l);
void moe_step_flops(const Resolved& R, const Layout& l, double* model_flops, double* hw_flops);
// Memory per GPU: expert weights over ep x etp, their optimizer states over edp, dispatched-token activations
// (capacity padding included), all-to-all buffers.
double moe_memory_gib(const Resolved& R, const ModelParams& p, const Layout& l, double headroom_gib,
                      MemoryBreakdown* out);

}  // namespace paratune::advisor::terms
