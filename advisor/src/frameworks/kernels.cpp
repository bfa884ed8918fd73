// Optional kernels: which settings use them, per framework version, and what a site without them runs instead.
// Flags: tests/contracts/megatron--*.json (--moe-enable-deepep; main's --moe-flex-dispatcher-backend),
// nemo--2.4.json (model.config.moe_enable_deepep).
#include "paratune/advisor/framework_kernels.h"

#include "paratune/advisor/catalog.h"
#include "paratune/advisor/framework_versions.h"
#include "paratune/advisor/loss_fusion.h"

namespace paratune::advisor {

namespace {

bool megatron_core(Framework f) { return f == Framework::Megatron || f == Framework::Nemo; }

// Megatron-LM main names the backend; 0.14/0.15 and NeMo 2.4 have DeepEP only (--moe-enable-deepep). torchtitan
// v0.2.2 has DeepEP only ([parallelism] expert_parallel_comm_backend = "deepep"); main builds DeepEP or HybridEP
// dispatchers (models/common/config_utils.py: comm_backend "deepep" / "hybridep").
// AutoModel 0.5.0: model.backend.dispatcher "deepep" or "hybridep" (BackendConfig, models/common/utils.py).
bool has_backend_choice(const Scenario& s, Framework f) {
  if (f == Framework::Automodel) return true;
  return (f == Framework::Megatron || f == Framework::Torchtitan) && version_for(s, f).id == "main";
}

std::string flex_setting(const Scenario& s, Framework f, Kernel k) {
  if (f == Framework::Automodel) return "--model.backend.dispatcher=" + std::string(to_string(k));
  if (f == Framework::Torchtitan)
    return has_backend_choice(s, f) ? "model_registry(..., moe_comm_backend=\"" + std::string(to_string(k)) +
                                          "\") in the config function"
                                    : std::string("[parallelism] expert_parallel_comm_backend = \"deepep\"");
  if (has_backend_choice(s, f)) return "--moe-flex-dispatcher-backend=" + std::string(to_string(k));
  return f == Framework::Nemo ? "model.config.moe_enable_deepep=true" : "--moe-enable-deepep";
}

// A stack that can overlap TP communication at all: Megatron-Core (Transformer Engine's userbuffers), torchtitan and
// AutoModel with compiled layers (torchtitan config/configs.py: "Async TP requires 'model' in --compile.components";
// AutoModel's enable_async_tensor_parallel acts on compiled layers only).
bool tp_overlap_capable(const Scenario& s, Framework f) {
  if (megatron_core(f)) return true;
  if (f == Framework::Torchtitan || f == Framework::Automodel) return s.training.compile.value_or(false);
  return false;
}

}  // namespace

bool tp_comm_overlap_runs(const Scenario& s, Framework f) {
  if (!tp_overlap_capable(s, f)) return false;
  if (s.training.tp_comm_overlap) return *s.training.tp_comm_overlap;
  const GpuArch arch = effective_gpu(s.cluster).arch;  // an unknown GPU described by overrides counts as Hopper
  return (arch == GpuArch::Hopper || arch == GpuArch::Blackwell) && s.training.overlap_dp_comm.value_or(true) &&
         f != Framework::Nemo &&
         !(megatron_core(f) && s.cluster.lacks(Kernel::TransformerEngine));
}

bool fused_attention_runs(const Scenario& s) {
  return s.training.flash_attention.value_or(true) && has_flash_attention(effective_gpu(s.cluster).arch) &&
         s.training.attention != Attention::None;
}

bool tp_comm_overlap_runs(const Scenario& s, const Layout& l, Framework f) {
  return l.tp > 1 && l.sequence_parallel && tp_comm_overlap_runs(s, f);
}

namespace {

// Megatron-Core's default attention on Hopper/Blackwell is TE's fused cuDNN kernel (docs/model.md, software stack);
// without TE it is another (settle_kernel_defaults).
bool te_attention(const Scenario& s, Framework f) {
  if (!megatron_core(f)) return false;
  if (s.training.attention) return *s.training.attention == Attention::Cudnn;
  return hopper_or_blackwell(s.cluster.gpu) && s.training.flash_attention.value_or(true) &&
         !s.cluster.lacks(Kernel::TransformerEngine);
}

}  // namespace

std::optional<Kernel> flex_backend(const Scenario& s, Framework f) {
  const bool spans_nodes = s.cluster.nvlink_domain > s.cluster.gpus_per_node;
  std::vector<Kernel> order{Kernel::DeepEP};
  if (has_backend_choice(s, f))
    order = spans_nodes ? std::vector<Kernel>{Kernel::HybridEP, Kernel::DeepEP}
                        : std::vector<Kernel>{Kernel::DeepEP, Kernel::HybridEP};
  for (Kernel k : order)
    if (!s.cluster.lacks(k)) return k;
  return std::nullopt;
}

std::vector<KernelNeed> kernels_needed(const Scenario& s, const Layout& l, Framework f) {
  std::vector<KernelNeed> out;
  if (s.model.is_moe() && l.dispatcher == Dispatcher::Flex) {
    const std::optional<Kernel> b = flex_backend(s, f);
    const Kernel k = b.value_or(Kernel::DeepEP);
    out.push_back({k, "the flex token dispatcher (" + flex_setting(s, f, k) + ")"});
  }
  if (megatron_core(f)) {
    if (s.training.precision == Precision::Fp8)
      out.push_back({Kernel::TransformerEngine, "FP8 training (Megatron-Core's FP8 is Transformer Engine's)"});
    if (megatron_core(f) && tp_comm_overlap_runs(s, l, f))
      out.push_back({Kernel::TransformerEngine, "TP communication overlap (--tp-comm-overlap: TE userbuffers)"});
    if (te_attention(s, f))
      out.push_back({Kernel::TransformerEngine, "fused cuDNN attention (Transformer Engine's)"});
    if (planned_loss_fusion(s) == LossFusion::Te)
      out.push_back({Kernel::TransformerEngine, "the fused loss (--cross-entropy-fusion-impl te)"});
  }
  if (s.training.attention == Attention::Flash3)
    out.push_back({Kernel::FlashAttention3, "attention = flash3 (the flash-attn 3 package)"});
  return out;
}

std::string kernel_problem(const Scenario& s, const Layout& l, Framework f) {
  if (s.model.is_moe() && l.dispatcher == Dispatcher::Flex && !flex_backend(s, f))
    return std::string("dispatcher flex needs ") + (has_backend_choice(s, f) ? "DeepEP or HybridEP" : "DeepEP") +
           ", which the site says is not installed (facts.kernels)";
  for (const KernelNeed& n : kernels_needed(s, l, f))
    if (s.cluster.lacks(n.kernel))
      return n.why + " needs " + to_string(n.kernel) + ", which the site says is not installed (facts.kernels)";
  return "";
}

std::vector<std::string> settle_kernel_defaults(Scenario& s) {
  std::vector<std::string> changed;
  TrainingSpec& t = s.training;
  if (!megatron_core(t.framework) || !s.cluster.lacks(Kernel::TransformerEngine)) return changed;
  if (!t.tp_comm_overlap && hopper_or_blackwell(s.cluster.gpu)) {
    t.tp_comm_overlap = false;
    changed.push_back("TP communication overlap off: it is Transformer Engine's (userbuffers), not installed");
  }
  if (!t.attention && hopper_or_blackwell(s.cluster.gpu) && t.flash_attention.value_or(true)) {
    t.attention = s.cluster.lacks(Kernel::FlashAttention3) ? Attention::Flash2 : Attention::Flash3;
    changed.push_back(std::string("attention from ") + (t.attention == Attention::Flash3 ? "FlashAttention-3" :
                      "FlashAttention-2") + " in place of Transformer Engine's fused cuDNN kernel (not installed)");
  }
  return changed;
}

std::vector<std::string> kernel_notes(const Scenario& s, const Plan& p) {
  std::vector<std::string> out;
  for (const KernelNeed& n : kernels_needed(s, p.layout, p.framework)) {
    const bool te_stated = n.kernel == Kernel::TransformerEngine && !s.cluster.te_version.empty();
    out.push_back(std::string("needs ") + to_string(n.kernel) + " for " + n.why +
                  (s.cluster.kernels ? " (installed, site facts.kernels)"
                   : te_stated       ? " (installed: Transformer Engine " + s.cluster.te_version + ")"
                                     : " (installation not stated: the site policy's facts.kernels says what is)"));
  }
  if (megatron_core(p.framework) && s.cluster.lacks(Kernel::TransformerEngine))
    out.push_back("Transformer Engine not installed (facts.kernels): Megatron-Core runs its local implementation "
                  "(--transformer-impl=local / model.config.transformer_impl=local)");
  return out;
}

}  // namespace paratune::advisor
