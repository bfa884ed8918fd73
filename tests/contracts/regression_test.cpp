// Issue 13's defects, one test each: framework outputs that failed at launch or silently ran something else.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "paratune/advisor/advisor.h"
#include "paratune/advisor/env.h"
#include "paratune/advisor/framework_args.h"
#include "paratune/advisor/framework_versions.h"

using namespace paratune::advisor;

namespace {

Scenario base(const std::string& preset, const std::string& gpu, int nodes, int gbs, Framework f) {
  Scenario s;
  s.model = model_preset(preset);
  s.training.global_batch = gbs;
  s.training.framework = f;
  s.cluster.gpu = gpu;
  s.cluster.nodes = nodes;
  s.cluster.gpus_per_node = 8;
  s.cluster.nvlink_domain = 8;
  s.cluster.nic_count = 8;
  s.cluster.nic_gbps = 200;
  return s;
}

Plan with_layout(const Scenario& s, int tp, int pp, int zero, int vpp = 1) {
  Plan p;
  p.framework = s.training.framework;
  p.layout.tp = tp; p.layout.pp = pp; p.layout.zero_stage = zero; p.layout.virtual_stages = vpp;
  p.layout.sequence_parallel = tp > 1;
  p.layout.dp = s.total_gpus() / (tp * pp);
  p.layout.micro_batch = 1;
  p.layout.recompute = Recompute::Selective;
  p.env = synthesize_env(s, p.framework, p.layout, 40);
  return p;
}

std::string env(const Plan& p, const std::string& n) {
  for (const auto& e : p.env)
    if (e.name == n) return e.value;
  return "<unset>";
}

std::string text(const FrameworkArgs& a) { return a.files.at(0).content; }

}  // namespace

// 1. Megatron-FSDP: --ckpt-format fsdp_dtensor, and CUDA_DEVICE_MAX_CONNECTIONS is not 1 even with TP > 1.
TEST(Issue13, MegatronFsdpHasItsCheckpointFormatAndNoSingleQueue) {
  const Scenario s = base("llama3-8b", "a100-sxm4-80gb", 1, 128, Framework::Megatron);
  const Plan p = with_layout(s, 2, 1, 3);
  const std::string m = text(framework_args(s, p));
  EXPECT_NE(m.find("--use-megatron-fsdp"), std::string::npos);
  EXPECT_NE(m.find("--ckpt-format=fsdp_dtensor"), std::string::npos) << m;
  EXPECT_EQ(env(p, "CUDA_DEVICE_MAX_CONNECTIONS"), "<unset>");
  // Positive control: the distributed optimizer with TP 2 still gets the single queue Megatron asserts.
  EXPECT_EQ(env(with_layout(s, 2, 1, 1), "CUDA_DEVICE_MAX_CONNECTIONS"), "1");
}

// 2. The attention backend is --attention-backend; --use-flash-attn is read by nothing.
TEST(Issue13, AttentionBackendNotUseFlashAttn) {
  Scenario s = base("llama3-8b", "h100-sxm5-80gb", 1, 128, Framework::Megatron);
  s.training.attention = Attention::Flash3;
  const std::string m = text(framework_args(s, with_layout(s, 1, 1, 1)));
  EXPECT_EQ(m.find("--use-flash-attn"), std::string::npos);
  EXPECT_NE(m.find("--attention-backend=flash"), std::string::npos) << m;
  s.training.attention = Attention::Cudnn;
  EXPECT_NE(text(framework_args(s, with_layout(s, 1, 1, 1))).find("--attention-backend=fused"), std::string::npos);
}

