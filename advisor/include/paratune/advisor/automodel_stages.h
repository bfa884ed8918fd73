// How NeMo AutoModel 0.5.0 cuts a model into pipeline stages (components/distributed/pipelining/functional.py at
// the pin): calculate_virtual_stages() takes ceil(layers / layers_per_stage) stages, rounded to a multiple of pp
// by round_virtual_stages_to_pp_multiple ("up" / "down") when given, else refuses a count pp does not divide;
// without layers_per_stage, 1 stage a rank for single-stage schedules and 2 for multi-stage ones.
// generate_hf_model_fqn_per_model_part() then spreads the layers evenly, the first stages one more each.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace paratune::advisor {

struct AutomodelStages {
  int layers_per_stage = 0;  // 0: not set (AutoModel's default count for the schedule)
  std::string round;         // "" (None), "up" or "down"
};

// FSDP2's dp_shard size for a layout (dp / dp_replicate_size): its sharding scope (shard_group, which counts the
// cp ranks too) over cp; dp without a scope, 1 for ddp (zero_stage < 2); 0 when AutoModel cannot build the scope.
struct Layout;
int automodel_dp_shard(const Layout& l);

// The distributed.pipeline settings that give pp * chunks stages, or nullopt when none does.
std::optional<AutomodelStages> automodel_stages(int layers, int pp, int chunks);

// The HF architecture of a MoE preset ("" for any other model), whether AutoModel 0.5.0 builds it with its own MoE
// code (only then ep_size > 1 and model.backend.* work), and the MoE presets the table knows
// (frameworks/automodel_models.cpp).
std::string automodel_architecture(const std::string& preset);
bool automodel_custom_moe(const std::string& preset);
std::vector<std::string> automodel_moe_presets();

}  // namespace paratune::advisor
