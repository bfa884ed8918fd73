// Plain PyTorch FSDP settings (fsdp.json): the keyword arguments of FullyShardedDataParallel (FSDP1, PyTorch 1.13)
// or fully_shard (FSDP2, PyTorch 2.x) under PyTorch's own names and enum member names, plus a "training" section of
// paratune's own values for the training loop. Names: tests/contracts/pytorch--<version>.json.
#include <sstream>

#include "adapters.h"
#include "paratune/advisor/framework_traits.h"

namespace paratune::advisor::frameworks {

namespace {

const char* dtype(Precision p) { return p == Precision::Fp16 ? "float16" : "bfloat16"; }

// The gradients' reduction dtype the plan was priced with (grad_reduce_fp32: fp32 unless the scenario says not).
const char* reduce_dtype(const PlanView& v) {
  return grad_reduce_fp32(v.s, v.plan.framework) ? "float32" : dtype(v.s.training.precision);
}

std::string training_section(const PlanView& v) {
  std::ostringstream o;
  o << "  \"training\": {\"micro_batch_size\": " << v.l.micro_batch << ", \"gradient_accumulation_steps\": " << v.accum
    << ", \"global_batch_size\": " << v.s.training.global_batch << ", \"data_parallel_size\": " << v.l.dp
    << ", \"seq_len\": " << v.s.model.seq_len << ", \"activation_checkpointing\": \""
    << (v.l.recompute == Recompute::Full ? "full" : "none") << "\"}\n";
  return o.str();
}

std::string fsdp1(const PlanView& v) {
  const Layout& l = v.l;
  const char* strategy = l.zero_stage >= 3 ? (l.shard_group > 0 ? "HYBRID_SHARD" : "FULL_SHARD")
                         : l.zero_stage == 2 ? (l.shard_group > 0 ? "_HYBRID_SHARD_ZERO2" : "SHARD_GRAD_OP")
                                             : "NO_SHARD";
  const bool overlap = v.s.training.overlap_dp_comm.value_or(true);
  std::ostringstream o;
  o << "{\n  \"pytorch\": \"" << v.version.id << "\",\n  \"api\": \"torch.distributed.fsdp.FullyShardedDataParallel\",\n"
    << "  \"FullyShardedDataParallel\": {\"sharding_strategy\": \"" << strategy << "\", \"backward_prefetch\": "
    << (overlap ? "\"BACKWARD_PRE\"" : "null") << ", \"forward_prefetch\": " << (overlap ? "true" : "false")
    << ", \"limit_all_gathers\": true, \"mixed_precision\": {\"param_dtype\": \"" << dtype(v.s.training.precision)
    << "\", \"reduce_dtype\": \"" << reduce_dtype(v) << "\", \"buffer_dtype\": \"" << dtype(v.s.training.precision)
    << "\"}},\n"
    << training_section(v) << "}\n";
  return o.str();
}

std::string fsdp2(const PlanView& v) {
  const Layout& l = v.l;
  const int shard = l.zero_stage == 0 ? 1 : l.shard_group > 0 ? l.shard_group : l.dp;
  std::ostringstream o;
  o << "{\n  \"pytorch\": \"" << v.version.id << "\",\n  \"api\": \"torch.distributed.fsdp.fully_shard\",\n"
    << "  \"device_mesh\": {\"mesh_shape\": [" << l.dp / shard << ", " << shard
    << "], \"mesh_dim_names\": [\"replicate\", \"shard\"]},\n"
    << "  \"fully_shard\": {\"reshard_after_forward\": " << (l.zero_stage >= 3 ? "true" : "false")
    << ", \"mp_policy\": {\"param_dtype\": \"" << dtype(v.s.training.precision)
    << "\", \"reduce_dtype\": \"" << reduce_dtype(v) << "\"}},\n"
    << training_section(v) << "}\n";
  return o.str();
}

}  // namespace

void fsdp(const PlanView& v, FrameworkArgs& out) {
  out.files.push_back({"fsdp.json", v.version.id == "1.13" ? fsdp1(v) : fsdp2(v)});
  out.notes.push_back("fsdp.json: pass the FullyShardedDataParallel / fully_shard entries as keyword arguments "
                      "(enum members by name, dtypes as torch.<name>); \"training\" is paratune's, for your loop");
}

std::string torchrun(const PlanView& v, const Launch& launch) {
  // The underscore spellings: PyTorch 1.13's torchrun knows only those (2.x accepts both). The file is read one
  // argument per line (mapfile) and expands nothing, so it holds literal values only: one node without a known
  // rendezvous host rendezvouses on itself (--standalone); several leave the endpoint to the user (a plan note).
  std::vector<std::string> a = {"--nnodes=" + std::to_string(v.s.cluster.nodes),
                                "--nproc_per_node=" + std::to_string(v.s.cluster.gpus_per_node)};
  if (launch.master_addr.empty() && v.s.cluster.nodes == 1) {
    a.push_back("--standalone");
  } else if (!launch.master_addr.empty()) {
    a.push_back("--rdzv_backend=c10d");
    a.push_back("--rdzv_endpoint=" + launch.master_addr + ":" + launch.master_port);
    if (!launch.job_id.empty()) a.push_back("--rdzv_id=" + launch.job_id);
  }
  return argv_lines(a);
}

}  // namespace paratune::advisor::frameworks
