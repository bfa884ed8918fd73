// The memory features recipes use (docs/model.md §3): the precision-aware optimizer's state dtypes, selective
// recompute by module, CPU activation offload. Expected values are byte counts taken from Megatron-Core's source at
// the pinned versions (distrib_optimizer.py, optimizer_config.py) and the data sheets, worked by hand below.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "paratune/advisor/advisor.h"
#include "paratune/advisor/framework_args.h"
#include "paratune/advisor/model.h"
#include "paratune/advisor/scenario_toml.h"

using namespace paratune::advisor;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

Scenario on_gpus(const char* preset, const char* gpu, int nodes, int per_node, int global_batch) {
  Scenario s;
  s.model = model_preset(preset);
  s.training.global_batch = global_batch;
  s.training.framework = Framework::Megatron;
  s.cluster.gpu = gpu;
  s.cluster.nodes = nodes;
  s.cluster.gpus_per_node = per_node;
  s.cluster.nvlink_domain = per_node;
  s.cluster.nic_count = per_node;
  s.cluster.nic_gbps = 400;
  return s;
}

Layout dp_only(const Scenario& s, int mb, Recompute r) {
  Layout l;
  l.dp = s.total_gpus();
  l.micro_batch = mb;
  l.zero_stage = 1;
  l.recompute = r;
  return l;
}

// The search tests below leave only data parallelism (and the memory features) to the search.
void no_model_parallelism(Scenario& s) {
  s.parallel.tp = 1;
  s.parallel.pp = 1;
  s.parallel.cp = 1;
}

MemoryBreakdown memory(const Scenario& s, const Layout& l) {
  MemoryBreakdown mb;
  Evaluator(s, s.training.framework).memory_gib(l, &mb);
  return mb;
}

std::string args_text(const Scenario& s, const Layout& l) {
  Plan p;
  p.framework = s.training.framework;
  p.layout = l;
  return framework_args(s, p, Launch{"node-0", "29500", "1"}).files.front().content;
}

}  // namespace

// Bytes per parameter held by one rank's optimizer shard (d = 8 data-parallel ranks, ZeRO-1), per Megatron-Core:
// the plain optimizer keeps fp32 masters + Adam m, v (4 + 4 + 4 = 12); with --use-precision-aware-optimizer and bf16
// moments, Transformer Engine's FusedAdam keeps the masters as the 16 bits the bf16 parameter lacks
// (store_param_remainders: an int16 tensor) and bf16 m, v: 2 + 2 + 2 = 6. Fp8 moments are uint8: 2 + 1 + 1 = 4.
// The weights term is the bf16 parameters, 2 bytes, so optimizer / weights = (bytes / 8) / 2.
TEST(MemoryFeatures, PrecisionAwareOptimizerBytesFromMegatronSource) {
  Scenario s = on_gpus("llama3-8b", "h100-sxm5-80gb", 1, 8, 64);
  s.training.grad_reduce_fp32 = true;  // fp32 gradients: no step-only copy, so the optimizer term is its states
  Layout l = dp_only(s, 1, Recompute::Full);
  const MemoryBreakdown plain = memory(s, l);
  EXPECT_NEAR(plain.optimizer / plain.weights, (12.0 / 8) / 2, 1e-9);
  l.optimizer_moments = StateDtype::Bf16;
  const MemoryBreakdown bf16 = memory(s, l);
  EXPECT_NEAR(bf16.optimizer / bf16.weights, (6.0 / 8) / 2, 1e-9);
  EXPECT_DOUBLE_EQ(bf16.weights, plain.weights);  // parameters and gradients unchanged
  EXPECT_DOUBLE_EQ(bf16.gradients, plain.gradients);
  l.optimizer_moments = StateDtype::Fp8;
  EXPECT_NEAR(memory(s, l).optimizer / plain.weights, (4.0 / 8) / 2, 1e-9);
}

// NeMo 1.0's Apex DistributedFusedAdam with optim.dtype bf16 on a bf16 model keeps no master copy (NeMo's
// megatron_base_model.py: store_params = False when the optimizer dtype equals the model's) and bf16 m, v: 2 + 2 = 4
// bytes a parameter over the 8-rank shard, reading the bf16 gradient buffer itself (no fp32 copy, even where the
// copy would show). No plan may hold it: Megatron-Core's --main-params-dtype takes fp32 or fp16 only.
TEST(MemoryFeatures, ApexBf16OptimizerKeepsOnlyItsMoments) {
  Scenario s = on_gpus("llama3-8b", "h100-sxm5-80gb", 1, 8, 64);
  s.model.seq_len = 8;  // almost no activations: the plain optimizer's step-only gradient copy shows
  Layout l = dp_only(s, 1, Recompute::None);
  const MemoryBreakdown plain = memory(s, l);
  const double psi = plain.weights / 2;  // bf16 parameters: 2 bytes each
  ASSERT_GT(plain.optimizer, 12 * psi / 8 + 1e-6) << "control: the plain optimizer's copy is visible here";
  l.optimizer_moments = StateDtype::Bf16;
  l.main_params = StateDtype::Bf16;
  const MemoryBreakdown apex = memory(s, l);
  EXPECT_NEAR(apex.optimizer, 4 * psi / 8, 1e-9);
  EXPECT_DOUBLE_EQ(apex.weights, plain.weights);
  EXPECT_DOUBLE_EQ(apex.gradients, plain.gradients);
  for (Framework f : {Framework::Megatron, Framework::Nemo})
    EXPECT_NE(layout_problem(s, l, f).find("main_params must be fp32 or fp16"), std::string::npos) << to_string(f);
  l.main_params = StateDtype::Fp32;  // control: Megatron-Core's own bf16 moments are a plan
  EXPECT_EQ(layout_problem(s, l, Framework::Megatron), "");
}

