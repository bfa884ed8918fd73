// Memory and communication terms against hand-computed values (formulas cited), and the ranking findings.
#include <gtest/gtest.h>

#include <cmath>

#include "paratune/advisor/advisor.h"
#include "paratune/advisor/catalog.h"
#include "paratune/advisor/model.h"

using namespace paratune::advisor;

namespace {
Scenario base(const char* model, const char* gpu, int nodes, int nics, double gbps, Fabric fab = Fabric::InfiniBand) {
  Scenario s;
  s.model = model_preset(model);
  s.training.global_batch = 1024;
  s.cluster.gpu = gpu;
  s.cluster.nodes = nodes;
  s.cluster.gpus_per_node = 8;
  s.cluster.nvlink_domain = 8;
  s.cluster.nic_count = nics;
  s.cluster.nic_gbps = gbps;
  s.cluster.fabric = fab;
  return s;
}
}  // namespace

// Korthikanti et al. 2022, Table 2: per-layer activation bytes for 16-bit activations (GPT-3 175B: s=2048,
// h=12288, a=96, with dropout).
TEST(Memory, KorthikantiTable2) {
  const ModelSpec m = model_preset("gpt3-175b");
  const double s = 2048, h = 12288, a = 96, t = 8, b = 1;
  // TP + sequence parallel + selective recompute: s*b*h*34/t
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, 1, 8, 1, true, Recompute::Selective, false), s * b * h * 34 / t);
  // TP + SP, no recompute, no flash attention: s*b*h*(34/t + 5*a*s/(h*t))
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, 1, 8, 1, true, Recompute::None, false),
                   s * b * h * (34 / t + 5 * a * s / (h * t)));
  // TP without SP: s*b*h*(10 + 24/t + 5*a*s/(h*t))
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, 1, 8, 1, false, Recompute::None, false),
                   s * b * h * (10 + 24 / t + 5 * a * s / (h * t)));
  // No parallelism: s*b*h*(34 + 5*a*s/h)
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, 1, 1, 1, false, Recompute::None, false), s * b * h * (34 + 5 * a * s / h));
  // Full recompute keeps the layer input only: 2*s*b*h (/t with SP)
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, 1, 8, 1, true, Recompute::Full, false), 2 * s * b * h / t);
  // FlashAttention never stores the 5as/h term.
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, 1, 8, 1, true, Recompute::None, true), s * b * h * 34 / t);
  // Context parallelism splits the sequence.
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, 1, 8, 2, true, Recompute::None, true), s / 2 * b * h * 34 / t);
}

// Gated MLP / GQA / no dropout (Llama 3 8B: h=4096, a=32, g=8, f=14336), derived in docs/model.md:
// tokens*h*(4 + 2 + 2 + 2 + 4g/a + 2 + 6f/h) with no parallelism.
TEST(Memory, GatedGqaActivations) {
  const ModelSpec m = model_preset("llama3-8b");
  const double s = 8192, h = 4096;
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, 1, 1, 1, false, Recompute::None, true),
                   s * h * (4 + 2 + 2 + 2 + 4.0 * 8 / 32 + 2 + 6 * 14336.0 / 4096));
}

