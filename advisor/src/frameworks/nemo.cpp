// NeMo 2 recipe overrides for NeMo-Run (`nemo llm pretrain --factory RECIPE <overrides>`): MegatronStrategy,
// MegatronMixedPrecision, the data module and the Megatron-Core model config. Keys: tests/contracts/nemo--2.4.json.
#include "adapters.h"
#include "paratune/advisor/loss_fusion.h"

namespace paratune::advisor::frameworks {

void nemo(const PlanView& v, FrameworkArgs& out) {
  const Layout& l = v.l;
  const TrainingSpec& t = v.s.training;
  std::vector<std::string> o;
  auto set = [&](const std::string& key, const std::string& value) { o.push_back(key + "=" + value); };
  const auto b = [](bool x) { return std::string(x ? "true" : "false"); };
  set("trainer.strategy.tensor_model_parallel_size", std::to_string(l.tp));
  set("trainer.strategy.pipeline_model_parallel_size", std::to_string(l.pp));
  set("trainer.strategy.context_parallel_size", std::to_string(l.cp));
  const bool layout = explicit_pipeline_layout(v.s, l);  // an uneven or planned split: one explicit layout
  set("trainer.strategy.virtual_pipeline_model_parallel_size",
      l.pp > 1 && l.virtual_stages > 1 && !layout ? std::to_string(l.virtual_stages) : "null");
  if (layout) set("trainer.strategy.pipeline_model_parallel_layout", pipeline_layout(v.s, l));
  set("trainer.strategy.sequence_parallel", b(l.sequence_parallel && l.tp > 1));
  if (v.uneven_pipeline && !layout) {  // Megatron-Core asserts (layers + embedding + loss) % pp == 0
    set("trainer.strategy.account_for_embedding_in_pipeline_split", "true");
    set("trainer.strategy.account_for_loss_in_pipeline_split", "true");
  }
  set("data.micro_batch_size", std::to_string(l.micro_batch));
  set("data.global_batch_size", std::to_string(t.global_batch));
  set("data.seq_length", std::to_string(v.s.model.seq_len));
  set("model.config.seq_length", std::to_string(v.s.model.seq_len));
  set("optim.config.use_distributed_optimizer", b(l.zero_stage >= 1));
  // The sharding scope: MegatronStrategy's own field, which NeMo passes to Megatron-Core's parallel state and copies
  // into the DDP config (nemo/lightning/pytorch/strategies/megatron_strategy.py); the ddp.* key alone would leave
  // the parallel state without the instance groups.
  if (const int n = l.optimizer_instances(); n > 1)
    set("trainer.strategy.num_distributed_optimizer_instances", std::to_string(n));
  if (l.zero_stage >= 3) {  // full sharding: Megatron-FSDP, not only the distributed optimizer
    set("trainer.strategy.fsdp", "megatron");
    set("trainer.strategy.ddp.data_parallel_sharding_strategy", "optim_grads_params");
  }
  if (l.recompute == Recompute::Full) {
    set("model.config.recompute_granularity", "full");
    set("model.config.recompute_method", "uniform");
    set("model.config.recompute_num_layers", "1");
  } else if (l.recompute == Recompute::Selective) {
    set("model.config.recompute_granularity", "selective");
    // A Python list literal (NeMo-Run's TypeParser.parse_list: ast.literal_eval).
    if (const auto modules = v.recompute_module_names(); !modules.empty()) {
      std::string list;
      for (const std::string& m : modules) list += (list.empty() ? "'" : ",'") + m + "'";
      set("model.config.recompute_modules", "[" + list + "]");
    }
  }
  if (l.offload_layers > 0) {  // Megatron-Core's layer-wise activation offload (TransformerConfig cpu_offloading)
    set("model.config.cpu_offloading", "true");
    set("model.config.cpu_offloading_num_layers", std::to_string(l.offload_layers));
    set("model.config.cpu_offloading_activations", "true");
    set("model.config.cpu_offloading_weights", "false");
  }
  if (l.precision_aware_optimizer()) {
    // NeMo-Run's command line has no parser for torch.dtype fields (TypeParser: int, float, str, bool, list,
    // dict, ...): the switch is set here, the dtypes must come from the recipe.
    set("optim.config.use_precision_aware_optimizer", "true");
    out.notes.push_back(std::string("the plan keeps Adam's moments in ") + to_string(l.optimizer_moments) +
                        " and main parameters in " + to_string(l.main_params) +
                        ": NeMo-Run's command line cannot set torch.dtype fields, so set optim.config.exp_avg_dtype "
                        "and exp_avg_sq_dtype = torch." + (l.optimizer_moments == StateDtype::Bf16 ? "bfloat16"
                        : l.optimizer_moments == StateDtype::Fp16 ? "float16" : l.optimizer_moments == StateDtype::Fp8
                        ? "uint8" : "float32") + ", main_params_dtype = torch." +
                        (l.main_params == StateDtype::Fp16 ? "float16" : "float32") +
                        " in your recipe (the memory plan assumes them)");
  }
  // TP communication overlap is MegatronCommOverlapCallback's in NeMo 2.4: its setup() resets
  // model.config.tp_comm_overlap to the callback's own tp_comm_overlap (False unless given) and only it initialises
  // Transformer Engine's userbuffers (on_fit_start), so an override here would be undone, or without the callback
  // fail in the first forward (nemo/lightning/pytorch/callbacks/megatron_comm_overlap.py at v2.4.0).
  if (v.tp_overlap())
    out.notes.push_back("the plan assumes TP communication overlap: in NeMo 2 it is "
                        "MegatronCommOverlapCallback(tp_comm_overlap=True) among the recipe's trainer callbacks (the "
                        "performance recipes add it); without it TP traffic is exposed and the job runs slower than "
                        "predicted (give tp_comm_overlap=no to plan for that)");
  // Stated on: the kernel with it; stated off: said so, since the recipe may fuse.
  if (const LossFusion loss = planned_loss_fusion(v.s); loss != LossFusion::Off) {
    set("model.config.cross_entropy_loss_fusion", "true");
    set("model.config.cross_entropy_fusion_impl", to_string(loss));
  } else if (t.cross_entropy_fusion) {
    set("model.config.cross_entropy_loss_fusion", "false");
  }
  set("trainer.plugins.precision", t.precision == Precision::Fp16 ? "16-mixed" : "bf16-mixed");
  if (t.precision == Precision::Fp8) {
    set("trainer.plugins.fp8", "hybrid");
    set("trainer.plugins.fp8_recipe", fp8_recipe_name(v.s));
  }
  if (v.s.cluster.lacks(Kernel::TransformerEngine)) set("model.config.transformer_impl", "local");
  nemo_moe(v, set);
  out.files.push_back({"nemo.args", argv_lines(o)});
  out.notes.push_back("the recipe (--factory, e.g. llama3_8b) gives the model, tokenizer and data; paratune's "
                      "overrides only set parallelism, batch, sequence length, precision and recompute");
}

}  // namespace paratune::advisor::frameworks