// FP8 with a scaling recipe other than delayed keeps Megatron's own fp32 masters
// (use_precision_aware_optimizer_no_fp8_or_ds_fp8 is false): 16 -> 12 bytes a parameter in all with bf16 gradients,
// 2 (bf16 param) + 2 (bf16 grad) + 4 (fp32 master) + 2 + 2 (bf16 m, v) against 2 + 2 + 4 + 4 + 4, plus the fp32 copy
// of the gradient shard the step makes (4, only inside the optimizer step). With delayed scaling TE's FusedAdam
// holds the masters again (2 + 2 + 2).
TEST(MemoryFeatures, Fp8RecipeDecidesWhoHoldsTheMasterWeights) {
  Scenario s = on_gpus("llama3-8b", "h100-sxm5-80gb", 1, 8, 64);
  s.training.precision = Precision::Fp8;
  s.training.fp8_recipe = Fp8Recipe::Tensorwise;
  s.training.grad_reduce_fp32 = true;
  Layout l = dp_only(s, 1, Recompute::Full);
  l.dp = 1;  // unsharded: the whole 12 or 16 bytes on one rank
  s.cluster.gpus_per_node = s.cluster.nvlink_domain = s.cluster.nic_count = 1;
  s.training.global_batch = 8;
  const MemoryBreakdown plain = memory(s, l);
  const double psi = plain.gradients / 4;  // fp32 gradients: 4 bytes a parameter (GiB per byte)
  EXPECT_NEAR(plain.optimizer, 12 * psi, 1e-9);
  l.optimizer_moments = StateDtype::Bf16;
  EXPECT_NEAR(memory(s, l).optimizer, 8 * psi, 1e-9);  // 4 (fp32 master) + 2 + 2
  // bf16 gradients: 2 (param) + 2 (grad) + 4 + 2 + 2 = 12 held against 2 + 2 + 4 + 4 + 4 = 16, and the step's fp32
  // gradient copy (4) where it exceeds the freed activations and logits.
  s.training.grad_reduce_fp32 = false;
  const MemoryBreakdown b16 = memory(s, l);
  const double copy = std::max(0.0, 4 * psi - (b16.activations + b16.logits));
  EXPECT_NEAR(b16.gradients, 2 * psi, 1e-9);
  EXPECT_NEAR(b16.optimizer, 8 * psi + copy, 1e-9);
  l.optimizer_moments = StateDtype::Fp32;
  EXPECT_NEAR(memory(s, l).optimizer, 12 * psi + copy, 1e-9);
  l.optimizer_moments = StateDtype::Bf16;
  s.training.fp8_recipe = Fp8Recipe::Delayed;
  s.training.grad_reduce_fp32 = true;
  EXPECT_NEAR(memory(s, l).optimizer, 6 * psi, 1e-9);  // TE's masters: 2 (remainder) + 2 + 2
}

// The fp32 copy of a 16-bit gradient shard exists only inside the optimizer step (shard_model_grad.float() in
// _copy_model_grads_to_main_grads; freed by the next zero_grad, before the next forward): it needs memory only
// where it exceeds the activations and logits the step has already freed.
TEST(MemoryFeatures, StepOnlyGradientCopyNeedsNoMemoryBesideTheActivations) {
  Scenario s = on_gpus("llama3-8b", "h100-sxm5-80gb", 1, 8, 64);
  Layout l = dp_only(s, 1, Recompute::None);
  const MemoryBreakdown m = memory(s, l);
  ASSERT_GT(m.activations + m.logits, m.weights / 2 * 4 / 8) << "the copy (4 bytes / 8 ranks) is smaller here";
  EXPECT_NEAR(m.optimizer / m.weights, (12.0 / 8) / 2, 1e-9);
  // Positive control: one sequence of 8 tokens leaves almost no activations; the copy then shows in the term.
  Scenario tiny = s;
  tiny.model.seq_len = 8;
  const MemoryBreakdown t = memory(tiny, l);
  const double psi = t.weights / 2;
  const double expected = 12 * psi / 8 + (4 * psi / 8 - (t.activations + t.logits));
  EXPECT_NEAR(t.optimizer, expected, 1e-9);
  EXPECT_GT(t.optimizer, 12 * psi / 8);
}