// Megatron-LM distributed optimizer doc: bf16 params with fp32 grads 6 + 12/d bytes per parameter (plain DDP 18),
// 16-bit params with 16-bit grads 4 + 16/d (DDP 20; Megatron-Core's default grad_reduce_in_fp32 = False), of which
// the optimizer's fp32 copy of its gradient shard (4/d) lives only inside the optimizer step: with the activations
// of one 8192-token micro-batch (tens of GiB) freed by then, 4 + 12/d (DDP 16) are held (docs/model.md §3).
// ZeRO-3 via FSDP: 16/d (Rajbhandari et al. 2020 §5 with fp32 gradients).
TEST(Memory, ModelStatesPerZeroStage) {
  Scenario s = base("llama3-8b", "h100-sxm5-80gb", 4, 8, 400);
  const double psi = total_params(s.model);  // (1e-4 below: the final norm's h weights sit on no stage's count)
  constexpr double GiB = 1024.0 * 1024 * 1024;
  Layout l;
  l.dp = 32; l.micro_batch = 1; l.zero_stage = 1;
  MemoryBreakdown mb;
  Evaluator(s, Framework::Megatron).memory_gib(l, &mb);
  ASSERT_GT((mb.activations + mb.logits) * GiB, psi * 4.0 / 32);
  EXPECT_NEAR((mb.weights + mb.gradients + mb.optimizer) * GiB, psi * (4 + 12.0 / 32), psi * 1e-4);
  l.zero_stage = 0;
  Evaluator(s, Framework::Megatron).memory_gib(l, &mb);
  ASSERT_GT((mb.activations + mb.logits) * GiB, psi * 4.0);
  EXPECT_NEAR((mb.weights + mb.gradients + mb.optimizer) * GiB, psi * 16, psi * 1e-4);
  s.training.grad_reduce_fp32 = true;
  Evaluator(s, Framework::Megatron).memory_gib(l, &mb);
  EXPECT_NEAR((mb.weights + mb.gradients + mb.optimizer) * GiB, psi * 18, psi * 1e-4);
  l.zero_stage = 1;
  Evaluator(s, Framework::Megatron).memory_gib(l, &mb);
  EXPECT_NEAR((mb.weights + mb.gradients + mb.optimizer) * GiB, psi * (6 + 12.0 / 32), psi * 1e-4);
  l.zero_stage = 3;
  Evaluator(s, Framework::Fsdp).memory_gib(l, &mb);
  EXPECT_NEAR((mb.weights + mb.gradients + mb.optimizer) * GiB, psi * 16 / 32, psi * 1e-4);
  // ZeRO-1 in a PyTorch-native stack, as nanotron builds it (ZeroDistributedOptimizer over FP32GradientAccumulator,
  // nanotron helpers.py): bf16 params, the full fp32 gradient accumulator, fp32 master + Adam m, v sharded: 6 + 12/d.
  l.zero_stage = 1;
  Evaluator(s, Framework::Torchtitan).memory_gib(l, &mb);
  EXPECT_NEAR((mb.weights + mb.gradients + mb.optimizer) * GiB, psi * (6 + 12.0 / 32), psi * 1e-4);
  l.zero_stage = 0;  // DDP (torchtitan's replicate): fp32 params, grads, Adam m, v
  Evaluator(s, Framework::Torchtitan).memory_gib(l, &mb);
  EXPECT_NEAR((mb.weights + mb.gradients + mb.optimizer) * GiB, psi * 16, psi * 1e-4);
}

// 1F1B keeps p micro-batches in flight on the first stage (Narayanan et al. 2021 §2.2); interleaving multiplies by
// 1 + (p-1)/(p v) (Korthikanti et al. §4).
TEST(Memory, PipelineInFlight) {
  Scenario s = base("gpt3-175b", "a100-sxm4-80gb", 8, 8, 200);
  s.training.global_batch = 512;
  s.training.flash_attention = false;
  Layout l;
  l.tp = 8; l.pp = 8; l.dp = 1; l.micro_batch = 1; l.recompute = Recompute::Selective; l.sequence_parallel = true;
  const ModelSpec& m = s.model;
  const double per_layer = activation_bytes_per_layer(m, 1, 8, 1, true, Recompute::Selective, false);
  constexpr double GiB = 1024.0 * 1024 * 1024;
  MemoryBreakdown a, b;
  Evaluator(s, Framework::Megatron).memory_gib(l, &a);
  // 12 layers per stage x 8 in flight (+ the embedding output of each in-flight micro-batch, 2*s*h/t bytes)
  const double emb = 2.0 * 2048 * 12288 / 8;
  EXPECT_NEAR(a.activations * GiB, 12 * per_layer * 8 + emb * 8, 1);
  l.virtual_stages = 3;
  Evaluator(s, Framework::Megatron).memory_gib(l, &b);
  const double f = 1 + 7.0 / (8 * 3);
  EXPECT_NEAR(b.activations * GiB, 12 * per_layer * 8 * f + emb * 8 * f, 1);
}