// 3. NeMo 2: real keys, uneven pipeline accounting, ZeRO-3 as Megatron-FSDP, precision and sequence length set.
TEST(Issue13, NemoOverridesThatTheRecipeReads) {
  Scenario s = base("llama3.1-405b", "h100-sxm5-80gb", 64, 1024, Framework::Nemo);
  s.model.seq_len = 131072;
  s.training.precision = Precision::Fp8;
  Plan p = with_layout(s, 8, 8, 1, 4);
  std::string n = text(framework_args(s, p));
  EXPECT_EQ(n.find("model.tp_comm_overlap"), std::string::npos);
  // TP overlap is MegatronCommOverlapCallback's (NeMo 2.4): an override of model.config.tp_comm_overlap is undone by
  // the callback's setup() or, without it, leaves Transformer Engine's userbuffers uninitialised. Not priced unless
  // the scenario says the recipe has it; then the plan says how it is switched on.
  EXPECT_EQ(n.find("tp_comm_overlap=true"), std::string::npos) << n;
  const auto told = [](const FrameworkArgs& a) {
    for (const auto& note : a.notes)
      if (note.find("MegatronCommOverlapCallback(tp_comm_overlap=True)") != std::string::npos) return true;
    return false;
  };
  EXPECT_FALSE(told(framework_args(s, p)));
  const double unpriced = predict(s, p.layout).breakdown.tp_comm;
  s.training.tp_comm_overlap = true;
  EXPECT_TRUE(told(framework_args(s, p)));
  EXPECT_EQ(text(framework_args(s, p)).find("tp_comm_overlap=true"), std::string::npos);
  EXPECT_LT(predict(s, p.layout).breakdown.tp_comm, unpriced);  // told: the overlap is priced
  s.training.tp_comm_overlap.reset();
  EXPECT_NE(n.find("trainer.strategy.account_for_embedding_in_pipeline_split=true"), std::string::npos);
  EXPECT_NE(n.find("trainer.strategy.account_for_loss_in_pipeline_split=true"), std::string::npos);
  EXPECT_NE(n.find("data.seq_length=131072"), std::string::npos);
  EXPECT_NE(n.find("trainer.plugins.fp8=hybrid"), std::string::npos);
  EXPECT_NE(n.find("trainer.plugins.precision=bf16-mixed"), std::string::npos);
  Scenario s8 = base("llama3-8b", "a100-sxm4-80gb", 1, 128, Framework::Nemo);
  n = text(framework_args(s8, with_layout(s8, 1, 1, 3)));
  EXPECT_NE(n.find("trainer.strategy.fsdp=megatron"), std::string::npos) << "ZeRO-3 must shard parameters too";
  EXPECT_NE(n.find("optim_grads_params"), std::string::npos);
  EXPECT_EQ(text(framework_args(s8, with_layout(s8, 1, 1, 1))).find("fsdp="), std::string::npos) << "control";
}

// 4. DeepSpeed with TP > 1: plain DeepSpeed refuses it; Megatron-DeepSpeed gets its arguments and a batch that holds.
TEST(Issue13, DeepSpeedModelParallelNeedsMegatronDeepSpeed) {
  Scenario s = base("llama3-70b", "a100-sxm4-80gb", 16, 1536, Framework::DeepSpeed);
  Layout l = with_layout(s, 4, 1, 1).layout;
  EXPECT_NE(layout_problem(s, l, Framework::DeepSpeed).find("megatron-deepspeed"), std::string::npos);
  const Plan plain = advise(s);
  EXPECT_EQ(plain.layout.tp * plain.layout.pp, 1) << "the search skips what plain DeepSpeed cannot run";
  s.training.framework_version = "megatron-deepspeed";
  // Its selective recompute is checkpoint_core_attention, set on the unfused attention path only
  // (megatron/model/transformer.py at 4efb479d): with FlashAttention (A100) it saves nothing, so it is refused.
  EXPECT_NE(layout_problem(s, l, Framework::DeepSpeed).find("selective recompute"), std::string::npos);
  l.recompute = Recompute::Full;
  EXPECT_EQ(layout_problem(s, l, Framework::DeepSpeed), "");
  Plan full = with_layout(s, 4, 1, 1);
  full.layout.recompute = Recompute::Full;
  const FrameworkArgs a = framework_args(s, full);
  ASSERT_EQ(a.files.size(), 2u);
  EXPECT_NE(a.files[1].content.find("--tensor-model-parallel-size=4"), std::string::npos);
  // Without a --use-flash-attn* flag it runs the unfused CoreAttention the plan did not price.
  EXPECT_NE(a.files[1].content.find("--use-flash-attn-v2\n"), std::string::npos) << a.files[1].content;
  // It raises at start-up with --sequence-parallel unless CUDA_DEVICE_MAX_CONNECTIONS is 1, at every ZeRO stage
  // (megatron/arguments.py at 4efb479d).
  for (int zero : {1, 3}) {
    Plan sp = with_layout(s, 4, 1, zero);
    ASSERT_TRUE(sp.layout.sequence_parallel);
    EXPECT_EQ(env(sp, "CUDA_DEVICE_MAX_CONNECTIONS"), "1") << "zero " << zero;
  }
  Scenario unfused = s;
  unfused.training.flash_attention = false;
  l.recompute = Recompute::Selective;
  EXPECT_EQ(layout_problem(unfused, l, Framework::DeepSpeed), "") << "selective recompute acts on unfused attention";
  EXPECT_EQ(framework_args(unfused, full).files[1].content.find("--use-flash-attn"), std::string::npos);
  unfused.training.flash_attention.reset();
  unfused.training.attention = Attention::Flash3;
  try {
    validate(unfused);
    ADD_FAILURE() << "attention=flash3 accepted for Megatron-DeepSpeed, which cannot run it";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--use-flash-attn-v2"), std::string::npos) << e.what();
  }
  const auto cfg = nlohmann::json::parse(a.files[0].content);
  EXPECT_EQ(cfg["train_batch_size"].get<int>(), cfg["train_micro_batch_size_per_gpu"].get<int>() *
                                                    cfg["gradient_accumulation_steps"].get<int>() * (128 / 4));
}