// Selective recompute by module, dense layer (Korthikanti et al. Table 2 as counts.cpp writes it): "layernorm"
// rebuilds the two norm outputs (QKV and MLP inputs: 2 x 2 bytes per token and hidden unit in bf16), "mlp" the
// MLP's fc1 outputs and activation output ((4 + 2) f per token for a gated MLP in bf16).
TEST(MemoryFeatures, RecomputeModulesDropTheirActivations) {
  const ModelSpec m = model_preset("llama3-8b");
  const double tok = 8192.0, h = m.hidden, f = m.ffn_hidden;
  using namespace recompute_module;
  const double attn = activation_bytes_per_layer(m, 1, 1, 1, false, Recompute::Selective, true, false, kCoreAttn);
  EXPECT_DOUBLE_EQ(attn, activation_bytes_per_layer(m, 1, 1, 1, false, Recompute::Selective, true));
  const double ln = activation_bytes_per_layer(m, 1, 1, 1, false, Recompute::Selective, true, false,
                                               kCoreAttn | kLayernorm);
  EXPECT_DOUBLE_EQ(attn - ln, tok * h * 2 * 2);
  const double mlp = activation_bytes_per_layer(m, 1, 1, 1, false, Recompute::Selective, true, false,
                                                kCoreAttn | kMlp);
  EXPECT_DOUBLE_EQ(attn - mlp, tok * (4 + 2) * f);
}

// What they cost: each module's forward again in the backward pass; more modules, less memory, more time.
TEST(MemoryFeatures, RecomputeModulesChargeTheirForwardAgain) {
  Scenario s = on_gpus("llama3-8b", "h100-sxm5-80gb", 1, 8, 64);
  const Evaluator ev(s, Framework::Megatron);
  Layout l = dp_only(s, 1, Recompute::Selective);
  const auto base = ev.evaluate(l);
  l.recompute_modules = recompute_module::kCoreAttn | recompute_module::kLayernorm | recompute_module::kMlp;
  const auto more = ev.evaluate(l);
  EXPECT_GT(more.br.recompute, base.br.recompute);
  EXPECT_LT(more.mem.activations, base.mem.activations);
  EXPECT_GT(more.step_s, base.step_s);
  // The MoE block recomputed runs its dispatch and combine again.
  Scenario q = on_gpus("qwen3-30b-a3b", "h100-sxm5-80gb", 2, 8, 256);
  const Evaluator qe(q, Framework::Megatron);
  Layout x = dp_only(q, 1, Recompute::Selective);
  x.ep = 16;
  const auto qbase = qe.evaluate(x);
  x.recompute_modules = recompute_module_set(q, x, true) | recompute_module::kMoe;
  const auto qmoe = qe.evaluate(x);
  EXPECT_GT(qmoe.br.recompute, qbase.br.recompute);
  EXPECT_LT(qmoe.mem.activations, qbase.mem.activations);
  EXPECT_GT(qmoe.br.ep_comm, qbase.br.ep_comm);
}

// CPU activation offload: the offloaded layers leave one layer's staging buffer on the GPU, and every micro-batch
// copies their activations out and back on one copy stream (Transformer Engine's DefaultOffloadSynchronizer):
// layer i's copy is due before layer L-n+i's forward, its reload starts at the backward of layer L-1-n+i, so the
// step shows max(0, n c - (L-1) f) + max(0, n c - (L-2) b) per micro-batch. The link: PCIe Gen5 x16, 64 GB/s a
// direction, on a one-node H100 job; NVLink-C2C, 900 GB/s bidirectional per Grace shared by two GPUs, 225 a
// direction, on GB200 (data sheets).
TEST(MemoryFeatures, OffloadMovesLayersOverTheHostLink) {
  Scenario s = on_gpus("llama3-8b", "h100-sxm5-80gb", 1, 8, 64);
  s.training.framework_version = "main";
  const Evaluator ev(s, Framework::Megatron);
  Layout l = dp_only(s, 2, Recompute::None);
  const auto base = ev.evaluate(l);
  l.offload_layers = 31;
  const auto off = ev.evaluate(l);
  const double layer = activation_bytes_per_layer(s.model, 2, 1, 1, false, Recompute::None, true);
  EXPECT_NEAR((base.mem.activations - off.mem.activations) * kGiB, (31 - 1) * layer, 1.0);
  EXPECT_DOUBLE_EQ(ev.offload_layer_bytes(l), layer);
  const int m = 64 / (8 * 2), L = 32;
  auto exposed = [&](double link_gbps, int n, const Evaluator::Result& r) {
    const double copies = n * layer / (link_gbps * 1e9);
    return m * (std::max(0.0, copies - (L - 1) * r.layer_fwd_s) + std::max(0.0, copies - (L - 2) * r.layer_bwd_s));
  };
  EXPECT_NEAR(off.br.offload, exposed(64, 31, off), 1e-9);
  EXPECT_NEAR(off.step_s - base.step_s, off.br.offload, 1e-9);
  // One layer's copy at 64 GB/s takes longer than its forward here: 31 of them in a row show.
  ASSERT_GT(layer / 64e9, off.layer_fwd_s);
  EXPECT_GT(off.br.offload, 0);
  l.offload_layers = 8;  // control: 8 copies hide behind 31 forwards
  ASSERT_LT(8 * layer / 64e9, 31 * off.layer_fwd_s);
  EXPECT_EQ(ev.evaluate(l).br.offload, 0);
  l.offload_layers = 31;
  Scenario g = on_gpus("llama3-8b", "gb200", 2, 4, 64);
  g.training.framework_version = "main";
  const auto c2c = Evaluator(g, Framework::Megatron).evaluate(l);
  EXPECT_NEAR(c2c.br.offload, exposed(225, 31, c2c), 1e-9);
  EXPECT_LT(c2c.br.offload, exposed(64, 31, c2c));
}

