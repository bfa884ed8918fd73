// Megatron-LM arguments (pretrain_gpt.py). Names and rules: tests/contracts/megatron--<version>.json.
#include "adapters.h"
#include "paratune/advisor/framework_checkpoint.h"
#include "paratune/advisor/loss_fusion.h"
#include "paratune/advisor/model.h"

namespace paratune::advisor::frameworks {

namespace {

const char* attention_backend(const TrainingSpec& t) {
  if (t.attention) {
    switch (*t.attention) {
      case Attention::Flash2:
      case Attention::Flash3: return "flash";
      case Attention::Cudnn: return "fused";
      case Attention::None: return "unfused";
    }
  }
  if (t.flash_attention && !*t.flash_attention) return "unfused";
  return nullptr;  // Megatron's own default (auto)
}

}  // namespace

void megatron(const PlanView& v, FrameworkArgs& out) {
  const Layout& l = v.l;
  const TrainingSpec& t = v.s.training;
  std::vector<std::string> a;
  // --flag=value: one argv element per option, whatever the value holds.
  auto add = [&](std::string flag, std::string value = "") { a.push_back(value.empty() ? flag : flag + "=" + value); };
  add("--tensor-model-parallel-size", std::to_string(l.tp));
  add("--pipeline-model-parallel-size", std::to_string(l.pp));
  if (l.cp > 1) add("--context-parallel-size", std::to_string(l.cp));
  const bool layout = explicit_pipeline_layout(v.s, l);  // one layout string replaces the options below
  if (layout) add("--pipeline-model-parallel-layout", pipeline_layout(v.s, l));
  if (l.pp > 1 && l.virtual_stages > 1 && !layout)
    add("--num-virtual-stages-per-pipeline-rank", std::to_string(l.virtual_stages));
  if (v.uneven_pipeline && !layout) {
    add("--account-for-embedding-in-pipeline-split");
    add("--account-for-loss-in-pipeline-split");
  }
  if (l.sequence_parallel && l.tp > 1) add("--sequence-parallel");
  add("--micro-batch-size", std::to_string(l.micro_batch));
  add("--global-batch-size", std::to_string(t.global_batch));
  add("--seq-length", std::to_string(v.s.model.seq_len));
  if (l.zero_stage == 1) add("--use-distributed-optimizer");
  // The sharding scope: optimizer state sharded within dp*cp / N ranks, replicated over N instances (in every
  // pinned version: tests/contracts/megatron--*.json; it asserts --use-distributed-optimizer).
  if (const int n = l.optimizer_instances(); n > 1)
    add("--num-distributed-optimizer-instances", std::to_string(n));
  if (l.zero_stage >= 3) {
    // Megatron-FSDP asserts the fsdp_dtensor checkpoint format (and CUDA_DEVICE_MAX_CONNECTIONS != 1: env.cpp).
    add("--use-megatron-fsdp");
    add("--data-parallel-sharding-strategy", "optim_grads_params");
  }
  // Stated, never Megatron's default left implicit: a resumed run keeps it (framework_checkpoint.h).
  add("--ckpt-format", checkpoint_format(Framework::Megatron, l).format);
  if (l.dp * l.cp > 1 && t.overlap_dp_comm.value_or(true)) {
    add("--overlap-grad-reduce");
    if (l.zero_stage == 1 && overlap_param_gather(t, Framework::Megatron)) add("--overlap-param-gather");
  }
  if (v.tp_overlap()) add("--tp-comm-overlap");
  if (l.recompute == Recompute::Selective) {
    add("--recompute-granularity", "selective");
    // nargs='*' (core_v0.14/0.15) or a list ('+', main): one element per module.
    if (const auto modules = v.recompute_module_names(); !modules.empty()) {
      a.push_back("--recompute-modules");
      a.insert(a.end(), modules.begin(), modules.end());
    }
  }
  if (l.recompute == Recompute::Full) {
    add("--recompute-granularity", "full");
    add("--recompute-method", "uniform");
    add("--recompute-num-layers", "1");
  }
  if (l.precision_aware_optimizer()) {
    add("--use-precision-aware-optimizer");
    add("--exp-avg-dtype", to_string(l.optimizer_moments));
    add("--exp-avg-sq-dtype", to_string(l.optimizer_moments));
    add("--main-params-dtype", to_string(l.main_params));
    // The gradient buffer the plan was priced with: with bf16 and --main-grads-dtype fp32 Megatron turns on fp32
    // gradient accumulation by itself (megatron/training/arguments.py).
    const bool grads16 = !t.grad_reduce_fp32.value_or(false) && t.precision != Precision::Fp16;
    add("--main-grads-dtype", grads16 ? "bf16" : "fp32");
  }
  if (l.offload_layers > 0) add("--cpu-offloading-num-layers", std::to_string(l.offload_layers));  // main only
  add(t.precision == Precision::Fp16 ? "--fp16" : "--bf16");
  if (t.precision == Precision::Fp8) {
    add("--fp8-format", "hybrid");
    add("--fp8-recipe", fp8_recipe_name(v.s));
    if (std::string(fp8_recipe_name(v.s)) == "delayed") {
      add("--fp8-amax-history-len", "1024");
      add("--fp8-amax-compute-algo", "max");
    }
  }
  if (const char* backend = attention_backend(t)) add("--attention-backend", backend);
  if (const LossFusion loss = planned_loss_fusion(v.s); loss != LossFusion::Off) {
    add("--cross-entropy-loss-fusion");
    add("--cross-entropy-fusion-impl", to_string(loss));
  }
  // Megatron's default --transformer-impl is transformer_engine: a site without TE runs the local implementation.
  if (v.s.cluster.lacks(Kernel::TransformerEngine)) add("--transformer-impl", "local");
  megatron_moe(v, add);
  out.files.push_back({"megatron.args", argv_lines(a)});
  out.notes.push_back("model architecture (--num-layers, --hidden-size, ...), tokenizer, data and checkpoint paths "
                      "stay yours: mapfile -t ARGS < $PARATUNE_ARGS, then pass \"${ARGS[@]}\" and yours after it");
}

}  // namespace paratune::advisor::frameworks