// nccl-tests PERFORMANCE.md: all-reduce time = 2(k-1)/k * S / busbw (+ latency); inside a DGX H100 the ring busbw
// is 0.80 x 450 GB/s (nccl-tests #212: ~370 GB/s).
TEST(Comm, AllReduceInsideNode) {
  Scenario s = base("llama3-8b", "h100-sxm5-80gb", 1, 0, 0);
  Evaluator ev(s, Framework::Megatron);
  const double S = 1 << 30;
  const double busbw = 450 * 0.80 * 1e9;
  const double latency = 12e-6 + 8 * 3e-6;  // launch + min(2(k-1), 2 log2 k + 2) steps x 3 us
  EXPECT_NEAR(ev.collective_s(Coll::AllReduce, S, 8, 1), latency + 2.0 * 7 / 8 * S / busbw, 1e-9);
  EXPECT_NEAR(ev.group_busbw_gbps(8, 1, true), 360, 1e-9);
}

// Between nodes the 8 data-parallel groups of a node share its NICs: a group with one GPU per node gets one NIC's
// worth (nccl #412: ~24 GB/s per HDR 200G NIC), a group with the whole node gets the aggregate (nccl #812: 192).
TEST(Comm, HierarchyBetweenNodes) {
  Scenario s = base("llama3-8b", "a100-sxm4-80gb", 16, 8, 200);
  Evaluator ev(s, Framework::Megatron);
  EXPECT_NEAR(ev.group_busbw_gbps(16, 8, true), 8 * 25 * 0.95 / 8, 1e-9);   // stride 8: one GPU per node
  EXPECT_NEAR(ev.group_busbw_gbps(128, 1, true), 8 * 25 * 0.95, 1e-9);     // whole nodes in the ring
  const double S = 1e9;
  const double t = ev.collective_s(Coll::AllReduce, S, 16, 8);
  EXPECT_NEAR(t, 12e-6 + 10 * 8e-6 + 2.0 * 15 / 16 * S / (23.75e9), 1e-9);
  // Reduce-scatter + all-gather = the all-reduce's volume (ZeRO paper §7).
  const double rs = ev.collective_s(Coll::ReduceScatter, S, 16, 8), ag = ev.collective_s(Coll::AllGather, S, 16, 8);
  EXPECT_NEAR(rs + ag, t, 0.01 * t);
}

// Pipeline bubble: (p-1)/v stage-times for 1F1B / interleaved (Narayanan et al. 2021 §2.2).
TEST(Schedule, BubbleShrinksWithInterleaving) {
  Scenario s = base("gpt3-175b", "a100-sxm4-80gb", 8, 8, 200);
  s.training.global_batch = 64;
  Layout l;
  l.tp = 8; l.pp = 8; l.dp = 1; l.micro_batch = 1; l.recompute = Recompute::Selective; l.sequence_parallel = true;
  Evaluator ev(s, Framework::Megatron);
  const auto r1 = ev.evaluate(l);
  l.virtual_stages = 3;
  const auto r3 = ev.evaluate(l);
  // bubble / (time of the m micro-batches) = (p-1)/(v m) for equal stages, up to the first/last stage extras
  EXPECT_NEAR(r1.br.pp_bubble / (r1.br.compute + r1.br.recompute + r1.br.tp_comm), 7.0 / 64, 0.02);
  EXPECT_NEAR(r3.br.pp_bubble / r1.br.pp_bubble, 1.0 / 3, 0.02);
}

