// The framework-traits table (framework_traits.h). Each row as the pinned sources define it
// (tests/contracts/*.json; docs/frameworks.md):
// - Megatron-LM and NeMo 2 (Megatron-Core): TP, PP with virtual stages and an explicit layout, CP, expert
//   parallelism with every dispatcher (--moe-token-dispatcher-type alltoall | allgather | flex), the distributed
//   optimizer (ZeRO-1), Megatron-FSDP (ZeRO-3) without pipelining, selective recompute by default. The distributed
//   optimizer can shard within a part of the data-parallel ranks and replicate across the parts
//   (--num-distributed-optimizer-instances; NeMo: MegatronStrategy(num_distributed_optimizer_instances)).
// - DeepSpeed: ZeRO 0-3 without pipelining, 0-1 with its pipeline engine (Megatron-DeepSpeed), no CP.
// - PyTorch FSDP: sharding only (FULL_SHARD / SHARD_GRAD_OP / NO_SHARD, HYBRID_SHARD), full activation
//   checkpointing only.
// - torchtitan: FSDP2 (or DDP) with TP, PP (interleaved schedules), CP and EP; HSDP through
//   data_parallel_replicate_degree; all-to-all or DeepEP/HybridEP dispatch.
// - NeMo AutoModel 0.5.0 (github:NVIDIA-NeMo/Automodel v0.5.0 = d02f49cb3145; tests/contracts/automodel--v0.5.0.json):
//   distributed.strategy fsdp2 (FSDP2 per parameter; reshard_after_forward false is its "ZeRO-2-like" mode,
//   components/distributed/config.py:185-188) or ddp, which refuses tp, pp, cp and ep > 1 (mesh_utils.py:91-96).
//   FSDP2's mesh is (pp, dp_replicate, dp_shard, cp, tp) (mesh_utils.py:216-230): HSDP through dp_replicate_size
//   (FSDP2 only, mesh_utils.py:69-74), CP, TP, PP; the MoE mesh folds ep_size over the non-pipeline ranks
//   (mesh_utils.py:210-213). No ZeRO-1 and no expert TP. activation_checkpointing true (full) or "selective" (FSDP2
//   only: recipes/_dist_utils.py:160). MoE dispatch (model.backend.dispatcher, models/common/utils.py:203): "torch"
//   (GroupedExperts.forward, moe/experts.py:258-403: an all-gather of the EP group's tokens, :355, and an fp32
//   all-reduce of the outputs, :399: the allgather dispatcher) or DeepEP / HybridEP (flex); no NCCL all-to-all
//   dispatcher.
// Pipeline schedules: Megatron-Core (and NeMo on it) runs 1F1B and interleaved 1F1B only
// (megatron/core/pipeline_parallel/schedules.py at core_v0.14.0, core_v0.15.3 and the pinned main:
// forward_backward_pipelining_without/with_interleaving); DeepSpeed's pipeline engine its own 1F1B-like
// TrainSchedule; torchtitan any torch.distributed.pipelining schedule by name (get_schedule_class: GPipe, 1F1B,
// Interleaved1F1B, LoopedBFS, InterleavedZeroBubble, ZBVZeroBubble, DualPipeV; both pinned torchtitan versions
// import ScheduleZBVZeroBubble and ScheduleDualPipeV), and AutoModel the same by distributed.pipeline.pp_schedule
// (pipelining/functional.py:492 and :695, get_schedule_class; the V style for ZBVZeroBubble, :644-645). Priced here:
// 1F1B, interleaved, GPipe, zero bubble, ZBV.
#include "paratune/advisor/framework_traits.h"

#include <algorithm>