// Across nodes a PCIe-attached GPU's link also carries its NIC's GPUDirect traffic: the copies get what the NIC
// leaves (64 - 400 Gb/s achieved), so the same layers show more of their copies than on one node. Control: one node.
TEST(MemoryFeatures, OffloadSharesThePcieLinkWithTheNic) {
  Layout l;
  l.micro_batch = 2;
  l.zero_stage = 1;
  l.recompute = Recompute::None;
  l.offload_layers = 31;
  Scenario one = on_gpus("llama3-8b", "h100-sxm5-80gb", 1, 8, 128);
  Scenario two = on_gpus("llama3-8b", "h100-sxm5-80gb", 2, 8, 128);
  one.training.framework_version = two.training.framework_version = "main";
  l.dp = 8;
  const double per_microbatch_one = Evaluator(one, Framework::Megatron).evaluate(l).br.offload / (128 / 16);
  l.dp = 16;
  const double per_microbatch_two = Evaluator(two, Framework::Megatron).evaluate(l).br.offload / (128 / 32);
  EXPECT_GT(per_microbatch_two, per_microbatch_one);
}

// The offloaded activations are pinned host memory: a GPU may take four fifths of its share of the node's host
// memory, the stated one ([cluster] host_memory_gib) or its reference system's (DGX H100: 2 TB for 8 GPUs). A
// layout beyond it does not fit and says why; the search never offloads beyond it. Controls: more host memory.
TEST(MemoryFeatures, OffloadStaysWithinHostMemory) {
  // An 8B model at 32k tokens on one node, pp 1 and no recompute: it fits only with layers offloaded.
  Scenario q = on_gpus("llama3-8b", "h100-sxm5-80gb", 1, 8, 64);
  q.training.framework_version = "main";
  q.model.seq_len = 32768;
  EXPECT_NEAR(Evaluator(q, Framework::Megatron).host_capacity_gib(), 0.8 * 2000e9 / kGiB / 8, 1e-9);
  q.cluster.host_memory_gib = 512;
  const Evaluator ev(q, Framework::Megatron);
  EXPECT_NEAR(ev.host_capacity_gib(), 0.8 * 512 / 8, 1e-9);
  Layout l = dp_only(q, 1, Recompute::None);
  l.zero_stage = 3;
  l.offload_layers = 30;
  const double layer = ev.offload_layer_bytes(l);
  ASSERT_GT(30 * layer / kGiB, 0.8 * 512 / 8);
  EXPECT_NEAR(ev.host_offload_gib(l), 30 * layer / kGiB, 1e-9);
  const auto r = ev.evaluate(l);
  ASSERT_LE(r.mem_gib, ev.capacity_gib());  // the GPU has room; the host has not
  EXPECT_FALSE(r.host_fits);
  EXPECT_FALSE(r.fits);
  const Prediction p = predict(q, l);
  EXPECT_FALSE(p.fits);
  EXPECT_NE(p.overflow.find("host memory"), std::string::npos) << p.overflow;
  Scenario roomier = q;  // control: room for it
  roomier.cluster.host_memory_gib = 30 * layer / kGiB * 8 / 0.8 * 1.01;
  EXPECT_TRUE(Evaluator(roomier, Framework::Megatron).evaluate(l).fits);

  no_model_parallelism(q);
  q.parallel.recompute = Recompute::None;
  SearchLimits lim;
  lim.time_budget_s = 20;
  q.cluster.host_memory_gib = 2048;
  const Plan roomy = advise(q, lim);
  ASSERT_GT(roomy.layout.offload_layers, 0);
  const double needed = Evaluator(q, Framework::Megatron).host_offload_gib(roomy.layout);
  EXPECT_LE(needed, 0.8 * 2048 / 8);
  bool said = false;  // the plan says what it pins, of what it may
  for (const auto& n : roomy.notes) said |= n.find(" GiB pinned per GPU of 204.8 it may take") != std::string::npos;
  EXPECT_TRUE(said);
  q.cluster.host_memory_gib = needed * 8 / 0.8 * 0.5;  // half what that plan pins: no offload fits the GPU then
  EXPECT_THROW(advise(q, lim), NothingFits);
  q.parallel.offload_layers = roomy.layout.offload_layers;  // fixed by the user: refused with the reason
  try {
    advise(q, lim);
    ADD_FAILURE() << "a fixed offload beyond host memory was planned";
  } catch (const NothingFits& e) {
    EXPECT_NE(std::string(e.what()).find("GiB of host memory per GPU"), std::string::npos) << e.what();
  }
  q.cluster.host_memory_gib = 2048;  // control: the same fixed count with room for it
  EXPECT_EQ(advise(q, lim).layout.offload_layers, roomy.layout.offload_layers);
}

