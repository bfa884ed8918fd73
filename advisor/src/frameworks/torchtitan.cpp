// torchtitan: v0.2.x reads a TOML job config (JobConfig sections), main a Python config function plus the frozen
// --section.option CLI. Names: tests/contracts/torchtitan--<version>.json.
#include <sstream>

#include "adapters.h"
#include "../pipeline_schedule.h"
#include "../torchtitan_split.h"
#include "torchtitan_degrees.h"

namespace paratune::advisor::frameworks {

namespace {

// Planned ZeRO-3 with a pipeline: torchtitan's default ("default") keeps each stage's gathered parameters from the
// forward to the backward when pp > 1 (reshard_after_forward = not pp_enabled: models/llama3/infra/parallelize.py
// at v0.2.2, distributed/fsdp.py at main), which the plan's ZeRO-3 memory does not hold; "always" is what it prices.
bool reshard_always(const Layout& l, const Degrees& d) { return l.pp > 1 && l.zero_stage >= 3 && d.shard > 1; }

// torchtitan v0.2 model names and flavors for the presets it ships (torchtitan/models/__init__.py _supported_models;
// each model's flavors in torchtitan/models/<name>/__init__.py at v0.2.2).
std::pair<std::string, std::string> model_flavor(const std::string& preset) {
  static const std::pair<const char*, std::pair<const char*, const char*>> kFlavors[] = {
      {"llama3-8b", {"llama3", "8B"}},           {"llama3-70b", {"llama3", "70B"}},
      {"llama3-405b", {"llama3", "405B"}},       {"qwen3-30b-a3b", {"qwen3", "30B-A3B"}},
      {"qwen3-235b-a22b", {"qwen3", "235B-A22B"}}, {"deepseek-v3", {"deepseek_v3", "671B"}},
      {"gpt-oss-20b", {"gpt_oss", "20b"}},       {"gpt-oss-120b", {"gpt_oss", "120b"}}};
  for (const auto& [name, flavor] : kFlavors)
    if (preset == name) return {flavor.first, flavor.second};
  return {"", ""};
}

bool async_tp(const PlanView& v) { return v.tp_overlap(); }  // compiled layers only: tp_comm_overlap_runs

// Tokens per micro-batch per data-parallel rank and per pipeline: local batch as torchtitan counts it.
int local_batch(const PlanView& v) { return v.l.pp > 1 ? v.l.micro_batch * v.accum : v.l.micro_batch; }

std::string toml(const PlanView& v, FrameworkArgs& out) {
  const Layout& l = v.l;
  const Degrees d = dp_degrees(l);
  std::ostringstream o;
  const auto [name, flavor] = model_flavor(v.s.model.name);
  if (!name.empty()) o << "[model]\nname = \"" << name << "\"\nflavor = \"" << flavor << "\"\n";
  else out.notes.push_back("[model] name and flavor: " + v.s.model.name + " is not a torchtitan model preset; set them");
  if (v.s.training.precision == Precision::Fp8) {
    if (name.empty()) o << "[model]\n";
    o << "converters = [\"quantize.linear.float8\"]\n";
  }
  if (o.tellp() > 0) o << "\n";
  o << "[parallelism]\ndata_parallel_replicate_degree = " << d.replicate << "\ndata_parallel_shard_degree = " << d.shard
    << "\ntensor_parallel_degree = " << l.tp << "\npipeline_parallel_degree = " << l.pp
    << "\ncontext_parallel_degree = " << l.cp << "\n";
  if (reshard_always(l, d)) o << "fsdp_reshard_after_forward = \"always\"\n";
  torchtitan_moe_toml(v, o);
  if (l.pp > 1) {
    // The stage count follows from ceil((layers + both weights) / layers_per_stage), so the weights and the
    // layers per stage are written together (torchtitan_stages.h).
    const TorchtitanSplit split = torchtitan_split_of(v.s, l);
    o << "pipeline_parallel_schedule = \"" << torchtitan_schedule_name(schedule_of(l)) << "\"\n"
      << "pipeline_parallel_microbatch_size = " << l.micro_batch << "\n"
      << "pipeline_parallel_first_stage_less_layers = " << split.first_less << "\n"
      << "pipeline_parallel_last_stage_less_layers = " << split.last_less << "\n";
    if (split.layers_per_stage > 0) o << "pipeline_parallel_layers_per_stage = " << split.layers_per_stage << "\n";
  }
  if (l.tp > 1) o << "enable_async_tensor_parallel = " << (async_tp(v) ? "true" : "false") << "\n";
  o << "\n[training]\nlocal_batch_size = " << local_batch(v) << "\nglobal_batch_size = " << v.s.training.global_batch
    << "\nseq_len = " << v.s.model.seq_len << "\nmixed_precision_param = \"bfloat16\"\n";
  o << "\n[activation_checkpoint]\nmode = \"" << to_string(l.recompute) << "\"\n";
  if (l.recompute == Recompute::Selective) o << "selective_ac_option = \"op\"\n";
  if (v.s.training.compile.value_or(false)) o << "\n[compile]\nenable = true\ncomponents = [\"model\", \"loss\"]\n";
  return o.str();
}

std::string cli(const PlanView& v, FrameworkArgs& out) {
  const Layout& l = v.l;
  const Degrees d = dp_degrees(l);
  const long seq = v.s.model.seq_len;
  std::vector<std::string> f = {
      "--parallelism.data_parallel_replicate_degree=" + std::to_string(d.replicate),
      "--parallelism.data_parallel_shard_degree=" + std::to_string(d.shard),
      "--parallelism.tensor_parallel_degree=" + std::to_string(l.tp),
      "--parallelism.pipeline_parallel_degree=" + std::to_string(l.pp),
      "--parallelism.context_parallel_degree=" + std::to_string(l.cp),
      "--training.num_tokens_per_microbatch_per_dp_rank=" + std::to_string(seq * l.micro_batch),
      "--training.num_tokens_per_train_step=" + std::to_string(seq * v.s.training.global_batch),
      "--training.max_context_length=" + std::to_string(seq)};
  if (reshard_always(l, d)) f.push_back("--parallelism.fsdp_reshard_after_forward=always");
  if (l.pp > 1) {
    f.push_back(std::string("--parallelism.pipeline_parallel_schedule=") + torchtitan_schedule_name(schedule_of(l)));
    f.push_back("--parallelism.num_pp_microbatches=" + std::to_string(v.accum));
    const TorchtitanSplit split = torchtitan_split_of(v.s, l);
    f.push_back("--parallelism.pipeline_parallel_first_stage_less_layers=" + std::to_string(split.first_less));
    f.push_back("--parallelism.pipeline_parallel_last_stage_less_layers=" + std::to_string(split.last_less));
    if (split.layers_per_stage > 0)
      f.push_back("--parallelism.pipeline_parallel_layers_per_stage=" + std::to_string(split.layers_per_stage));
  }
  torchtitan_moe_cli(v, f, out.notes);
  if (v.s.training.compile.value_or(false)) f.push_back("--compile.enable");
  if (async_tp(v)) f.push_back("--compile.enable_async_tensor_parallel");
  // Trainer.Config.activation_checkpoint is a tyro subcommand (selective, full, memory-budget, none:
  // distributed/activation_checkpoint.py at main), given after the flags; the model is the config function's.
  out.notes.push_back(std::string("torchtitan main: the plan's activation checkpointing is the subcommand "
                                  "activation-checkpoint:") + to_string(l.recompute) +
                      " after these flags (or Trainer.Config.activation_checkpoint in your config function); the "
                      "model (model_spec) is set in your config function");
  if (v.s.training.precision == Precision::Fp8)
    out.notes.push_back("torchtitan main: FP8 is a model converter in the config function (quantize.linear.float8)");
  return argv_lines(f);
}

}  // namespace

void torchtitan(const PlanView& v, FrameworkArgs& out) {
  if (v.version.id == "main") out.files.push_back({"torchtitan.flags", cli(v, out)});
  else out.files.push_back({"torchtitan.toml", toml(v, out)});
}

}  // namespace paratune::advisor::frameworks