// FP8 gains only on the linear layers: a realistic end-to-end gain well below 2x (anchors §8.1).
TEST(Compute, Fp8GainIsRealistic) {
  Scenario s = base("llama3-70b", "h100-sxm5-80gb", 8, 8, 400);
  s.parallel.tp = 4; s.parallel.pp = 4;
  const double bf16 = predict(s).step_time_s;
  s.training.precision = Precision::Fp8;
  const double fp8 = predict(s).step_time_s;
  EXPECT_GT(bf16 / fp8, 1.05);
  EXPECT_LT(bf16 / fp8, 1.45);
}

// Finding 1 (Narayanan et al. 2021 Table 2): ZeRO-3 without model parallelism loses to PTD-P for GPT-3 175B at
// scale; and it loses more when the GPU count doubles at fixed batch.
TEST(Findings, Zero3LosesAtScale) {
  for (int nodes : {48, 96}) {
    Scenario s = base("gpt3-175b", "a100-sxm4-80gb", nodes, 8, 200);
    s.training.global_batch = 1536;
    s.training.framework = Framework::DeepSpeed;
    SearchLimits lim;
    lim.frameworks = {Framework::DeepSpeed};
    Scenario z3 = s;
    z3.parallel.tp = 1; z3.parallel.pp = 1; z3.parallel.zero_stage = 3;
    const Plan pz = advise(z3, lim);
    Scenario ptd = s;
    ptd.training.framework = Framework::Megatron;
    const Plan pm = advise(ptd);
    EXPECT_GT(pm.prediction.model_tflops_per_gpu, 1.15 * pz.prediction.model_tflops_per_gpu) << nodes << " nodes";
  }
}

// Finding 3: the same model needs a different layout on a high-bandwidth DGX (8 x 400G) and on a low-bandwidth
// system (4 GPUs and 2 x 100G Omni-Path per node).
TEST(Findings, DifferentLayoutsOnDifferentFabrics) {
  Scenario hi = base("llama2-13b", "a100-sxm4-80gb", 16, 8, 400);
  hi.training.framework = Framework::Megatron;
  Scenario lo = hi;
  lo.cluster.gpus_per_node = 4;
  lo.cluster.nvlink_domain = 4;
  lo.cluster.nodes = 32;
  lo.cluster.nic_count = 2;
  lo.cluster.nic_gbps = 100;
  lo.cluster.fabric = Fabric::OmniPath;
  // Megatron's search (all frameworks would end at plain DeepSpeed ZeRO-2 on both, now that plain DeepSpeed is
  // not offered the TP it cannot run: framework_versions.h).
  SearchLimits lim;
  const Plan a = advise(hi, lim), b = advise(lo, lim);
  const bool same = a.framework == b.framework && a.layout.tp == b.layout.tp && a.layout.pp == b.layout.pp &&
                    a.layout.zero_stage == b.layout.zero_stage && a.layout.cp == b.layout.cp;
  EXPECT_FALSE(same) << to_string(a.framework) << " tp" << a.layout.tp << " pp" << a.layout.pp << " z" << a.layout.zero_stage
                     << " cp" << a.layout.cp << " vs " << to_string(b.framework) << " tp" << b.layout.tp << " pp"
                     << b.layout.pp << " z" << b.layout.zero_stage << " cp" << b.layout.cp;
  // On the slow fabric the exposed data-parallel traffic of the winner is still a larger share of the step.
  EXPECT_GT(b.prediction.step_time_s, a.prediction.step_time_s);
}

// Finding 2: batch size interacts with the bubble: at fixed layout a larger global batch shrinks the bubble share.
TEST(Findings, BatchSizeShrinksBubble) {
  Scenario s = base("gpt3-175b", "a100-sxm4-80gb", 8, 8, 200);
  s.parallel.tp = 8; s.parallel.pp = 8; s.parallel.dp = 1;
  s.training.global_batch = 16;
  const Prediction small = predict(s);
  s.training.global_batch = 256;
  const Prediction large = predict(s);
  EXPECT_GT(small.breakdown.pp_bubble / small.step_time_s, 3 * large.breakdown.pp_bubble / large.step_time_s);
  EXPECT_GT(large.mfu, small.mfu);
}