// 5. torchtitan: per-version form, FP8 converter name, async TP only with compile, no DDP + TP, virtual stages,
// precision within its choices, model name and flavor.
TEST(Issue13, TorchtitanPerVersion) {
  Scenario s = base("llama3-70b", "h100-sxm5-80gb", 8, 512, Framework::Torchtitan);
  s.training.precision = Precision::Fp8;
  Plan p = with_layout(s, 8, 4, 3, 5);
  p.layout.recompute = Recompute::Full;
  std::string t = text(framework_args(s, p));
  EXPECT_NE(t.find("converters = [\"quantize.linear.float8\"]"), std::string::npos) << t;
  EXPECT_EQ(t.find("enable_async_tensor_parallel = true"), std::string::npos) << "no compile, no async TP";
  // 20 stages of 80 layers: torchtitan counts ceil((80 + both weights) / layers_per_stage) stages, which reaches 20
  // only with both weights 0 (ceil(80 / 4)); its defaults of 1 would give ceil(82 / 4) = 21 and a ValueError.
  EXPECT_NE(t.find("pipeline_parallel_layers_per_stage = 4"), std::string::npos) << t;
  EXPECT_NE(t.find("pipeline_parallel_first_stage_less_layers = 0"), std::string::npos) << t;
  EXPECT_NE(t.find("pipeline_parallel_last_stage_less_layers = 0"), std::string::npos) << t;
  EXPECT_NE(t.find("name = \"llama3\"\nflavor = \"70B\""), std::string::npos);
  s.training.compile = true;
  EXPECT_NE(text(framework_args(s, p)).find("enable_async_tensor_parallel = true"), std::string::npos);
  s.training.framework_version = "main";
  const FrameworkArgs m = framework_args(s, p);
  EXPECT_EQ(m.files.at(0).name, "torchtitan.flags");
  EXPECT_NE(text(m).find("--compile.enable_async_tensor_parallel"), std::string::npos);
  EXPECT_NE(text(m).find("--training.num_tokens_per_train_step=4194304"), std::string::npos) << text(m);
  // DDP only (zero 0) with TP raises in torchtitan: the version refuses the layout.
  Layout ddp = p.layout;
  ddp.zero_stage = 0;
  EXPECT_NE(version_problem(s, ddp, Framework::Torchtitan).find("DDP"), std::string::npos);
  // Async TP asked for without compile, and FP16: refused with a message.
  Scenario bad = base("llama3-8b", "h100-sxm5-80gb", 1, 128, Framework::Torchtitan);
  bad.training.tp_comm_overlap = true;
  EXPECT_THROW(validate(bad), std::invalid_argument);
  bad.training.tp_comm_overlap.reset();
  bad.training.precision = Precision::Fp16;
  EXPECT_THROW(validate(bad), std::invalid_argument);
  bad.training.precision = Precision::Bf16;
  EXPECT_NO_THROW(validate(bad)) << "control";
}

