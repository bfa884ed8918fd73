// NeMo AutoModel 0.5.0: the plan as the command-line overrides its recipes take after --config RECIPE.yaml
// (components/config/_arg_parser.py parse_cli_argv: "--dotted.path=value", applied with ConfigNode.set_by_dotted,
// values read by translate_value: true/false/None and Python literals). One override a line (argv_lines), so the
// recipe's own YAML keeps the model, data and optimizer; the plan's keys replace whatever the YAML says.
// Names: tests/contracts/automodel--v0.5.0.json.
#include "adapters.h"
#include "paratune/advisor/automodel_stages.h"
#include "../pipeline_schedule.h"
#include "paratune/advisor/framework_kernels.h"

namespace paratune::advisor::frameworks {

namespace {

const char* yes(bool b) { return b ? "true" : "false"; }

bool async_tp(const PlanView& v) { return v.tp_overlap(); }  // compiled layers only: tp_comm_overlap_runs

// step_scheduler.local_batch_size is one rank's batch per forward under data parallelism and the whole pipeline
// batch (split into pp_microbatch_size micro-batches) under pipelining (train_ft.py: pp_batch_size =
// local_batch_size); grad_acc_steps = global / (local * dp) (step_scheduler.py).
int local_batch(const PlanView& v) { return v.l.pp > 1 ? v.l.micro_batch * v.accum : v.l.micro_batch; }

void parallel_sizes(const PlanView& v, const std::function<void(const std::string&, const std::string&)>& set) {
  const Layout& l = v.l;
  const bool fsdp2 = l.zero_stage >= 2;
  set("distributed.strategy", fsdp2 ? "fsdp2" : "ddp");
  set("distributed.dp_size", std::to_string(l.dp));
  // Written for ddp too: a recipe's dp_replicate_size > 1 fails there ("dp_replicate_size is only supported with
  // FSDP2Config", components/distributed/mesh_utils.py:69-74).
  const int shard = automodel_dp_shard(l);
  set("distributed.dp_replicate_size", std::to_string(fsdp2 && shard > 0 ? l.dp / shard : 1));
  set("distributed.tp_size", std::to_string(l.tp));
  set("distributed.cp_size", std::to_string(l.cp));
  set("distributed.pp_size", std::to_string(l.pp));
  set("distributed.ep_size", std::to_string(l.ep));
  if (fsdp2 && l.tp > 1) set("distributed.sequence_parallel", yes(l.sequence_parallel));
  // ZeRO-3 reshards the gathered parameters after forward, ZeRO-2 keeps them (FSDP2Config.reshard_after_forward;
  // AutoModel's own default keeps them under pipelining). MoE models with ep > 1 are sharded by the MoE parallelizer,
  // whose setting is distributed.moe.reshard_after_forward (default false).
  if (fsdp2)
    set(l.ep > 1 ? "distributed.moe.reshard_after_forward" : "distributed.reshard_after_forward",
        yes(l.zero_stage >= 3));
  const char* ac = l.recompute == Recompute::Full        ? "true"
                   : l.recompute == Recompute::Selective ? "selective"
                                                         : "false";
  set("distributed.activation_checkpointing", ac);
  // Compile as priced, whatever the recipe says: FSDP2Config.enable_compile (per-layer, an FSDP2 field only,
  // components/distributed/config.py:224) true or false, and the recipe's whole-model compile section off
  // (recipes/llm/train_ft.py:788 cfg.get("compile") -> components/utils/compile_utils.py CompileConfig.enabled).
  if (fsdp2) set("distributed.enable_compile", yes(v.s.training.compile.value_or(false)));
  set("compile.enabled", "false");
  if (fsdp2 && l.tp > 1) set("distributed.enable_async_tensor_parallel", yes(async_tp(v)));
}

void pipeline(const PlanView& v, const std::function<void(const std::string&, const std::string&)>& set) {
  const Layout& l = v.l;
  if (l.pp < 2) return;
  set("distributed.pipeline.pp_schedule", torchtitan_schedule_name(schedule_of(l)));
  set("distributed.pipeline.pp_microbatch_size", std::to_string(l.micro_batch));
  // Always written, None included: a recipe's own layers_per_stage would change the stage count.
  const AutomodelStages st = automodel_stages(v.s.model.layers, l.pp, l.virtual_stages).value_or(AutomodelStages{});
  set("distributed.pipeline.layers_per_stage", st.layers_per_stage > 0 ? std::to_string(st.layers_per_stage) : "None");
  set("distributed.pipeline.round_virtual_stages_to_pp_multiple", st.round.empty() ? "None" : st.round);
  // A recipe's schedule file or explicit stage layout would win over the schedule and split above
  // (pipelining/functional.py:690-695 uses pp_schedule_csv before pp_schedule; :529 module_fqns_per_model_part before
  // the even split): both None.
  set("distributed.pipeline.pp_schedule_csv", "None");
  set("distributed.pipeline.module_fqns_per_model_part", "None");
}

// The token dispatcher and the experts' GEMMs (model.backend, BackendConfig): "torch" is the all-gather dispatcher;
// torch._grouped_mm experts ("torch_mm") run with every dispatcher. Only AutoModel's own MoE models read
// model.backend (_transformers/model_init.py:925-929); HF's from_config would get them as unknown keyword arguments
// (model_init.py:957-981).
void moe(const PlanView& v, const std::function<void(const std::string&, const std::string&)>& set) {
  if (!v.s.model.is_moe() || !automodel_custom_moe(v.s.model.name)) return;
  const char* dispatcher = v.l.dispatcher == Dispatcher::Flex
                               ? to_string(flex_backend(v.s, Framework::Automodel).value_or(Kernel::DeepEP))
                               : "torch";
  set("model.backend.dispatcher", dispatcher);
  set("model.backend.experts", "torch_mm");
}

}  // namespace

void automodel(const PlanView& v, FrameworkArgs& out) {
  std::vector<std::string> argv;
  const auto set = [&argv](const std::string& key, const std::string& value) {
    argv.push_back("--" + key + "=" + value);
  };
  parallel_sizes(v, set);
  pipeline(v, set);
  set("step_scheduler.local_batch_size", std::to_string(local_batch(v)));
  set("step_scheduler.global_batch_size", std::to_string(v.s.training.global_batch));
  moe(v, set);
  out.files.push_back({"automodel.args", argv_lines(argv)});
  const std::string model = v.s.model.name, seq = std::to_string(v.s.model.seq_len);
  out.notes.push_back("automodel.args: overrides for your recipe YAML (torchrun ... -m nemo_automodel.recipes.llm."
                      "train_ft --config RECIPE.yaml \"${ARGS[@]}\"); the model (" + model + "), sequence length (" +
                      seq + "), data and optimizer stay the recipe's");
  // The model's dtype stays the recipe's, and AutoModel's default is not what the memory model prices.
  out.notes.push_back("automodel.args: memory planned for fp32 parameters, gradients and AdamW moments (4 + 4 + 8 "
                      "bytes a parameter): set model.torch_dtype: float32 in the recipe (with FSDP2's default "
                      "mixed precision, bf16 compute and fp32 reduction: components/distributed/config.py); "
                      "AutoModel's default torch_dtype \"auto\" keeps bf16 parameters and so bf16 moments "
                      "(_transformers/auto_model.py), less memory than planned but no fp32 master weights");
  if (v.s.model.is_moe() && !automodel_custom_moe(v.s.model.name))
    out.notes.push_back("automodel.args: " + model + " is not one of AutoModel 0.5.0's own MoE models "
                        "(_transformers/registry.py), so it runs HF's implementation: no expert parallelism and no "
                        "model.backend dispatcher or experts settings");
  if (v.l.zero_stage < 2)
    out.notes.push_back("distributed.strategy=ddp: its DDPConfig takes none of FSDP2's options (sequence_parallel, "
                        "mp_policy, reshard_after_forward, ...); drop them from the recipe's distributed section, "
                        "which AutoModel refuses as \"Unknown options for strategy 'ddp'\"");
}

}  // namespace paratune::advisor::frameworks
