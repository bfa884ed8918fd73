// The performance model: compute, memory and communication terms (docs/model.md derives every equation).
// Exposed for tests, the calibration fit and the accuracy report; the plugin only needs advisor.h.
#pragma once

#include <string>
#include <vector>

#include "paratune/advisor/catalog.h"
#include "paratune/advisor/plan.h"
#include "paratune/advisor/resolved.h"
#include "paratune/advisor/scenario.h"

namespace paratune::advisor {

// The few physical parameters the model fits to published runs (calibration.cpp ships the values with their
// provenance). Everything else is first-principles arithmetic on the scenario.
struct ModelParams {
  // Achieved fraction of the dense tensor peak for large, well-shaped GEMMs, per GPU generation.
  double gemm_eff[9] = {0.70, 0.70, 0.60, 0.80, 0.70, 0.70, 0.70, 0.50, 0.55};  // indexed by GpuArch
  double gemm_t0_us = 8;             // fixed cost per GEMM kernel (launch, wave-quantisation tail), microseconds
  double attn_eff_rel = 0.65;        // fused (flash) attention throughput relative to the GEMM efficiency
  double elt_scale = 1.0;            // multiplier on the first-principles elementwise HBM traffic
  double hbm_eff = 0.80;             // achieved fraction of HBM bandwidth for streaming kernels
  double fp8_linear_gain = 1.50;     // FP8 speed-up of the linear layers (casts, amax bookkeeping included)
  double overlap_interference = 0.15;  // fraction of overlapped communication that still slows compute
  double tp_overlap = 0.6;           // fraction of TP communication hidden by comm/GEMM overlap when enabled
  double pp_overlap = 0.5;           // fraction of PP point-to-point hidden when overlapped (interleaved schedules)
  // Collectives: achieved bus bandwidth / line rate (nccl_busbw.csv) and per-step latencies.
  double nvlink_eff = 0.80;          // ring busbw on NVLink/NVSwitch
  double nvls_gain = 1.30;           // all-reduce with NVLink SHARP vs ring (480 vs 370 GB/s on H100)
  double pcie_eff = 0.60;            // intra-node across NVLink domains (through PCIe / CPU)
  double fabric_eff[6] = {0.95, 0.88, 0.80, 0.80, 0.17, 0.40};  // indexed by Fabric
  double alpha_nvl_us = 3;           // latency per ring step inside a node
  double alpha_net_us = 8;           // latency per step between nodes
  double launch_us = 12;             // fixed cost per collective call
  // Framework and schedule overheads.
  double step_overhead_s = 0.02;     // per optimizer step (data loader, logging, bookkeeping)
  double mb_overhead_us = 300;       // per micro-batch per pipeline stage (schedule, Python, launch gaps)
  // The software stack, indexed by Framework (Megatron, DeepSpeed, Fsdp, Torchtitan, Nemo). Compute efficiency is
  // relative to the fitted GEMM efficiency (cuBLAS GEMMs in every stack: 1.0 unless data says otherwise).
  // cpu_layer_us is the host time to issue one transformer layer's kernels and collectives for one micro-batch,
  // forward and backward (module hooks, Python dispatch and autograd: ~120 eager ops at ~20 us each; Megatron-Core's
  // and Transformer Engine's fused kernels issue ~4x fewer, at ~10 us). The GPU runs ahead of the host, so a layer takes
  // max(GPU time, host time): small layers (small models, TP-split GEMMs, micro-batch 1) become launch-bound.
  double stack_compute_eff[5] = {1.0, 1.0, 1.0, 1.0, 1.0};
  double cpu_layer_us[5] = {250, 2500, 2500, 2500, 250};
  // Host time per layer and micro-batch that the GPU cannot run ahead of (synchronising hooks, blocking
  // collectives issued from Python, allocator calls): paid on top of the layer's time. 0 until fitted.
  double layer_overhead_us[5] = {0, 0, 0, 0, 0};
  // The share of a layer's compute that hides DeepSpeed ZeRO-3's parameter gathers and gradient reduce-scatters:
  // its hooks fetch parameters module by module in prefetch buckets and wait on them (stage3_max_live_parameters,
  // per-parameter synchronisation), where FSDP and Megatron-FSDP prefetch a whole block a layer ahead (1.0). 0.5,
  // assumed: the only rows that would fit it (the ZeRO++ paper's figure labels) are context-only.
  double ds_zero3_overlap = 0.5;
  // Elementwise HBM traffic of eager PyTorch stacks (FSDP, torchtitan, DeepSpeed's HF models) relative to
  // Megatron-Core's fused kernels: unfused RMSNorm, rotary, SwiGLU and residual adds each read and write their
  // tensors (prior 2; torch.compile then applies compile_elt_scale).
  double eager_elt_factor = 2.0;
  // On Hopper and Blackwell the eager PyTorch stacks reach a smaller fraction of the GEMM efficiency the Megatron
  // family reaches (no fused/persistent kernels between the GEMMs, FlashAttention-2's wgmma-less kernels, launch
  // gaps that a 3x faster GPU exposes); on Ampere and older they match it (MosaicML's A100 rows). Prior 0.8
  // (assumed), fitted on the H100 rows of the PyTorch-native sweep.
  double eager_hopper_eff = 0.8;
  // Latency of one ring step of an all-gather / reduce-scatter inside a node (NCCL LL protocol over NVLink);
  // steps between nodes pay alpha_net_us (NCCL src/graph/tuning.cc: intra and inter steps of a ring).
  double alpha_ring_intra_us = 1.0;
  // Stack switches (TrainingSpec): priors, not fitted — no row of the calibration data states them apart.
  double fa3_gain = 1.5;             // FlashAttention-3 / cuDNN fused attention over FlashAttention-2 on Hopper and
                                     // Blackwell (Shah et al. 2024, FlashAttention-3: 1.5-2.0x in BF16 on H100)
  double fp8_recipe_gain[5] = {1.0, 1.0, 0.93, 0.85, 1.0};  // delayed, tensorwise, rowwise, blockwise, mxfp8:
                                     // finer scales cost extra quantisation kernels; MXFP8 is native on Blackwell
  double mxfp8_emulated_gain = 0.80; // MXFP8 on Hopper (no hardware block scales): emulated with extra casts
  double ultra_attn_gain = 2.0;      // fused attention on Blackwell Ultra (GpuSpec::fast_softmax) over Blackwell:
                                     // the data sheet's "2x attention-layer acceleration" (prior; fitted)
  double compile_elt_scale = 0.6;    // torch.compile fuses elementwise chains: HBM traffic of norms, residuals,
                                     // activations (FSDP, torchtitan); Megatron-Core/NeMo already fuse them
  // Mixture of experts (docs/model.md §9; moe_fit_spec() in bench/advisor fits them on the MoE rows only, so the
  // dense model is untouched). Priors from data/calibration/published/alltoall_bw.csv where a row measures the term.
  double grouped_gemm_eff = 0.85;    // grouped expert GEMMs against one GEMM of the same shape (prior: CUTLASS/TE
                                     // grouped GEMMs run ~85-90 % of a single large GEMM)
  double a2a_nvl_eff = 0.75;         // all-to-all over NVLink / fraction of the per-direction NVLink bandwidth
                                     // (DeepEP V1 intranode H800 153 of ~200 GB/s; DeepEP V2 B200 726 of 900)
  double a2a_net_eff = 0.85;         // all-to-all across NICs / fraction of the NIC line rate (DeepEP V1 internode
                                     // 43-58 GB/s, HybridEP H100 36-45 GB/s, of 50 GB/s per 400G NIC)
  double nccl_a2a_eff = 0.75;        // NCCL's all-to-all (alltoall dispatcher) over NVLink against the DeepEP-class
                                     // kernels at the same bytes (prior; a secondary note of Megatron-Core's Table 7
                                     // says ~0.5 with permutation included). Across the NICs both reach the NICs'
                                     // rate (nccl_alltoall.csv), so the network share does not pay it
  double a2a_latency_us = 30;        // fixed cost of one dispatch or combine (notify + launch; DeepEP normal kernels)
  double moe_route_imbalance = 1.10; // busiest EP rank's tokens / the mean with real (learned) routing; force-balanced
                                     // benchmark routing is 1 (plus the statistical spread, computed)
  double grouped_gemm_hopper = 0.8;  // Hopper's grouped expert GEMMs against Blackwell's (Transformer Engine runs
                                     // them as a multi-stream set of cuBLAS GEMMs there; Blackwell has fused grouped
                                     // kernels): prior 0.8, fitted on the H100 MoE rows
  double moe_layer_us = 200;         // per MoE layer and micro-batch, forward + backward: the router, permutation and
                                     // dispatcher's small kernels and the host synchronisation of the dropless
                                     // token counts, which the GPU cannot run ahead of (prior; fitted)
};

const ModelParams& shipped_params();
const char* shipped_params_provenance();

// AllToAll: every rank sends bytes/k to every other (MoE dispatch/combine); `bytes` is one rank's send buffer.
enum class Coll { AllReduce, ReduceScatter, AllGather, SendRecv, AllToAll };

// Parameter counts (no biases): per transformer layer, the embedding table, the whole model.
double params_per_layer(const ModelSpec& m);
double total_params(const ModelSpec& m);
// Parameters a token passes through (MoE: the top-k routed and the shared experts; = total_params for dense models).
// Multi-token-prediction modules are counted in neither (model cards quote the main model; DeepSeek-V3: 671B + 14B).
double active_params(const ModelSpec& m);
// Whether MoE dispatch/combine run overlapped with another micro-batch in this layout (Megatron-Core
// --overlap-moe-expert-parallel-comm: EP > 1, alltoall or flex, no full recompute, interleaving when PP > 1, at most
// one MTP layer; on unless training.moe_a2a_overlap = false). The model and the adapters ask the same question.
bool moe_a2a_overlap(const Scenario& s, const Layout& l, Framework f);
// Whether ZeRO-1/2's parameter all-gather runs behind the next forward in framework f (training.overlap_param_gather,
// else the framework's way: DeepSpeed gathers inside its optimizer step, the others overlap). The model and the
// adapters ask the same question.
bool overlap_param_gather(const TrainingSpec& t, Framework f);
// Transformer layers on each pipeline rank and the rank that holds the LM head, as the stack splits them
// (PipelineSplit: equal counts, or nanotron's cost-balanced greedy; docs/model.md §4). The model and the plan's
// note use the same split.
struct StageSplit {
  std::vector<int> layers;
  int head_rank = 0;
};
StageSplit pipeline_stages(const ModelSpec& m, PipelineSplit split, int pp);
// Model FLOPs per token (the MFU convention: 6 * (non-embedding params + logits GEMM) + 12 * l * h * s).
double model_flops_per_token(const ModelSpec& m);

// Activation bytes stored per transformer layer for one micro-batch of b sequences on one GPU (16-bit
// activations), after Korthikanti et al. 2022 Table 2 generalised to GQA / gated MLP / no dropout:
// tokens*h*(4 + 6 + 4g/a + 2 + (gated ? 6 : 4) f/h + 2*dropout) [+ 5 a s * tokens without flash attention],
// the replicated part (norms, QKV/MLP inputs, dropout masks) not divided by t unless sequence parallel.
// With fp8 (Transformer Engine / float8 linears) the inputs saved for the linear layers are kept in 1 byte.
// With selective recompute, `modules` names what is rebuilt (scenario.h recompute_module; 0 = the attention core):
// layernorm drops the norm outputs, mlp the MLP's fc1 and activation outputs, core_attn the s x s scores.
double activation_bytes_per_layer(const ModelSpec& m, int b, int tp, int cp, bool sp, Recompute r, bool flash,
                                  bool fp8 = false, unsigned modules = 0);

// The scenario resolved once (resolved.h); evaluate() then adds up the model's named terms (advisor/src/model/:
// compute, collectives, parallel communication, pipeline, once-per-step terms, memory), allocation-free (about a
// microsecond).
class Evaluator {
 public:
  Evaluator(const Scenario& s, Framework f, const ModelParams& p = shipped_params());
  Evaluator(Resolved r, const ModelParams& p);