// Which versions run what (tests/contracts/*.json and Megatron-Core's asserts), and what the arguments say.
TEST(MemoryFeatures, VersionsAndArguments) {
  Scenario s = on_gpus("llama3-8b", "h100-sxm5-80gb", 1, 8, 64);
  Layout l = dp_only(s, 1, Recompute::None);
  l.offload_layers = 4;
  s.training.framework_version = "core_v0.14";
  EXPECT_NE(layout_problem(s, l, Framework::Megatron).find("no CPU activation offload argument"), std::string::npos);
  s.training.framework_version = "main";
  EXPECT_EQ(layout_problem(s, l, Framework::Megatron), "");
  EXPECT_NE(args_text(s, l).find("--cpu-offloading-num-layers=4\n"), std::string::npos);
  l.recompute = Recompute::Selective;
  EXPECT_NE(layout_problem(s, l, Framework::Megatron).find("recomputation"), std::string::npos);
  l.recompute = Recompute::None;
  l.offload_layers = 0;
  l.optimizer_moments = StateDtype::Bf16;
  EXPECT_EQ(layout_problem(s, l, Framework::Megatron), "");
  const std::string a = args_text(s, l);
  for (const char* flag : {"--use-precision-aware-optimizer\n", "--exp-avg-dtype=bf16\n", "--exp-avg-sq-dtype=bf16\n",
                           "--main-params-dtype=fp32\n", "--main-grads-dtype=bf16\n"})
    EXPECT_NE(a.find(flag), std::string::npos) << flag;
  l.zero_stage = 0;
  EXPECT_NE(layout_problem(s, l, Framework::Megatron).find("distributed optimizer"), std::string::npos);
  l.zero_stage = 1;
  EXPECT_NE(layout_problem(s, l, Framework::DeepSpeed).find("precision-aware"), std::string::npos);
  // Control: the plain layout emits none of it.
  const std::string plain = args_text(s, dp_only(s, 1, Recompute::None));
  EXPECT_EQ(plain.find("precision-aware"), std::string::npos);
  EXPECT_EQ(plain.find("--cpu-offloading"), std::string::npos);
  // Modules: one argv element each after --recompute-modules (nargs '*' / a list).
  l = dp_only(s, 1, Recompute::Selective);
  l.recompute_modules = recompute_modules_from_string("layernorm,moe_act");
  EXPECT_NE(args_text(s, l).find("--recompute-granularity=selective\n--recompute-modules\nmoe_act\nlayernorm\n"),
            std::string::npos);
}