// 6. FSDP: PyTorch's own names only; FP8 is refused for FSDP and DeepSpeed instead of dropped.
TEST(Issue13, FsdpRealNamesAndNoSilentFp8) {
  Scenario s = base("llama3-8b", "a100-sxm4-80gb", 1, 128, Framework::Fsdp);
  s.training.framework_version = "1.13";
  Plan p = with_layout(s, 1, 1, 3);
  p.layout.recompute = Recompute::Full;
  const auto j = nlohmann::json::parse(text(framework_args(s, p)));
  EXPECT_EQ(j["FullyShardedDataParallel"]["sharding_strategy"], "FULL_SHARD");
  EXPECT_EQ(j["FullyShardedDataParallel"]["mixed_precision"]["param_dtype"], "bfloat16");
  EXPECT_FALSE(j["FullyShardedDataParallel"].contains("activation_checkpointing"));
  EXPECT_EQ(j["training"]["activation_checkpointing"], "full");
  Layout hsdp = p.layout;
  hsdp.shard_group = 4;
  EXPECT_NE(version_problem(s, hsdp, Framework::Fsdp).find("HYBRID_SHARD"), std::string::npos);
  s.training.framework_version = "2.x";
  EXPECT_EQ(version_problem(s, hsdp, Framework::Fsdp), "") << "FSDP2 shards on a 2-D mesh";
  for (Framework f : {Framework::Fsdp, Framework::DeepSpeed}) {
    Scenario fp8 = base("llama3-8b", "h100-sxm5-80gb", 1, 128, f);
    fp8.training.precision = Precision::Fp8;
    EXPECT_THROW(validate(fp8), std::invalid_argument) << to_string(f);
  }
}

// 7. torchrun: the rendezvous host is the variable the plugin exports (or the literal first node), not $MASTER_ADDR.
TEST(Issue13, TorchrunRendezvousFromTheAllocation) {
  const Scenario s = base("llama3-8b", "a100-sxm4-80gb", 2, 128, Framework::Fsdp);
  const Plan p = with_layout(s, 1, 1, 3);
  // The file is read with mapfile, which expands nothing: never a ${...} placeholder (the environment it would name
  // is not set when the first node is not known). Without a rendezvous host, no endpoint and a note saying so.
  const FrameworkArgs unknown = framework_args(s, p);
  EXPECT_EQ(unknown.torchrun.find("${"), std::string::npos) << unknown.torchrun;
  EXPECT_EQ(unknown.torchrun.find("--rdzv_endpoint"), std::string::npos) << unknown.torchrun;
  EXPECT_TRUE(std::any_of(unknown.notes.begin(), unknown.notes.end(), [](const std::string& n) {
    return n.find("torchrun.args has no rendezvous") != std::string::npos;
  }));
  const std::string literal = framework_args(s, p, {"node7", "21234", "1234"}).torchrun;
  EXPECT_NE(literal.find("--rdzv_endpoint=node7:21234\n--rdzv_id=1234"), std::string::npos) << literal;
  const Scenario one = base("llama3-8b", "a100-sxm4-80gb", 1, 128, Framework::Fsdp);
  const std::string standalone = framework_args(one, with_layout(one, 1, 1, 3)).torchrun;
  EXPECT_NE(standalone.find("\n--standalone\n"), std::string::npos) << "one node rendezvouses on itself";
}

