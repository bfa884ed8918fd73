// NeMo 2 recipe overrides for NeMo-Run (`nemo llm pretrain --factory RECIPE <overrides>`): MegatronStrategy,
// MegatronMixedPrecision, the data module and the Megatron-Core model config. Keys: tests/contracts/nemo--2.4.json.
#include "adapters.h"

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
  }
  if (v.tp_overlap()) set("model.config.tp_comm_overlap", "true");
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