// Selective recompute with no module named: the arguments name the set the plan was priced with, as far as
// Megatron-Core takes it (transformer_config.py at core_v0.15.3: its own default is core_attn alone; mla_up_proj needs
// MLA, moe_act the experts' grouped GEMM, and FP8 delayed scaling refuses moe_act and layernorm). Without them an
// MoE plan sized for recomputed norms and activations would keep them and run out of memory.
TEST(MemoryFeatures, DefaultModuleSetIsTheOneNamed) {
  using namespace recompute_module;
  Scenario s = on_gpus("mixtral-8x7b", "h100-sxm5-80gb", 4, 8, 256);
  Layout l = dp_only(s, 1, Recompute::Selective);
  l.ep = 8;
  EXPECT_EQ(recompute_module_set(s, l, true), kCoreAttn | kLayernorm | kMoeAct);  // no MLA: no mla_up_proj
  std::string a = args_text(s, l);
  EXPECT_NE(a.find("--recompute-granularity=selective\n--recompute-modules\ncore_attn\nmoe_act\nlayernorm\n"),
            std::string::npos) << a;
  s.training.framework = Framework::Nemo;
  a = args_text(s, l);
  EXPECT_NE(a.find("model.config.recompute_modules=['core_attn','moe_act','layernorm']"), std::string::npos) << a;
  s.training.framework = Framework::Megatron;
  // FP8 with delayed scaling (the recipe when none is named): only core_attn, Megatron's own default, so no list.
  s.training.precision = Precision::Fp8;
  EXPECT_EQ(recompute_module_set(s, l, true), kCoreAttn);
  a = args_text(s, l);
  EXPECT_NE(a.find("--recompute-granularity=selective\n"), std::string::npos);
  EXPECT_EQ(a.find("--recompute-modules"), std::string::npos) << a;
  s.training.fp8_recipe = Fp8Recipe::Tensorwise;
  EXPECT_EQ(recompute_module_set(s, l, true), kCoreAttn | kLayernorm | kMoeAct);
  s.cluster.te_version = "2.5";  // before TE 2.6 Megatron-Core refuses them under FP8 too
  EXPECT_EQ(recompute_module_set(s, l, true), kCoreAttn);
  s.cluster.te_version = "2.6";
  EXPECT_EQ(recompute_module_set(s, l, true), kCoreAttn | kLayernorm | kMoeAct);
  s.cluster.te_version.clear();
  Scenario titan = s;  // the rule is Megatron-Core's: torchtitan keeps the set whatever its FP8 recipe
  titan.training.framework = Framework::Torchtitan;
  titan.training.fp8_recipe.reset();
  EXPECT_EQ(recompute_module_set(titan, l, true), kCoreAttn | kLayernorm | kMoeAct);
  // The memory follows the set: the delayed-scaling plan keeps the norms and activations it cannot recompute.
  Scenario delayed = s;
  delayed.training.fp8_recipe = Fp8Recipe::Delayed;
  EXPECT_GT(memory(delayed, l).activations, memory(s, l).activations);
  // MLA (DeepSeek-V3's attention): mla_up_proj joins; a dense model keeps core_attn alone.
  Scenario ds = on_gpus("deepseek-v3", "h100-sxm5-80gb", 32, 8, 4096);
  EXPECT_EQ(recompute_module_set(ds, l, true), kCoreAttn | kLayernorm | kMlaUpProj | kMoeAct);
  Scenario dense = on_gpus("llama3-8b", "h100-sxm5-80gb", 1, 8, 64);
  EXPECT_EQ(recompute_module_set(dense, dp_only(dense, 1, Recompute::Selective), false), kCoreAttn);
  EXPECT_EQ(args_text(dense, dp_only(dense, 1, Recompute::Selective)).find("--recompute-modules"), std::string::npos);
}

// Names in scenario files: Megatron's, in lists or strings; bad names said.
TEST(MemoryFeatures, ModuleNamesParse) {
  using namespace recompute_module;
  EXPECT_EQ(recompute_modules_from_string("layernorm, moe_act"), kLayernorm | kMoeAct);
  EXPECT_EQ(recompute_modules_from_string("mla_up_proj+mlp"), kMlaUpProj | kMlp);
  EXPECT_EQ(recompute_modules_to_string(kMlp | kCoreAttn), "core_attn,mlp");
  EXPECT_THROW(recompute_modules_from_string("attention"), std::invalid_argument);
  EXPECT_THROW(recompute_modules_from_string(""), std::invalid_argument);
  EXPECT_EQ(state_dtype_from_string("bf16"), StateDtype::Bf16);
  EXPECT_THROW(state_dtype_from_string("bfloat"), std::invalid_argument);
}

namespace {

// A Megatron-Bridge recipe as its performance summary states it (NeMo, force-balanced routing, MXFP8 or BF16).
Scenario recipe(const char* preset, const char* gpu, int nodes, int per_node, int gbs, bool mxfp8) {
  Scenario s = on_gpus(preset, gpu, nodes, per_node, gbs);
  s.training.framework = Framework::Nemo;
  s.training.moe_force_balance = true;
  if (std::string(gpu).rfind("gb", 0) == 0) s.cluster.nvlink_domain = 72;
  if (mxfp8) {
    s.training.precision = Precision::Fp8;
    s.training.fp8_recipe = Fp8Recipe::Mxfp8;
  }
  return s;
}

Layout recipe_layout(const Scenario& s, int pp, int v, int ep, int mb, Dispatcher d) {
  Layout l;
  l.pp = pp;
  l.virtual_stages = v;
  l.dp = s.total_gpus() / pp;
  l.ep = ep;
  l.micro_batch = mb;
  l.zero_stage = 1;
  l.dispatcher = d;
  return l;
}

}  // namespace

