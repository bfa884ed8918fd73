// Which framework versions run the memory features (precision-aware optimizer, recompute modules, CPU activation
// offload), from their pinned argument definitions (tests/contracts/*.json) and the framework's own asserts.
#include "paratune/advisor/framework_versions.h"
#include "paratune/advisor/loss_fusion.h"

namespace paratune::advisor {

namespace {
using F = Framework;
bool mcore(F f) { return f == F::Megatron || f == F::Nemo; }
}  // namespace

std::string memory_feature_problem(const Scenario& s, const Layout& l, Framework f, const FrameworkVersion& v) {
  if (l.precision_aware_optimizer()) {
    if (!mcore(f))
      return "optimizer_moments/main_params other than fp32 are Megatron-Core's precision-aware optimizer "
             "(megatron, nemo); this framework keeps Adam's states in fp32";
    // megatron/core/optimizer/optimizer_config.py: "--use-precision-aware-optimizer only supported with distributed
    // optimizer"; Megatron-Bridge turns it off under Megatron-FSDP ("cannot work with FSDP together").
    if (l.zero_stage != 1) return "the precision-aware optimizer (optimizer_moments, main_params) needs the "
                                  "distributed optimizer: zero_stage 1";
    if (l.main_params != StateDtype::Fp32 && l.main_params != StateDtype::Fp16)
      return "main_params must be fp32 or fp16 (--main-params-dtype choices)";
  }
  if (l.recompute == Recompute::Selective && l.recompute_modules != 0 && !mcore(f) &&
      !(f == F::DeepSpeed && l.recompute_modules == recompute_module::kCoreAttn))
    return "selective recompute by module (recompute_modules) is Megatron-Core's --recompute-modules; this "
           "framework's selective recompute has no module choice";
  if (const std::string why = loss_fusion_problem(s, f, v.id); !why.empty()) return why;
  if (l.offload_layers > 0) {
    if (!mcore(f)) return "CPU activation offload (offload_layers) is Megatron-Core's cpu_offloading; not planned here";
    // core_v0.14 / core_v0.15 define no command-line argument for it; main has --cpu-offloading-num-layers.
    if (f == F::Megatron && v.id != "main")
      return "has no CPU activation offload argument (--cpu-offloading-num-layers is in Megatron-LM main): plan "
             "offload_layers 0 or framework_version=main";
    // megatron/core/transformer/transformer_config.py: offloaded layers < num_layers, no pipeline parallelism, no
    // activation recomputation.
    if (l.offload_layers >= s.model.layers) return "offload_layers must be below the layer count";
    if (l.pp > 1) return "CPU activation offload has no pipeline-parallel support (Megatron-Core asserts pp 1)";
    if (l.recompute != Recompute::None)
      return "CPU activation offload does not work with activation recomputation (Megatron-Core asserts it)";
  }
  return "";
}

}  // namespace paratune::advisor
