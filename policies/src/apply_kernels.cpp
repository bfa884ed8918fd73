// The site's optional kernels (facts.kernels) and expert-parallel limits (limits.max_ep, limits.dispatchers)
// applied to a scenario: what a job may ask for here, and what a stack without a kernel runs instead.
#include "internal.h"
#include "paratune/advisor/framework_kernels.h"

namespace paratune::policies::detail {

namespace {

std::string kernel_list(const std::vector<advisor::Kernel>& ks) {
  std::vector<std::string> names;
  for (auto k : ks) names.push_back(advisor::to_string(k));
  return names.empty() ? std::string("none") : join(names);
}

// The user's expert settings (SPEC ep/dispatcher, [parallel]) that the limits or the kernels rule out.
void drop_expert_settings(const EffectivePolicy& p, advisor::Scenario& s, std::vector<PolicyChange>& ch) {
  advisor::ParallelSpec& q = s.parallel;
  if (q.ep && p.limits.max_ep > 0 && *q.ep > p.limits.max_ep) {
    ch.push_back({"EP capped at " + std::to_string(p.limits.max_ep),
                  p.where("limits.max_ep") + " = " + std::to_string(p.limits.max_ep) + " (user asked ep=" +
                      std::to_string(*q.ep) + "; the search picks ep <= " + std::to_string(p.limits.max_ep) + ")"});
    q.ep.reset();
  }
  if (!q.dispatcher) return;
  const auto& allowed = p.limits.dispatchers;
  if (!allowed.empty() && !contains(allowed, *q.dispatcher)) {
    std::vector<std::string> names;
    for (auto d : allowed) names.push_back(advisor::to_string(d));
    ch.push_back({std::string("dispatcher ") + advisor::to_string(*q.dispatcher) + " not allowed",
                  p.where("limits.dispatchers") + " = [" + join(names) + "] (user asked dispatcher=" +
                      advisor::to_string(*q.dispatcher) + "; the search picks among the allowed ones)"});
    q.dispatcher.reset();
  } else if (*q.dispatcher == advisor::Dispatcher::Flex && !advisor::flex_backend(s, s.training.framework)) {
    ch.push_back({"dispatcher flex not available (user asked dispatcher=flex)",
                  p.where("facts.kernels") + " lists no DeepEP/HybridEP backend the framework version can use; the "
                                             "search picks alltoall or allgather"});
    q.dispatcher.reset();
  }
}

// The user's stack settings that need a kernel the site lacks: back to the framework's default (then settled).
void drop_stack_settings(const EffectivePolicy& p, advisor::Scenario& s, std::vector<PolicyChange>& ch) {
  advisor::TrainingSpec& t = s.training;
  const bool mcore = t.framework == advisor::Framework::Megatron || t.framework == advisor::Framework::Nemo;
  const std::string why = p.where("facts.kernels") + " = [" + kernel_list(*s.cluster.kernels) + "]";
  if (t.attention == advisor::Attention::Flash3 && s.cluster.lacks(advisor::Kernel::FlashAttention3)) {
    ch.push_back({"attention flash3 not used (user asked attention=flash3)", why + ": FlashAttention-3 not installed"});
    t.attention.reset();
  }
  if (!mcore || !s.cluster.lacks(advisor::Kernel::TransformerEngine)) return;
  if (t.attention == advisor::Attention::Cudnn) {
    ch.push_back({"attention cudnn not used (user asked attention=cudnn)", why + ": it is Transformer Engine's"});
    t.attention.reset();
  }
  if (t.tp_comm_overlap.value_or(false)) {
    ch.push_back({"TP communication overlap off (user asked tp_comm_overlap=yes)", why + ": it is Transformer Engine's"});
    t.tp_comm_overlap = false;
  }
  if (t.cross_entropy_fusion == advisor::LossFusion::Te) {
    ch.push_back({"Transformer Engine's fused loss not used (user asked cross_entropy_fusion=te)",
                  why + ": it is Transformer Engine's"});
    t.cross_entropy_fusion.reset();
  }
}

}  // namespace

void apply_kernels_and_experts(const EffectivePolicy& p, advisor::Scenario& s, std::vector<PolicyChange>& ch) {
  if (p.facts.kernels) {
    s.cluster.kernels = *p.facts.kernels;
    ch.push_back({"optional kernels installed: " + kernel_list(*p.facts.kernels),
                  p.where("facts.kernels") + " (plans use no other DeepEP, HybridEP, TE or FlashAttention-3)"});
    drop_stack_settings(p, s, ch);
    for (const auto& line : advisor::settle_kernel_defaults(s)) ch.push_back({line, p.where("facts.kernels")});
  }
  drop_expert_settings(p, s, ch);
}

}  // namespace paratune::policies::detail