// The six recipe layouts NVIDIA ran that the memory model rejected (docs/accuracy.md, recipe check) fit with the
// features their Megatron-Bridge sources set, and the two that set features do not fit without them.
TEST(MemoryFeatures, RecipesFitWithTheirOwnFeatures) {
  // Qwen3-30B-A3B on 8 Blackwell GPUs, EP 8, no recompute (qwen3 perf recipes: recompute_granularity None).
  struct Q { const char* gpu; int nodes, per_node, mb; };
  for (const Q& q : {Q{"b200-sxm-180gb", 1, 8, 4}, Q{"gb200", 2, 4, 4}, Q{"b300-sxm-288gb", 1, 8, 8},
                     Q{"gb300", 2, 4, 8}}) {
    const Scenario s = recipe("qwen3-30b-a3b", q.gpu, q.nodes, q.per_node, 512, true);
    Layout l = recipe_layout(s, 1, 1, 8, q.mb, Dispatcher::Flex);
    EXPECT_TRUE(predict(s, l).fits) << q.gpu;
    l.micro_batch = 2 * q.mb;  // control: twice the micro-batch does not fit, so the check can fail
    EXPECT_FALSE(predict(s, l).fits) << q.gpu;
  }
  // DeepSeek-V3 on 256 B200, MXFP8, PP 8 x VP 2, EP 32, layout Et*4|(t*4|)*14tmL (8 layers on the first rank, 5 +
  // MTP + loss on the last), recompute_modules mla_up_proj, mlp (Megatron-Bridge v0.4.2 scripts/performance/configs/
  // deepseek/deepseek_workload_base_configs.py DEEPSEEK_V3_PRETRAIN_CONFIG_B200_FP8_MX_V2) and the precision-aware
  // optimizer with bf16 moments and fp32 main parameters (src/megatron/bridge/recipes/deepseek/deepseek_v3.py
  // lines 160-165).
  {
    const Scenario s = recipe("deepseek-v3", "b200-sxm-180gb", 32, 8, 4096, true);
    Layout l = recipe_layout(s, 8, 2, 32, 1, Dispatcher::Flex);
    l.first_stage_layers = 8;
    l.last_stage_layers = 5;
    l.recompute = Recompute::Selective;
    l.recompute_modules = recompute_modules_from_string("mla_up_proj,mlp");
    l.optimizer_moments = StateDtype::Bf16;
    EXPECT_TRUE(predict(s, l).fits);
    Layout fp32 = l;
    fp32.optimizer_moments = StateDtype::Fp32;
    EXPECT_FALSE(predict(s, fp32).fits);
    Layout keep = l;
    keep.recompute = Recompute::None;
    keep.recompute_modules = 0;
    EXPECT_FALSE(predict(s, keep).fits);
  }
  // gpt-oss-120b on 64 B200, BF16, EP 8, micro-batch 4, recompute_modules layernorm, moe_act (Megatron-Bridge v0.4.2
  // scripts/performance/configs/gpt_oss/gpt_oss_workload_base_configs.py GPT_OSS_120B_PRETRAIN_CONFIG_B200_BF16_V1).
  {
    const Scenario s = recipe("gpt-oss-120b", "b200-sxm-180gb", 8, 8, 1280, false);
    Layout l = recipe_layout(s, 1, 1, 8, 4, Dispatcher::AllToAll);
    l.recompute = Recompute::Selective;
    l.recompute_modules = recompute_modules_from_string("layernorm,moe_act");
    EXPECT_TRUE(predict(s, l).fits);
    l.recompute = Recompute::None;
    l.recompute_modules = 0;
    EXPECT_FALSE(predict(s, l).fits);
  }
}

// The search: Adam's moments in bf16 only where nothing fits with fp32 states (a numerics change), and said so.
TEST(MemoryFeatures, SearchUsesBf16MomentsOnlyWhenNothingElseFits) {
  // llama3-8b on 8 H100, dp 8, ZeRO-1, full recompute, micro-batch 1: fp32 states hold 12 / 8 bytes a parameter
  // (the step's gradient copy fits in the freed activations), bf16 moments 6 / 8 (TE's masters as remainders).
  Scenario s = on_gpus("llama3-8b", "h100-sxm5-80gb", 1, 8, 8);
  no_model_parallelism(s);
  s.parallel.zero_stage = 1;
  s.parallel.recompute = Recompute::Full;
  s.parallel.micro_batch = 1;
  SearchLimits lim;
  lim.time_budget_s = 20;
  const Plan plain = advise(s, lim);
  EXPECT_EQ(plain.layout.optimizer_moments, StateDtype::Fp32) << "fits with fp32 states: no numerics change";
  const double need = plain.prediction.memory_gib_per_gpu;
  const double saved = plain.prediction.memory.weights / 2 * (12.0 - 6.0) / 8;
  s.cluster.memory_gib = (need - saved / 2) / 0.95;  // the 5 % margin's usable share falls between the two
  const Plan lean = advise(s, lim);
  EXPECT_EQ(lean.layout.optimizer_moments, StateDtype::Bf16);
  EXPECT_NEAR(lean.prediction.memory_gib_per_gpu, need - saved, 1e-6);
  bool said = false;
  for (const auto& n : lean.notes) said |= n.find("used only because nothing else fits") != std::string::npos;
  EXPECT_TRUE(said);
  s.parallel.optimizer_moments = StateDtype::Fp32;  // control: the scenario fixes fp32 states, and nothing fits
  EXPECT_THROW(advise(s, lim), NothingFits);
}

