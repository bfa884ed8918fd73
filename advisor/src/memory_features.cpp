// Names of the memory features (optimizer state dtypes, recompute modules) and the default recompute set.
#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string>

#include "paratune/advisor/framework_traits.h"
#include "paratune/advisor/loss_fusion.h"
#include "paratune/advisor/plan.h"
#include "paratune/advisor/scenario.h"

namespace paratune::advisor {

namespace {
// Megatron-Core's names (TransformerConfig.recompute_modules), in its documented order.
constexpr struct {
  unsigned bit;
  const char* name;
} kModules[] = {{recompute_module::kCoreAttn, "core_attn"}, {recompute_module::kMoeAct, "moe_act"},
                {recompute_module::kLayernorm, "layernorm"}, {recompute_module::kMlaUpProj, "mla_up_proj"},
                {recompute_module::kMlp, "mlp"}, {recompute_module::kMoe, "moe"},
                {recompute_module::kSharedExperts, "shared_experts"}};
}  // namespace

const char* to_string(StateDtype d) {
  switch (d) {
    case StateDtype::Fp32: return "fp32";
    case StateDtype::Bf16: return "bf16";
    case StateDtype::Fp16: return "fp16";
    case StateDtype::Fp8: return "fp8";
  }
  return "?";
}

StateDtype state_dtype_from_string(const std::string& s) {
  for (StateDtype d : {StateDtype::Fp32, StateDtype::Bf16, StateDtype::Fp16, StateDtype::Fp8})
    if (s == to_string(d)) return d;
  throw std::invalid_argument("'" + s + "' is not an optimizer state dtype; valid: fp32, bf16, fp16, fp8");
}

// Megatron's argument parser maps fp8 moments to torch.uint8 (megatron/training/arguments.py dtype_map).
double state_dtype_bytes(StateDtype d) { return d == StateDtype::Fp32 ? 4 : d == StateDtype::Fp8 ? 1 : 2; }

std::string recompute_modules_to_string(unsigned modules) {
  std::string out;
  for (const auto& m : kModules)
    if (modules & m.bit) out += (out.empty() ? "" : ",") + std::string(m.name);
  return out;
}

unsigned recompute_modules_from_string(const std::string& s) {
  unsigned mask = 0;
  std::string name;
  auto take = [&] {
    if (name.empty()) return;
    const auto* it = std::find_if(std::begin(kModules), std::end(kModules), [&](const auto& m) { return name == m.name; });
    if (it == std::end(kModules))
      throw std::invalid_argument("'" + name + "' is not a recompute module; valid: core_attn, moe_act, layernorm, "
                                  "mla_up_proj, mlp, moe, shared_experts");
    mask |= it->bit;
    name.clear();
  };
  for (char c : s) {
    if (c == ',' || c == '+' || std::isspace(static_cast<unsigned char>(c))) take();
    else name += c;
  }
  take();
  if (mask == 0) throw std::invalid_argument("no recompute module named; valid: core_attn, moe_act, layernorm, "
                                             "mla_up_proj, mlp, moe, shared_experts");
  return mask;
}

bool fp8_refuses_output_recompute(const Scenario& s) {
  const TrainingSpec& t = s.training;
  if (t.precision != Precision::Fp8 || !traits(t.framework).megatron_core) return false;
  if (t.fp8_recipe.value_or(Fp8Recipe::Delayed) == Fp8Recipe::Delayed) return true;
  return !s.cluster.te_version.empty() && !te_version_at_least(s.cluster.te_version, 2, 6);
}

unsigned recompute_module_set(const Scenario& s, const Layout& l, bool moe_layer) {
  using namespace recompute_module;
  if (l.recompute != Recompute::Selective) return 0;
  if (l.recompute_modules != 0) return l.recompute_modules;
  if (!moe_layer) return kCoreAttn;
  // What Megatron-Core accepts of its MoE recipe set (transformer_config.py __post_init__, core_v0.14/0.15):
  // mla_up_proj only with MLA, moe_act only with the experts' grouped GEMM (an MoE model), and under FP8 neither
  // moe_act nor layernorm with delayed scaling (the default recipe) or Transformer Engine before 2.6 (where the
  // site states its version). The framework arguments name exactly this set.
  unsigned set = kCoreAttn;
  if (s.model.is_mla()) set |= kMlaUpProj;
  if (!fp8_refuses_output_recompute(s)) set |= kLayernorm | (s.model.is_moe() ? kMoeAct : 0u);
  return set;
}

}  // namespace paratune::advisor