namespace paratune::advisor {

namespace {

using D = Dispatcher;
using S = PipelineSchedule;

const std::vector<FrameworkTraits>& table() {
  static const std::vector<FrameworkTraits> rows = [] {
    FrameworkTraits megatron;
    megatron.framework = Framework::Megatron;
    megatron.megatron_core = megatron.tensor_pipeline = megatron.context_parallel = megatron.interleaving = true;
    megatron.expert_parallel = megatron.stage_layout = megatron.selective_recompute = true;
    megatron.zero1_scope = true;
    megatron.zero_stages = {0, 1, 3};
    megatron.zero_stages_with_pp = {0, 1};
    megatron.dispatchers = {D::AllToAll, D::AllGather, D::Flex};
    megatron.schedules = {S::OneFOneB, S::Interleaved};
    megatron.default_zero = 1;  // the distributed optimizer
    megatron.default_recompute = Recompute::Selective;
    FrameworkTraits nemo = megatron;
    nemo.framework = Framework::Nemo;

    FrameworkTraits deepspeed;
    deepspeed.framework = Framework::DeepSpeed;
    deepspeed.tensor_pipeline = deepspeed.selective_recompute = true;
    deepspeed.zero_stages = {0, 1, 2, 3};
    deepspeed.zero_stages_with_pp = {0, 1};  // the pipeline engine runs ZeRO 0/1 only
    deepspeed.default_zero = 1;
    deepspeed.schedules = {S::OneFOneB};

    FrameworkTraits fsdp;
    fsdp.framework = Framework::Fsdp;
    fsdp.hybrid_shard = true;
    fsdp.zero_stages = {0, 2, 3};
    fsdp.default_zero = 3;

    FrameworkTraits torchtitan;
    torchtitan.framework = Framework::Torchtitan;
    torchtitan.tensor_pipeline = torchtitan.context_parallel = torchtitan.interleaving = true;
    torchtitan.expert_parallel = torchtitan.hybrid_shard = torchtitan.selective_recompute = true;
    torchtitan.zero_stages = torchtitan.zero_stages_with_pp = {0, 3};
    torchtitan.dispatchers = {D::AllToAll, D::Flex};
    torchtitan.schedules = {S::OneFOneB, S::Interleaved, S::GPipe, S::ZeroBubble, S::Zbv};
    torchtitan.default_zero = 3;

    FrameworkTraits automodel;
    automodel.framework = Framework::Automodel;
    automodel.tensor_pipeline = automodel.context_parallel = automodel.interleaving = true;
    automodel.expert_parallel = automodel.hybrid_shard = automodel.selective_recompute = true;
    automodel.zero_stages = {0, 2, 3};       // ddp; fsdp2 keeping or resharding the gathered parameters
    automodel.zero_stages_with_pp = {2, 3};  // ddp has no pipeline parallelism
    automodel.dispatchers = {D::AllGather, D::Flex};
    automodel.schedules = torchtitan.schedules;
    automodel.default_zero = 3;
    return std::vector<FrameworkTraits>{megatron, nemo, deepspeed, fsdp, torchtitan, automodel};
  }();
  return rows;
}

template <class T>
bool has(const std::vector<T>& v, T x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

const FrameworkTraits& traits(Framework f) {
  for (const FrameworkTraits& t : table())
    if (t.framework == f) return t;
  return table().front();  // unreachable: every Framework has a row (FrameworkTraits.EveryFrameworkHasARow)
}

bool runs_zero(Framework f, int zero_stage, int pp) {
  const FrameworkTraits& t = traits(f);
  return has(pp > 1 ? t.zero_stages_with_pp : t.zero_stages, zero_stage);
}

bool runs_recompute(Framework f, Recompute r) { return r != Recompute::Selective || traits(f).selective_recompute; }

bool runs_dispatcher(Framework f, Dispatcher d) { return has(traits(f).dispatchers, d); }

bool runs_schedule(Framework f, PipelineSchedule p) { return has(traits(f).schedules, p); }

bool runs_shard_scope(Framework f, int zero_stage) {
  return zero_stage >= 2 ? traits(f).hybrid_shard : zero_stage == 1 && traits(f).zero1_scope;
}

bool grad_reduce_fp32(const Scenario& s, Framework f) {
  const bool pytorch_native = f == Framework::Fsdp || f == Framework::Torchtitan || f == Framework::Automodel;
  return s.training.grad_reduce_fp32.value_or(pytorch_native);
}

}  // namespace paratune::advisor