  struct Result {
    double step_s = 0;
    Breakdown br;
    MemoryBreakdown mem;
    double mem_gib = 0;
    bool fits = false;
    int overflow_term = -1;  // index into MemoryBreakdown order (weights .. reserve) of the largest term
    double model_flops_step = 0, hw_flops_step = 0;
    int microbatches = 0;
    double layer_fwd_s = 0, layer_bwd_s = 0;  // one transformer layer, one micro-batch (TP/CP comm included;
                                              // backward includes recompute)
    double layer_s = 0;                       // what one layer costs its stage per micro-batch (everything above)
    double layer_w_s = 0;                     // its weight-gradient (W) pass: what a zero-bubble schedule moves
    double emb_s = 0, head_s = 0;             // embedding (first stage) and LM head + loss (+ MTP) (last stage),
                                              // one micro-batch, forward and backward
    double host_gib = 0;                      // CPU activation offload: activations held in host memory per GPU
    bool host_fits = true;                    // ... within the host memory a GPU may pin (host_capacity_gib)
  };

  // Memory only (cheap; used to prune before timing).
  double memory_gib(const Layout& l, MemoryBreakdown* out = nullptr) const;
  Result evaluate(const Layout& l) const;
  // The layout with its pipeline stages planned (first_stage_layers, last_stage_layers): the embedding on the first
  // rank and the LM head, loss and MTP modules on the last take their time's worth of layers off those ranks, so
  // that the slowest rank is as fast as whole layers allow (Megatron's --pipeline-model-parallel-layout expresses
  // it). Unchanged when pp < 2 or the stack splits by its own rule (pipeline_split = balanced).
  Layout with_planned_stages(Layout l) const;
  // The same from the layout's own evaluation (r = evaluate(l) with the framework's split).
  Layout with_planned_stages(Layout l, const Result& r) const;

