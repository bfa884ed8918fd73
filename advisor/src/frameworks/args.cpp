// framework_args(): the plan's framework and version pick the adapter.
#include "adapters.h"
#include "paratune/advisor/framework_kernels.h"

namespace paratune::advisor {

namespace frameworks {

bool PlanView::tp_overlap() const { return tp_comm_overlap_runs(s, l, plan.framework); }

std::vector<std::string> PlanView::recompute_module_names() const {
  const unsigned modules = recompute_module_set(s, l, s.model.generalised_layer());
  std::vector<std::string> out;
  if (modules == 0 || modules == recompute_module::kCoreAttn) return out;
  const std::string all = recompute_modules_to_string(modules) + ",";
  for (size_t from = 0, to; (to = all.find(',', from)) != std::string::npos; from = to + 1)
    out.push_back(all.substr(from, to - from));
  return out;
}

std::string argv_lines(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += a + "\n";
  return out;
}

const char* fp8_recipe_name(const Scenario& s) {
  switch (s.training.fp8_recipe.value_or(Fp8Recipe::Delayed)) {
    case Fp8Recipe::Delayed: return "delayed";
    case Fp8Recipe::Tensorwise: return "tensorwise";
    case Fp8Recipe::Blockwise: return "blockwise";
    case Fp8Recipe::Mxfp8: return "mxfp8";
    case Fp8Recipe::Rowwise: return "rowwise";
  }
  return "delayed";
}

}  // namespace frameworks

FrameworkArgs framework_args(const Scenario& s, const Plan& plan, const Launch& launch) {
  const FrameworkVersion& version = version_for(s, plan.framework);
  const GpuSpec g = effective_gpu(s.cluster);
  frameworks::PlanView v{s, plan, plan.layout, version};
  v.accum = plan.layout.grad_accum(s.training.global_batch);
  v.hopper_plus = g.arch == GpuArch::Hopper || g.arch == GpuArch::Blackwell;
  v.uneven_pipeline = plan.layout.pp > 1 && s.model.layers % plan.layout.pp != 0;
  FrameworkArgs out;
  out.framework = plan.framework;
  out.version = version.id;
  switch (plan.framework) {
    case Framework::Megatron: frameworks::megatron(v, out); break;
    case Framework::Nemo: frameworks::nemo(v, out); break;
    case Framework::DeepSpeed: frameworks::deepspeed(v, out); break;
    case Framework::Torchtitan: frameworks::torchtitan(v, out); break;
    case Framework::Fsdp: frameworks::fsdp(v, out); break;
    case Framework::Automodel: frameworks::automodel(v, out); break;
  }
  out.torchrun = frameworks::torchrun(v, launch);
  if (launch.master_addr.empty() && s.cluster.nodes > 1)
    out.notes.push_back("torchrun.args has no rendezvous: the allocation's first node was not known when planning; "
                        "add --rdzv_backend=c10d --rdzv_endpoint=HOST:PORT with HOST the job's first node (scontrol "
                        "show hostnames \"$SLURM_JOB_NODELIST\" | head -n1) and the same PORT on every node");
  for (auto& n : kernel_notes(s, plan)) out.notes.push_back(std::move(n));  // the optional kernels it needs
  return out;
}

}  // namespace paratune::advisor
