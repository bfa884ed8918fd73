// What NeMo AutoModel 0.5.0 refuses of a layout, each rule quoting its source at the pin (github:NVIDIA-NeMo/Automodel
// v0.5.0; tests/contracts/automodel--v0.5.0.json holds the extracted rules), and how it cuts pipeline stages.
#include "paratune/advisor/automodel_stages.h"
#include "paratune/advisor/framework_versions.h"

namespace paratune::advisor {

std::optional<AutomodelStages> automodel_stages(int layers, int pp, int chunks) {
  const int stages = pp * chunks;
  if (pp < 1 || chunks < 1 || stages > layers) return std::nullopt;  // "cannot exceed number of layers"
  if (chunks <= 2) return AutomodelStages{};                         // the default count: 1 or 2 a rank
  for (int per = 1; per <= layers; ++per) {
    const int n = (layers + per - 1) / per;  // math.ceil(num_layers / layers_per_stage)
    if (n == stages) return AutomodelStages{per, ""};
    if (n % pp == 0) continue;  // rounding applies only to counts pp does not divide
    if (n + pp - n % pp == stages) return AutomodelStages{per, "up"};
    if (n - n % pp == stages) return AutomodelStages{per, "down"};
  }
  return std::nullopt;
}

int automodel_dp_shard(const Layout& l) {
  if (l.zero_stage < 2) return 1;
  if (l.shard_group <= 0) return l.dp;
  if (l.shard_group % l.cp) return 0;
  const int shard = l.shard_group / l.cp;
  return shard > 1 && l.dp % shard == 0 ? shard : l.dp == 1 ? 1 : 0;
}

namespace {

std::string pipeline_problem(const Scenario& s, const Layout& l) {
  if (l.pp < 2) return "";
  // recipes/llm/train_ft.py: assert pp_batch_size // pp_microbatch_size >= pp_size (local batch / micro-batch).
  if (l.grad_accum(s.training.global_batch) < l.pp)
    return "train_ft.py asserts local_batch_size // pp_microbatch_size >= pp_size: " +
           std::to_string(l.grad_accum(s.training.global_batch)) + " micro-batches for pp " + std::to_string(l.pp);
  if (!automodel_stages(s.model.layers, l.pp, l.virtual_stages))
    return "no distributed.pipeline.layers_per_stage gives " + std::to_string(l.pp * l.virtual_stages) + " stages of " +
           std::to_string(s.model.layers) + " layers (pipelining/functional.py calculate_virtual_stages)";
  return "";
}

std::string moe_problem(const Scenario& s, const Layout& l) {
  if (!s.model.is_moe()) return "";
  // _transformers/capabilities.py:373-384: "Expert parallelism (ep_size=...) requires a MoE model, but ... does not
  // inherit from MoEFSDPSyncMixin", true of every architecture outside registry.py's MODEL_ARCH_MAPPING.
  if (l.ep > 1 && !automodel_custom_moe(s.model.name)) {
    const std::string arch = automodel_architecture(s.model.name);
    return "expert parallelism needs one of its own MoE models (_transformers/registry.py); " +
           (arch.empty() ? s.model.name + " is not a preset it is known to build"
                         : s.model.name + " (" + arch + ") runs HF's implementation") +
           ", which refuses ep_size > 1 (capabilities.py): plan ep 1";
  }
  // components/moe/parallelizer.py parallelize_model: "Tensor parallelism not supported for custom MoE models".
  if (l.tp > 1) return "\"Tensor parallelism not supported for custom MoE models\" (moe/parallelizer.py): plan tp 1";
  if (l.etp > 1) return "has no expert tensor parallelism (no such distributed key): plan etp 1";
  if (s.model.moe_capacity_factor > 0)
    return "its MoE layers are dropless (MoEConfig has no capacity factor): plan moe_capacity_factor 0";
  // The MoE mesh folds ep_size over dp * cp * tp (mesh_utils.py: non_pp_size % ep_size == 0).
  if ((long(l.dp) * l.cp * l.tp) % l.ep != 0) return "ep_size must divide dp_size * cp_size * tp_size";
  return "";
}

}  // namespace

std::string automodel_problem(const Scenario& s, const Layout& l) {
  // distributed.strategy ddp: mesh_utils.py _require_size_one("ddp", tp/pp/cp/ep); _dist_utils.py: "selective
  // activation checkpointing is supported only for FSDP2 configs".
  if (l.zero_stage == 0 && (l.tp > 1 || l.pp > 1 || l.cp > 1 || l.ep > 1))
    return "data parallelism by replication (distributed.strategy ddp) \"does not support\" tensor, pipeline, "
           "context or expert parallelism (mesh_utils.py); shard it (zero_stage 2 or 3: fsdp2)";
  // Per-layer compile is FSDP2Config.enable_compile (components/distributed/config.py:224); DDPConfig has no such
  // field, and the plan turns the recipe's whole-model compile off: ddp would run eager where compile is priced.
  if (l.zero_stage == 0 && s.training.compile.value_or(false))
    return "compile with data parallelism by replication: distributed.enable_compile is an FSDP2 option only "
           "(DDPConfig has none); zero_stage 2 or 3";
  if (l.zero_stage == 0 && l.recompute == Recompute::Selective)
    return "\"selective activation checkpointing is supported only for FSDP2 configs\": zero_stage 2 or 3";
  // mesh_utils.py: "dp_replicate_size=... must be less than dp_size ... since DDP usecase is not supported by FSDP2";
  // FSDP2 shards over dp_shard x cp, so a sharding scope is a multiple of cp.
  if (l.zero_stage >= 2 && l.shard_group > 0 && automodel_dp_shard(l) == 0)
    return "a sharding scope (shard_group " + std::to_string(l.shard_group) +
           ") must be cp times a divisor of dp above 1: FSDP2 shards over dp_shard x cp and dp_replicate_size must "
           "be less than dp_size";
  if (std::string why = pipeline_problem(s, l); !why.empty()) return why;
  return moe_problem(s, l);
}

}  // namespace paratune::advisor
