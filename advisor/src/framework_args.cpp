// Framework arguments for a plan. Flag names: Megatron-LM arguments.py (core_r0.9+), DeepSpeed config docs,
// torchtitan JobConfig ([parallelism], [training], [activation_checkpoint]), NeMo 2 MegatronStrategy fields.
#include "paratune/advisor/framework_args.h"

#include <sstream>

#include "paratune/advisor/catalog.h"

namespace paratune::advisor {

FrameworkArgs framework_args(const Scenario& s, const Plan& plan) {
  const Layout& l = plan.layout;
  const ModelSpec& m = s.model;
  const TrainingSpec& tr = s.training;
  const GpuSpec g = effective_gpu(s.cluster);
  const bool hopper_plus = g.arch == GpuArch::Hopper || g.arch == GpuArch::Blackwell;
  const int accum = l.grad_accum(tr.global_batch);
  FrameworkArgs a;
  a.primary = to_string(plan.framework);

  // --- Megatron-LM ---------------------------------------------------------------------------------------------
  {
    std::ostringstream o;
    o << "--tensor-model-parallel-size " << l.tp << " --pipeline-model-parallel-size " << l.pp;
    if (l.cp > 1) o << " --context-parallel-size " << l.cp;
    if (l.pp > 1 && l.virtual_stages > 1) {
      const int per = (m.layers % l.pp == 0 ? m.layers : m.layers + 2) / l.pp;
      o << " --num-layers-per-virtual-pipeline-stage " << per / l.virtual_stages;
    }
    if (l.pp > 1 && m.layers % l.pp != 0)
      o << " --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split";
    if (l.sequence_parallel && l.tp > 1) o << " --sequence-parallel";
    o << " --micro-batch-size " << l.micro_batch << " --global-batch-size " << tr.global_batch;
    if (l.zero_stage == 1) o << " --use-distributed-optimizer";
    if (l.zero_stage >= 3) o << " --use-megatron-fsdp --data-parallel-sharding-strategy optim_grads_params";
    if (l.dp * l.cp > 1 && tr.overlap_dp_comm.value_or(true)) {
      o << " --overlap-grad-reduce";
      if (l.zero_stage == 1) o << " --overlap-param-gather";
    }
    if (l.tp > 1 && l.sequence_parallel && hopper_plus) o << " --tp-comm-overlap";
    if (l.recompute == Recompute::Selective) o << " --recompute-activations";
    if (l.recompute == Recompute::Full)
      o << " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1";
    if (tr.precision == Precision::Fp16) o << " --fp16";
    else o << " --bf16";
    if (tr.precision == Precision::Fp8) o << " --fp8-format hybrid --fp8-amax-history-len 1024 --fp8-amax-compute-algo max";
    if (tr.flash_attention.value_or(true)) o << " --use-flash-attn";
    o << " --seq-length " << m.seq_len;
    a.megatron = o.str();
  }
  // --- NeMo 2 (MegatronStrategy / data module overrides) -------------------------------------------------------------
  {
    std::ostringstream o;
    o << "trainer.strategy.tensor_model_parallel_size=" << l.tp
      << " trainer.strategy.pipeline_model_parallel_size=" << l.pp
      << " trainer.strategy.context_parallel_size=" << l.cp
      << " trainer.strategy.virtual_pipeline_model_parallel_size=" << (l.virtual_stages > 1 ? std::to_string(l.virtual_stages) : "null")
      << " trainer.strategy.sequence_parallel=" << (l.sequence_parallel && l.tp > 1 ? "true" : "false")
      << " data.micro_batch_size=" << l.micro_batch << " data.global_batch_size=" << tr.global_batch
      << " optim.config.use_distributed_optimizer=" << (l.zero_stage >= 1 ? "true" : "false");
    if (l.recompute == Recompute::Full)
      o << " model.config.recompute_granularity=full model.config.recompute_method=uniform model.config.recompute_num_layers=1";
    else if (l.recompute == Recompute::Selective)
      o << " model.config.recompute_granularity=selective";
    if (l.tp > 1 && l.sequence_parallel && hopper_plus) o << " model.tp_comm_overlap=true";
    a.nemo = o.str();
  }
  // --- DeepSpeed config ------------------------------------------------------------------------------------------
  {
    std::ostringstream o;
    o << "{\n  \"train_batch_size\": " << tr.global_batch << ",\n  \"train_micro_batch_size_per_gpu\": " << l.micro_batch
      << ",\n  \"gradient_accumulation_steps\": " << accum << ",\n";
    if (tr.precision == Precision::Fp16)
      o << "  \"fp16\": {\"enabled\": true, \"loss_scale\": 0, \"initial_scale_power\": 16},\n";
    else
      o << "  \"bf16\": {\"enabled\": true},\n";
    o << "  \"zero_optimization\": {\n    \"stage\": " << l.zero_stage
      << ",\n    \"overlap_comm\": true,\n    \"contiguous_gradients\": true,\n    \"reduce_scatter\": true,\n"
      << "    \"reduce_bucket_size\": 200000000,\n    \"allgather_bucket_size\": 200000000";
    if (l.zero_stage >= 3)
      o << ",\n    \"stage3_prefetch_bucket_size\": 50000000,\n    \"stage3_param_persistence_threshold\": 100000,\n"
        << "    \"stage3_max_live_parameters\": 1000000000";
    o << "\n  },\n";
    if (l.recompute != Recompute::None)
      o << "  \"activation_checkpointing\": {\"partition_activations\": " << (l.tp > 1 ? "true" : "false")
        << ", \"contiguous_memory_optimization\": false, \"cpu_checkpointing\": false},\n";
    o << "  \"gradient_clipping\": 1.0,\n  \"steps_per_print\": 100,\n  \"wall_clock_breakdown\": false\n}\n";
    a.deepspeed_json = o.str();
  }
  // --- torchtitan ------------------------------------------------------------------------------------------------
  {
    int shard = l.dp, replicate = 1;
    if (l.zero_stage == 0) { shard = 1; replicate = l.dp; }
    else if (l.shard_group > 0) {
      shard = l.shard_group % l.cp == 0 ? l.shard_group / l.cp : l.shard_group;
      if (shard < 1 || l.dp % shard) shard = l.dp;
      replicate = l.dp / shard;
    }
    std::ostringstream o;
    o << "[parallelism]\ndata_parallel_replicate_degree = " << replicate << "\ndata_parallel_shard_degree = " << shard
      << "\ntensor_parallel_degree = " << l.tp << "\npipeline_parallel_degree = " << l.pp
      << "\ncontext_parallel_degree = " << l.cp << "\n";
    if (l.pp > 1) {
      o << "pipeline_parallel_schedule = \"" << (l.virtual_stages > 1 ? "Interleaved1F1B" : "1F1B") << "\"\n"
        << "pipeline_parallel_microbatch_size = " << l.micro_batch << "\n";
    }
    if (l.tp > 1) o << "enable_async_tensor_parallel = " << (hopper_plus ? "true" : "false") << "\n";
    o << "\n[training]\nlocal_batch_size = " << tr.global_batch / l.dp / accum * (l.pp > 1 ? accum : 1)
      << "\nglobal_batch_size = " << tr.global_batch << "\nseq_len = " << m.seq_len << "\nmixed_precision_param = \""
      << (tr.precision == Precision::Fp16 ? "float16" : "bfloat16") << "\"\n"
      << "\n[activation_checkpoint]\nmode = \"" << to_string(l.recompute) << "\"\n";
    if (l.recompute == Recompute::Selective) o << "selective_ac_option = \"op\"\n";
    if (tr.precision == Precision::Fp8) o << "\n[model]\nconverters = [\"float8\"]\n";
    a.torchtitan_toml = o.str();
  }
  // --- PyTorch FSDP ------------------------------------------------------------------------------------------------
  {
    std::ostringstream o;
    const char* strategy = l.zero_stage >= 3 ? (l.shard_group > 0 ? "HYBRID_SHARD" : "FULL_SHARD")
                           : l.zero_stage == 2 ? (l.shard_group > 0 ? "_HYBRID_SHARD_ZERO2" : "SHARD_GRAD_OP")
                                               : "NO_SHARD";
    o << "sharding_strategy=" << strategy << " activation_checkpointing="
      << (l.recompute == Recompute::Full ? "true" : "false") << " micro_batch_size=" << l.micro_batch
      << " gradient_accumulation_steps=" << accum << " mixed_precision="
      << (tr.precision == Precision::Fp16 ? "fp16" : "bf16") << " limit_all_gathers=true forward_prefetch=true"
      << " backward_prefetch=BACKWARD_PRE";
    a.fsdp = o.str();
  }
  // --- torchrun -----------------------------------------------------------------------------------------------------
  {
    std::ostringstream o;
    o << "--nnodes=" << s.cluster.nodes << " --nproc-per-node=" << s.cluster.gpus_per_node
      << " --rdzv-backend=c10d --rdzv-endpoint=${MASTER_ADDR}:${MASTER_PORT:-29500} --rdzv-id=${SLURM_JOB_ID}";
    a.torchrun = o.str();
  }
  return a;
}

}  // namespace paratune::advisor
