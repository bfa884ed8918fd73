// DeepSpeed config JSON; with framework_version=megatron-deepspeed also the Megatron-DeepSpeed arguments (its
// mpu tells DeepSpeed the data-parallel size, so train_batch_size == micro * accum * dp holds with TP/PP > 1).
// Keys: tests/contracts/deepspeed--<version>.json, megatron-deepspeed--main.json.
#include <sstream>

#include "adapters.h"
#include "paratune/advisor/framework_kernels.h"
#include "paratune/advisor/framework_traits.h"

namespace paratune::advisor::frameworks {

namespace {

std::string config_json(const PlanView& v) {
  const Layout& l = v.l;
  const TrainingSpec& t = v.s.training;
  std::ostringstream o;
  o << "{\n  \"train_batch_size\": " << t.global_batch << ",\n  \"train_micro_batch_size_per_gpu\": " << l.micro_batch
    << ",\n  \"gradient_accumulation_steps\": " << v.accum << ",\n";
  if (t.precision == Precision::Fp16)
    o << "  \"fp16\": {\"enabled\": true, \"loss_scale\": 0, \"initial_scale_power\": 16},\n";
  else
    o << "  \"bf16\": {\"enabled\": true},\n";
  o << "  \"zero_optimization\": {\n    \"stage\": " << l.zero_stage << ",\n    \"overlap_comm\": "
    << (t.overlap_dp_comm.value_or(true) ? "true" : "false")
    << ",\n    \"contiguous_gradients\": true,\n    \"reduce_scatter\": true,\n"
    << "    \"reduce_bucket_size\": 200000000,\n    \"allgather_bucket_size\": 200000000";
  if (l.zero_stage >= 3)
    o << ",\n    \"stage3_prefetch_bucket_size\": 50000000,\n    \"stage3_param_persistence_threshold\": 100000,\n"
      << "    \"stage3_max_live_parameters\": 1000000000";
  o << "\n  },\n";
  // Gradients reduce in the model's dtype unless the plan was priced with fp32 (grad_reduce_fp32).
  if (grad_reduce_fp32(v.s, Framework::DeepSpeed)) o << "  \"communication_data_type\": \"fp32\",\n";
  o << "  \"gradient_clipping\": 1.0,\n  \"steps_per_print\": 100,\n  \"wall_clock_breakdown\": false\n}\n";
  return o.str();
}

std::string megatron_deepspeed_args(const PlanView& v) {
  const Layout& l = v.l;
  const TrainingSpec& t = v.s.training;
  std::vector<std::string> a = {
      "--tensor-model-parallel-size=" + std::to_string(l.tp), "--pipeline-model-parallel-size=" + std::to_string(l.pp),
      "--micro-batch-size=" + std::to_string(l.micro_batch), "--global-batch-size=" + std::to_string(t.global_batch),
      "--seq-length=" + std::to_string(v.s.model.seq_len), "--deepspeed", "--deepspeed_config=deepspeed.json",
      "--zero-stage=" + std::to_string(l.zero_stage)};
  if (l.pp == 1) a.push_back("--no-pipeline-parallel");  // without it Megatron-DeepSpeed builds a 1-stage PipelineModule
  if (l.sequence_parallel && l.tp > 1) a.push_back("--sequence-parallel");
  // Without a --use-flash-attn* flag its ParallelAttention runs the unfused CoreAttention, which stores the score
  // matrices the plan did not price (megatron/model/transformer.py at 4efb479d).
  if (fused_attention_runs(v.s)) a.push_back("--use-flash-attn-v2");
  if (l.recompute == Recompute::Selective) a.push_back("--recompute-granularity=selective");
  if (l.recompute == Recompute::Full)
    for (const char* f : {"--recompute-granularity=full", "--recompute-method=uniform", "--recompute-num-layers=1"})
      a.push_back(f);
  a.push_back(t.precision == Precision::Fp16 ? "--fp16" : "--bf16");
  return argv_lines(a);
}

}  // namespace

void deepspeed(const PlanView& v, FrameworkArgs& out) {
  const bool megatron_ds = v.version.id == "megatron-deepspeed";
  out.files.push_back({"deepspeed.json", config_json(v)});
  if (megatron_ds) {
    out.files.push_back({"megatron-deepspeed.args", megatron_deepspeed_args(v)});
    out.notes.push_back("Megatron-DeepSpeed: pass megatron-deepspeed.args to pretrain_gpt.py (mapfile -t ARGS < FILE; "
                        "\"${ARGS[@]}\"); it names deepspeed.json relative to the plan directory: add "
                        "--deepspeed_config \"$PARATUNE_ARGS\" after it (etc/examples/deepspeed.sbatch)");
  } else {
    out.notes.push_back("deepspeed.initialize(model=..., config=$PARATUNE_ARGS): the model, optimizer and data stay "
                        "yours; tp = pp = 1 in this version (Megatron-DeepSpeed for model parallelism)");
    if (v.l.recompute != Recompute::None)
      out.notes.push_back(std::string("the plan assumes ") + to_string(v.l.recompute) +
                          " activation recompute (PARATUNE_RECOMPUTE): checkpoint your model's transformer layers "
                          "(torch.utils.checkpoint or deepspeed.checkpointing.checkpoint; DeepSpeed's config does not "
                          "do it for you); without it the memory plan does not hold");
    if (fused_attention_runs(v.s))
      out.notes.push_back("the plan assumes a fused attention kernel (FlashAttention-2 or torch's "
                          "scaled_dot_product_attention) in your model; give flash_attention=no to plan for an "
                          "unfused one");
  }
}

}  // namespace paratune::advisor::frameworks