// The scenario file's [parallel] keys, and what a bad value says.
TEST(MemoryFeatures, ScenarioKeys) {
  const std::string head = "[model]\npreset = \"qwen3-30b-a3b\"\n[training]\nglobal_batch = 64\n"
                           "[cluster]\ngpu = \"h100-sxm5-80gb\"\nnodes = 1\ngpus_per_node = 8\n[parallel]\n";
  const Scenario s = parse_scenario_toml(head + "optimizer_moments = \"bf16\"\nmain_params = \"fp16\"\n"
                                                "recompute_modules = [\"layernorm\", \"moe_act\"]\n", "s.toml");
  EXPECT_EQ(s.parallel.optimizer_moments, StateDtype::Bf16);
  EXPECT_EQ(s.parallel.main_params, StateDtype::Fp16);
  EXPECT_EQ(s.parallel.recompute_modules, recompute_module::kLayernorm | recompute_module::kMoeAct);
  const Layout l = layout_from_scenario(s);
  EXPECT_EQ(l.recompute, Recompute::Selective);
  EXPECT_EQ(parse_scenario_toml(head + "recompute_modules = \"mla_up_proj,mlp\"\n", "s.toml").parallel.recompute_modules,
            recompute_module::kMlaUpProj | recompute_module::kMlp);
  EXPECT_EQ(parse_scenario_toml(head + "offload_layers = 4\n", "s.toml").parallel.offload_layers, 4);
  auto error = [&](const std::string& body) {
    try {
      parse_scenario_toml(head + body, "s.toml");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(error("recompute_modules = [\"attn\"]\n").find("s.toml:10:"), std::string::npos);
  EXPECT_NE(error("recompute_modules = [\"attn\"]\n").find("'attn' is not a recompute module"), std::string::npos);
  EXPECT_NE(error("main_params = \"bf16\"\n").find("parallel.main_params"), std::string::npos);
  EXPECT_NE(error("recompute = \"full\"\nrecompute_modules = [\"mlp\"]\n").find("needs recompute = \"selective\""),
            std::string::npos);
  EXPECT_NE(error("offload_layers = 99\n").find("parallel.offload_layers"), std::string::npos);
}

// The search's other memory features, for a layout that does not fit as it is: more modules recomputed (selective
// layouts) and the fewest layers offloaded (no recompute, pp 1, a version that has the argument); each fits and is
// charged. Controls: with the feature fixed off by the scenario, nothing fits.
TEST(MemoryFeatures, SearchRecomputesMoreModulesOrOffloadsWhereThatFits) {
  Scenario s = on_gpus("llama3-8b", "h100-sxm5-80gb", 1, 8, 64);
  s.training.framework_version = "main";
  no_model_parallelism(s);
  s.parallel.zero_stage = 1;
  s.parallel.micro_batch = 4;
  s.parallel.optimizer_moments = StateDtype::Fp32;
  SearchLimits lim;
  lim.time_budget_s = 20;
  const Evaluator ev(s, Framework::Megatron);
  Layout l = layout_from_scenario(s);
  l.recompute = Recompute::Selective;
  const double plain = ev.memory_gib(l);
  l.recompute_modules = recompute_module::kCoreAttn | recompute_module::kLayernorm | recompute_module::kMlp;
  const double more = ev.memory_gib(l);
  ASSERT_LT(more, plain);
  s.parallel.recompute = Recompute::Selective;
  s.cluster.memory_gib = (more + plain) / 2 / 0.95;
  const Plan p = advise(s, lim);
  EXPECT_EQ(p.layout.recompute_modules, l.recompute_modules);
  EXPECT_NE(args_text(s, p.layout).find("--recompute-modules\ncore_attn\nlayernorm\nmlp\n"), std::string::npos);
  bool said = false;
  for (const auto& n : p.notes) said |= n.find("selective recompute of core_attn,layernorm,mlp") != std::string::npos;
  EXPECT_TRUE(said);
  s.parallel.recompute_modules = recompute_module::kCoreAttn;  // control: the default set fixed, nothing fits
  EXPECT_THROW(advise(s, lim), NothingFits);

  s.parallel.recompute_modules.reset();
  s.parallel.recompute = Recompute::None;
  l = layout_from_scenario(s);
  const double none = ev.memory_gib(l);
  l.offload_layers = 8;
  const double off8 = ev.memory_gib(l);
  s.cluster.memory_gib = (none + off8) / 2 / 0.95;
  const Plan o = advise(s, lim);
  EXPECT_GT(o.layout.offload_layers, 0);
  EXPECT_LE(o.layout.offload_layers, 8);
  EXPECT_LE(Evaluator(s, Framework::Megatron).host_offload_gib(o.layout),
            Evaluator(s, Framework::Megatron).host_capacity_gib());
  s.parallel.offload_layers = 0;  // control
  EXPECT_THROW(advise(s, lim), NothingFits);
  s.parallel.offload_layers.reset();
  s.training.framework_version = "core_v0.14";  // no argument for it there: refused, nothing fits
  EXPECT_THROW(advise(s, lim), NothingFits);
}