  // Time of one collective of `bytes` (the full, unsharded buffer) on a group of `k` GPUs whose ranks are `stride`
  // apart in the global rank order (TP innermost, then CP, DP, PP); concurrent groups of the same kind share the
  // node's (or multi-node NVLink domain's) NICs.
  double collective_s(Coll c, double bytes, int k, int stride) const;
  // Bus bandwidth (GB/s) such a group achieves for large messages.
  double group_busbw_gbps(int k, int stride, bool allreduce) const;

  // GEMM time for an (M x K) * (K x N) product on one GPU (linear layers; FP8 gain applied when the run is FP8):
  // max(2MNK / (peak * eff * shape), bytes / HBM) + t0, shape = 1 / (1 + 96/N + 96/K + 64/M) (tile quantisation:
  // small matrices after the TP split run below peak).
  double gemm_s(double M, double N, double K, bool linear = true) const;
  static double gemm_shape_factor(double M, double N, double K);
  // The grouped expert kernel's shape factor, 1 / (1 + 168/M + 950/N + 825/K) scaled to gemm_shape_factor at an
  // 8192-cube GEMM (DeepGEMM's tables in data/calibration/grouped_gemm.csv; docs/model.md §9).
  static double grouped_shape_factor(double M, double N, double K);
  // The share of the overlapped computation a hidden MoE dispatch/combine slows (the SMs its kernels hold).
  double a2a_interference(const Layout& l) const;

  double capacity_gib() const { return r_.capacity_gib; }
  // CPU activation offload: one offloaded layer's saved activations (one micro-batch, bytes), what the layout keeps
  // in host memory per GPU (GiB), and the host memory one GPU may pin for it (GiB; 0 = unknown: nothing may be
  // offloaded).
  double offload_layer_bytes(const Layout& l) const;
  double host_offload_gib(const Layout& l) const;
  double host_capacity_gib() const { return r_.host_capacity_gib; }
  const GpuSpec& gpu() const { return r_.gpu; }
  Framework framework() const { return r_.stack.framework; }
  const Scenario& scenario() const { return r_.s; }
  const Resolved& resolved() const { return r_; }
  const ModelParams& params() const { return p_; }
  double headroom_gib = 0;  // extra reserve per GPU (policy)

 private:
  ModelParams p_;
  Resolved r_;
};

}  // namespace paratune::advisor