// 8. Risky env: NVLS is not forced on, CROSS_NIC only on stated rails, P2C only on an NCCL that has it.
TEST(Issue13, RiskyNcclSettingsGone) {
  Scenario s = base("llama3-70b", "h100-sxm5-80gb", 4, 512, Framework::Megatron);
  s.cluster.nvls = true;
  s.cluster.gpu_nic_path = "P2C";
  Layout l = with_layout(s, 8, 1, 1).layout;
  auto e = synthesize_env(s, Framework::Megatron, l, 40);
  auto get = [](const std::vector<EnvSetting>& v, const char* n) {
    for (const auto& x : v)
      if (x.name == n) return x.value;
    return std::string("<unset>");
  };
  EXPECT_EQ(get(e, "NCCL_NVLS_ENABLE"), "<unset>");
  EXPECT_EQ(get(e, "NCCL_CROSS_NIC"), "<unset>");
  EXPECT_EQ(get(e, "NCCL_NET_GDR_LEVEL"), "PHB") << "NCCL version unknown: P2C may not exist";
  s.cluster.nccl_version = "2.27.3";
  EXPECT_EQ(get(synthesize_env(s, Framework::Megatron, l, 40), "NCCL_NET_GDR_LEVEL"), "P2C");
  s.cluster.nccl_version = "2.26.6";
  EXPECT_EQ(get(synthesize_env(s, Framework::Megatron, l, 40), "NCCL_NET_GDR_LEVEL"), "PHB");
  EXPECT_EQ(get(synthesize_env(s, Framework::Megatron, l, 79.5), "NCCL_NVLS_ENABLE"), "0") << "no room for NVLS";
}

// Versions: an unknown id is refused with the valid list; the default is used when none is given.
TEST(Issue13, VersionChosenByScenarioOrDefault) {
  Scenario s = base("llama3-8b", "a100-sxm4-80gb", 1, 128, Framework::Megatron);
  EXPECT_EQ(version_for(s, Framework::Megatron).id, "core_v0.15");
  s.training.framework_version = "main";
  EXPECT_EQ(framework_args(s, with_layout(s, 1, 1, 1)).version, "main");
  s.training.framework_version = "core_v9";
  try {
    validate(s);
    ADD_FAILURE() << "an unknown version must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("training.framework_version"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("core_v0.15 (default)"), std::string::npos) << e.what();
  }
}

// The gradients' reduction dtype the plan is priced with is the one its arguments ask for: FSDP's mixed-precision
// reduce_dtype (fp32 by default, the 16-bit dtype with grad_reduce_fp32 = no) and DeepSpeed's
// communication_data_type (the model's dtype by default, "fp32" with grad_reduce_fp32 = yes; runtime/config.py
// get_communication_data_type accepts fp16, bf16, fp32). Either used to be priced one way and written the other.
TEST(Issue13, TheGradientReductionDtypeIsPricedAsWritten) {
  Scenario fsdp = base("llama3-8b", "h100-sxm5-80gb", 4, 256, Framework::Fsdp);
  fsdp.training.overlap_dp_comm = false;  // the gradients' traffic exposed: its bytes show in the step
  Plan pf = with_layout(fsdp, 1, 1, 3);
  pf.layout.recompute = Recompute::Full;
  const auto reduce = [&](const Scenario& s) {
    return nlohmann::json::parse(framework_args(s, pf).files[0].content)["fully_shard"]["mp_policy"]["reduce_dtype"];
  };
  EXPECT_EQ(reduce(fsdp), "float32");
  const double fp32_comm = predict(fsdp, pf.layout).step_time_s;
  fsdp.training.grad_reduce_fp32 = false;
  EXPECT_EQ(reduce(fsdp), "bfloat16");
  EXPECT_LT(predict(fsdp, pf.layout).step_time_s, fp32_comm) << "priced at 2 bytes, as written";

  Scenario ds = base("llama3-8b", "h100-sxm5-80gb", 4, 256, Framework::DeepSpeed);
  ds.training.overlap_dp_comm = false;
  Plan pd = with_layout(ds, 1, 1, 1);
  pd.layout.recompute = Recompute::Full;
  const auto comm = [&](const Scenario& s) { return nlohmann::json::parse(framework_args(s, pd).files[0].content); };
  EXPECT_FALSE(comm(ds).contains("communication_data_type")) << "DeepSpeed's default: the model's dtype";
  const double bf16_comm = predict(ds, pd.layout).step_time_s;
  ds.training.grad_reduce_fp32 = true;
  EXPECT_EQ(comm(ds)["communication_data_type"], "fp32");
  EXPECT_GT(predict(ds, pd.layout).step_time_s, bf16_comm);
}
