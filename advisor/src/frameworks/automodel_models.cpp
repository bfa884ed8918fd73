// Which MoE presets NeMo AutoModel 0.5.0 builds with its own model code. Only the architectures in
// nemo_automodel/_transformers/registry.py:32-258 (MODEL_ARCH_MAPPING; extracted into
// tests/contracts/automodel--v0.5.0.json "custom_architectures") get AutoModel's MoE layers: model.backend.* is read
// only on that branch (_transformers/model_init.py:925-929), any other architecture goes to HF's
// from_config with the extra keyword arguments (model_init.py:957-981), and ep_size > 1 needs a model that
// inherits MoEFSDPSyncMixin (_transformers/capabilities.py:373-384, called from auto_model.py:567).
#include "paratune/advisor/automodel_stages.h"

#include <algorithm>
#include <array>
#include <utility>

namespace paratune::advisor {

namespace {

// The MoE presets' HF architecture (config.json "architectures" of the checkpoint catalog.cpp cites), and whether
// the pinned registry lists it.
struct PresetArchitecture {
  const char* preset;
  const char* architecture;
  bool custom;
};

constexpr std::array<PresetArchitecture, 8> kMoePresets{{
    {"deepseek-v3", "DeepseekV3ForCausalLM", true},      // registry.py:57-58
    {"qwen3-30b-a3b", "Qwen3MoeForCausalLM", true},      // registry.py:215-216
    {"qwen3-235b-a22b", "Qwen3MoeForCausalLM", true},    // registry.py:215-216
    {"gpt-oss-120b", "GptOssForCausalLM", true},         // registry.py:93-94
    {"gpt-oss-20b", "GptOssForCausalLM", true},          // registry.py:93-94
    {"mixtral-8x7b", "MixtralForCausalLM", false},       // not in MODEL_ARCH_MAPPING
    {"mixtral-8x22b", "MixtralForCausalLM", false},      // not in MODEL_ARCH_MAPPING
    {"olmoe-1b-7b", "OlmoeForCausalLM", false},          // not in MODEL_ARCH_MAPPING
}};

const PresetArchitecture* find(const std::string& preset) {
  const auto it = std::find_if(kMoePresets.begin(), kMoePresets.end(),
                               [&](const PresetArchitecture& p) { return preset == p.preset; });
  return it == kMoePresets.end() ? nullptr : &*it;
}

}  // namespace

std::string automodel_architecture(const std::string& preset) {
  const PresetArchitecture* p = find(preset);
  return p ? p->architecture : "";
}

// A model not in the table (a free name) is taken as HF's: paratune cannot tell which code AutoModel would build.
bool automodel_custom_moe(const std::string& preset) {
  const PresetArchitecture* p = find(preset);
  return p && p->custom;
}

std::vector<std::string> automodel_moe_presets() {
  std::vector<std::string> out;
  for (const PresetArchitecture& p : kMoePresets) out.emplace_back(p.preset);
  return out;
}

}  // namespace paratune::advisor
