// The supported-version table and what each version cannot run. Every refusal quotes the rule in the
// framework's source that would stop the launch (tests/contracts/*.json hold the extracted rules; the contract
// tests check each rule here against them).
#include "paratune/advisor/framework_versions.h"

#include "paratune/advisor/catalog.h"
#include "paratune/advisor/framework_kernels.h"
#include "paratune/advisor/loss_fusion.h"
#include "torchtitan_degrees.h"

#include <stdexcept>

namespace paratune::advisor {

namespace {

using F = Framework;

// The torchtitan model a preset is (torchtitan/models/<family>), "" for none: which MoE dispatchers it builds.
std::string torchtitan_family(const std::string& preset) {
  for (const char* family : {"deepseek-v3", "qwen3", "gpt-oss", "llama4", "kimi-k2"})
    if (preset.rfind(family, 0) == 0) return family;
  return "";
}

// torchtitan's flex dispatcher per version. v0.2.2: [parallelism] expert_parallel_comm_backend, read by the
// deepseek_v3 and llama4 parallelize functions only, which raise for EP = 1 and for expert TP ("DeepEP with Expert
// Tensor Parallelism (ETP) is not supported yet"). main: the model_registry of deepseek_v3, qwen3, gpt_oss and
// kimi_k2_7 takes moe_comm_backend ("deepep", "hybridep").
std::string torchtitan_flex_problem(const Scenario& s, const Layout& l, const FrameworkVersion& v) {
  if (!s.model.is_moe() || l.dispatcher != Dispatcher::Flex) return "";
  const std::string family = torchtitan_family(s.model.name);
  if (v.id == "main") {
    if (family.empty() || family == "llama4")
      return "the flex dispatcher is a model_registry(moe_comm_backend=...) setting of torchtitan's deepseek_v3, "
             "qwen3, gpt_oss and kimi_k2_7 models; " + s.model.name + " is none of them";
    return "";
  }
  if (family != "deepseek-v3" && family != "llama4")
    return "expert_parallel_comm_backend = \"deepep\" is read only by the deepseek_v3 and llama4 models; " +
           s.model.name + " would run the standard all-to-all (framework_version=main takes it for qwen3, gpt_oss "
           "and kimi_k2_7 too)";
  if (l.etp > 1) return "\"DeepEP with Expert Tensor Parallelism (ETP) is not supported yet\": plan etp 1";
  return "";
}

std::vector<FrameworkVersion> make_table() {
  const std::string mlm = "github:NVIDIA/Megatron-LM ";
  return {
      {F::Megatron, "core_v0.15", "Megatron-LM / Megatron-Core 0.15", mlm + "core_v0.15.3", "megatron--core_v0.15", true},
      {F::Megatron, "core_v0.14", "Megatron-LM / Megatron-Core 0.14", mlm + "core_v0.14.0", "megatron--core_v0.14", false},
      {F::Megatron, "main", "Megatron-LM main of 2026-08-22", mlm + "d98e8a64ddf3", "megatron--main", false},
      {F::Nemo, "2.4", "NeMo 2.4 (NeMo-Run recipes) on Megatron-Core 0.14", "github:NVIDIA/NeMo v2.4.0", "nemo--2.4", true},
      {F::DeepSpeed, "0.16", "DeepSpeed 0.16 (data parallel / ZeRO, no model parallelism)",
       "github:deepspeedai/DeepSpeed v0.16.9", "deepspeed--0.16", true},
      {F::DeepSpeed, "0.19", "DeepSpeed 0.19 (data parallel / ZeRO, no model parallelism)",
       "github:deepspeedai/DeepSpeed v0.19.5", "deepspeed--0.19", false},
      {F::DeepSpeed, "megatron-deepspeed", "Megatron-DeepSpeed (TP/PP through its mpu) with DeepSpeed 0.16",
       "github:deepspeedai/Megatron-DeepSpeed 4efb479d5317", "megatron-deepspeed--main", false},
      {F::Torchtitan, "v0.2", "torchtitan v0.2.x (TOML job config)", "github:pytorch/torchtitan v0.2.2",
       "torchtitan--v0.2", true},
      {F::Torchtitan, "main", "torchtitan main of 2026-08-21 (Python config + frozen CLI flags)",
       "github:pytorch/torchtitan b5bcd76c66d0", "torchtitan--main", false},
      {F::Automodel, "0.5", "NeMo AutoModel 0.5.0 (YAML recipe + --dotted.key overrides; FSDP2)",
       "github:NVIDIA-NeMo/Automodel v0.5.0", "automodel--v0.5.0", true},
      {F::Fsdp, "2.x", "PyTorch 2.x FSDP2 (fully_shard)", "github:pytorch/pytorch 0257dd1c405a", "pytorch--2.x", true},
      {F::Fsdp, "1.13", "PyTorch 1.13 FSDP1 (FullyShardedDataParallel; Debian 12's python3-torch)",
       "debian:python3-torch 1.13.1+dfsg-4", "pytorch--1.13", false},
  };
}

}  // namespace

const std::vector<FrameworkVersion>& framework_versions() {
  static const std::vector<FrameworkVersion> table = make_table();
  return table;
}

const FrameworkVersion& resolve_version(Framework f, const std::string& id) {
  std::string valid;
  for (const auto& v : framework_versions()) {
    if (v.framework != f) continue;
    if (id.empty() ? v.is_default : v.id == id) return v;
    valid += (valid.empty() ? "" : ", ") + v.id + (v.is_default ? " (default)" : "");
  }
  throw std::invalid_argument("framework_version '" + id + "' is not a supported " + to_string(f) +
                              " version; valid: " + valid);
}

const FrameworkVersion& version_for(const Scenario& s, Framework f) {
  if (f == s.training.framework && !s.training.framework_version.empty())
    return resolve_version(f, s.training.framework_version);  // the user's (SPEC or scenario file)
  const auto site = s.training.site_versions.find(f);
  return resolve_version(f, site == s.training.site_versions.end() ? std::string() : site->second);
}

namespace {

// Settings the scenario states that need a kernel the site says is not installed (facts.kernels).
std::string kernel_stack_problem(const Scenario& s) {
  const TrainingSpec& t = s.training;
  const bool mcore = t.framework == F::Megatron || t.framework == F::Nemo;
  const char* fix = ", which the site says is not installed (facts.kernels)";
  if (mcore && s.cluster.lacks(Kernel::TransformerEngine)) {
    if (t.precision == Precision::Fp8) return std::string("FP8 training needs Transformer Engine") + fix + "; plan bf16";
    if (t.tp_comm_overlap.value_or(false))
      return std::string("tp_comm_overlap=yes needs Transformer Engine (userbuffers)") + fix + "; give tp_comm_overlap=no";
    if (t.attention == Attention::Cudnn) return std::string("attention=cudnn needs Transformer Engine") + fix;
  }
  if (t.attention == Attention::Flash3 && s.cluster.lacks(Kernel::FlashAttention3))
    return std::string("attention=flash3 needs FlashAttention-3") + fix + "; give attention=flash2";
  return "";
}

}  // namespace

std::string stack_problem(const Scenario& s) {
  const TrainingSpec& t = s.training;
  const FrameworkVersion& v = version_for(s, t.framework);
  const std::string who = std::string(to_string(t.framework)) + " " + v.id + ": ";
  // On a GPU without BF16 (V100, T4: the plan falls back to FP16) "plan bf16" is no way out: name the frameworks
  // that train FP16 instead.
  const bool no_bf16 = is_gpu_key(s.cluster.gpu) && !gpu_spec(s.cluster.gpu).bf16;
  const std::string use_bf16 =
      no_bf16 ? "; " + s.cluster.gpu + " has no BF16 tensor cores: use framework=megatron, nemo, deepspeed or fsdp "
                "for FP16"
              : "; use bf16";
  if (t.precision == Precision::Fp8 && (t.framework == F::DeepSpeed || t.framework == F::Fsdp))
    return who + "has no FP8 training setting (Transformer Engine / torchao are model code); plan bf16 here, or "
                 "use framework=megatron, nemo or torchtitan for FP8";
  if (t.framework == F::Automodel && t.precision != Precision::Bf16)
    return who + (t.precision == Precision::Fp8
                      ? "FP8 is model.backend.te_fp8 of AutoModel's own model implementations (Transformer Engine "
                        "linear layers), not planned here; plan bf16"
                      : "trains under FSDP2Config.mp_policy's bf16 by default (a float16 policy is a _target_ "
                        "object in the recipe, not planned here)" + use_bf16);
  if (t.framework == F::Automodel && t.tp_comm_overlap.value_or(false) && !t.compile.value_or(false))
    return who + "enable_async_tensor_parallel sets torch._inductor's micro-pipeline TP, which acts on compiled "
                 "layers only: set compile=yes (distributed.enable_compile) or tp_comm_overlap=no";
  // Megatron-LM's arguments.py before main: "Currently GroupedGEMM for MoE only supports bf16 dtype." and "Expert
  // parallelism is not supported with fp16 training." (validate_args at core_v0.14.0 and core_v0.15.3).
  if (t.framework == F::Megatron && t.precision == Precision::Fp16 && s.model.is_moe() && v.id != "main")
    return who + "arguments.py asserts bf16 for the experts' grouped GEMM and refuses expert parallelism with fp16" +
           (no_bf16 ? "; " + s.cluster.gpu + " has no BF16 tensor cores: use framework=deepspeed or fsdp for an FP16 "
                      "MoE model"
                    : std::string("; plan bf16, or framework_version=main (which has neither assert)"));
  if (t.framework == F::Torchtitan && t.precision == Precision::Fp16)
    return who + "training.mixed_precision_param accepts bfloat16 or float32 only (its Literal type)" + use_bf16;
  if (t.framework == F::Torchtitan && t.tp_comm_overlap.value_or(false) && !t.compile.value_or(false))
    return who + "async tensor parallelism raises \"Async TP requires 'model' in --compile.components and "
                 "--compile.enable\": set compile=yes or tp_comm_overlap=no";
  if (t.framework == F::DeepSpeed && v.id == "megatron-deepspeed" &&
      (t.attention == Attention::Flash3 || t.attention == Attention::Cudnn))
    return who + "its attention is FlashAttention-2 (--use-flash-attn-v2) or the unfused CoreAttention "
                 "(megatron/model/transformer.py); give attention=flash2, or flash_attention=no";
  if (t.precision == Precision::Fp8 && t.fp8_recipe == Fp8Recipe::Rowwise &&
      (t.framework == F::Megatron || t.framework == F::Nemo))
    return who + "--fp8-recipe accepts tensorwise, delayed, mxfp8 or blockwise (no rowwise)";
  if (const std::string why = kernel_stack_problem(s); !why.empty()) return who + why;
  if (const std::string why = loss_fusion_problem(s, t.framework, v.id); !why.empty()) return who + why;
  if (t.precision == Precision::Fp8 && t.framework == F::Torchtitan && t.fp8_recipe &&
      *t.fp8_recipe != Fp8Recipe::Tensorwise && *t.fp8_recipe != Fp8Recipe::Rowwise)
    return who + "its float8 converter (torchao) scales tensorwise or rowwise; give fp8_recipe=tensorwise or rowwise";
  return "";
}

std::string version_problem(const Scenario& s, const Layout& l, Framework f) {
  const FrameworkVersion& v = version_for(s, f);
  const std::string who = std::string(to_string(f)) + " " + v.id + ": ";
  if (f == F::DeepSpeed && v.id != "megatron-deepspeed" && (l.tp > 1 || l.pp > 1))
    return who + "plain DeepSpeed has no model-parallel unit, so its batch check counts every GPU as data "
                 "parallel (train_batch_size == micro_batch * gradient_accumulation_steps * world_size fails) and "
                 "AutoTP rejects ZeRO-3; tp/pp > 1 needs framework_version=megatron-deepspeed";
  // Its selective recompute is checkpoint_core_attention, set on the unfused attention path only
  // (megatron/model/transformer.py at 4efb479d): with the fused kernel it recomputes nothing.
  if (f == F::DeepSpeed && v.id == "megatron-deepspeed" && l.recompute == Recompute::Selective &&
      fused_attention_runs(s))
    return who + "selective recompute checkpoints the unfused attention core only; with FlashAttention it saves "
                 "nothing: plan recompute none or full";
  if (f == F::Torchtitan && l.zero_stage == 0 && (l.tp > 1 || l.pp > 1 || l.cp > 1))
    return who + "data parallelism by replication only (DDP) raises \"DDP has not supported > 1D parallelism\" "
                 "with tp/pp/cp > 1; shard the data-parallel dimension (zero_stage 3)";
  if (f == F::Torchtitan)
    if (std::string why = torchtitan_flex_problem(s, l, v); !why.empty()) return who + why;
  // Its expert mesh folds ep x etp into the sharded data-parallel ranks: dp_shard * cp * tp / (ep * etp) ranks
  // shard each expert (parallel_dims.py: v0.2.2 and main), so replicated data parallelism cannot carry experts.
  if (f == F::Torchtitan && l.ep * l.etp > 1) {
    const int shard = frameworks::dp_degrees(l).shard;
    if ((long(shard) * l.cp * l.tp) % (l.ep * l.etp) != 0)
      return who + "its expert mesh needs ep * etp (" + std::to_string(l.ep * l.etp) + ") to divide the sharded "
             "data-parallel ranks times cp * tp (" + std::to_string(long(shard) * l.cp * l.tp) + "): shard the "
             "data-parallel dimension (zero_stage 3) or plan a smaller ep";
  }
  if (f == F::Torchtitan && v.id == "main" && l.etp > 1)
    return who + "parallelism has expert_parallel_degree but no expert_tensor_parallel_degree (its config fields); "
                 "plan etp 1 or framework_version=v0.2";
  if (f == F::Automodel)
    if (std::string why = automodel_problem(s, l); !why.empty()) return who + why;
  if (f == F::Fsdp && v.id == "1.13" && l.shard_group > 0)
    return who + "ShardingStrategy has FULL_SHARD, SHARD_GRAD_OP and NO_SHARD only (no HYBRID_SHARD before 2.0)";
  if (std::string why = kernel_problem(s, l, f); !why.empty()) return who + why;  // the site lacks a kernel
  if (std::string why = memory_feature_problem(s, l, f, v); !why.empty()) return who + why;
  return "";
}

}  // namespace paratune::advisor