// Search: deterministic, constraints honoured, policy caps honoured.
TEST(Search, DeterministicAndCapped) {
  Scenario s = base("llama3-70b", "h100-sxm5-80gb", 16, 8, 400);
  const Plan a = advise(s), b = advise(s);
  EXPECT_EQ(a.layout.tp, b.layout.tp);
  EXPECT_EQ(a.layout.pp, b.layout.pp);
  EXPECT_EQ(a.layout.micro_batch, b.layout.micro_batch);
  EXPECT_EQ(a.prediction.step_time_s, b.prediction.step_time_s);
  SearchLimits lim;
  lim.max_tp = 2;
  lim.max_pp = 4;
  lim.recompute_modes = {Recompute::Full};
  const Plan c = advise(s, lim);
  EXPECT_LE(c.layout.tp, 2);
  EXPECT_LE(c.layout.pp, 4);
  EXPECT_EQ(c.layout.recompute, Recompute::Full);
  s.parallel.cp = 2;
  EXPECT_EQ(advise(s).layout.cp, 2);
}

// All-gather and reduce-scatter are rings in NCCL (src/graph/tuning.cc): k-1 steps, one per node boundary on the
// network, the rest on NVLink. At 1,536 GPUs (192 nodes of 8) a small gather is latency-bound: 191 network steps
// of alpha_net plus 1,344 NVLink steps of alpha_ring_intra, where the old min(ring, tree) count gave 12 steps.
TEST(Comm, AllGatherIsARingWhoseLatencyGrowsWithTheGroup) {
  Scenario s = base("llama3-8b", "a100-sxm4-80gb", 192, 8, 200);
  const ModelParams p = shipped_params();
  Evaluator ev(s, Framework::DeepSpeed, p);
  const double tiny = 1024;  // bytes: the bandwidth term is negligible
  const double expected = p.launch_us * 1e-6 + 191 * p.alpha_net_us * 1e-6 + 1344 * p.alpha_ring_intra_us * 1e-6;
  EXPECT_NEAR(ev.collective_s(Coll::AllGather, tiny, 1536, 1), expected, 1e-6);
  EXPECT_GT(ev.collective_s(Coll::AllGather, tiny, 1536, 1), 2e-3);  // milliseconds per layer gather
  // One rank per node (stride 8): every step crosses the network.
  EXPECT_NEAR(ev.collective_s(Coll::ReduceScatter, tiny, 192, 8),
              p.launch_us * 1e-6 + 191 * p.alpha_net_us * 1e-6, 1e-6);
}

// FlashAttention does not exist on Volta: a V100 scenario that asks for it gets the unfused kernel's time and
// memory, exactly as one that says flash_attention = false (the demo's V100 plan predicted 55 % MFU with it).
TEST(Compute, NoFlashAttentionOnVolta) {
  EXPECT_FALSE(has_flash_attention(GpuArch::Volta));
  EXPECT_TRUE(has_flash_attention(GpuArch::Ampere));
  Scenario asks = base("gpt3-1.3b", "v100-sxm2-32gb", 1, 0, 0);
  asks.training.precision = Precision::Fp16;
  asks.training.flash_attention = true;
  Scenario unfused = asks;
  unfused.training.flash_attention = false;
  Layout l;
  l.dp = 8;
  l.micro_batch = 1;
  const auto a = Evaluator(asks, Framework::Megatron).evaluate(l), u = Evaluator(unfused, Framework::Megatron).evaluate(l);
  EXPECT_DOUBLE_EQ(a.step_s, u.step_s);
  EXPECT_DOUBLE_EQ(a.mem_gib, u.mem_gib);
  // Control: on an A100 the flag matters.
  Scenario a100 = asks;
  a100.cluster.gpu = "a100-sxm4-80gb";
  Scenario a100_unfused = a100;
  a100_unfused.training.flash_attention = false;
  EXPECT_LT(Evaluator(a100, Framework::Megatron).evaluate(l).step_s,
            Evaluator(a100_unfused, Framework::Megatron).evaluate(l).step_s);
}
