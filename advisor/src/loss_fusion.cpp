// Which cross-entropy kernel a plan runs and the memory it keeps (loss_fusion.h).
#include "paratune/advisor/loss_fusion.h"

#include <cstdio>

namespace paratune::advisor {

namespace {

bool megatron_core(Framework f) { return f == Framework::Megatron || f == Framework::Nemo; }

// TE version ordering as (major, minor); an unknown version compares as "not at least".
bool te_at_least(const std::string& version, int major, int minor) {
  int ma = 0, mi = 0;
  if (!parse_te_version(version, &ma, &mi)) return false;
  return ma > major || (ma == major && mi >= minor);
}

}  // namespace

bool parse_te_version(const std::string& text, int* major, int* minor) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return false;  // sscanf's %d would skip spaces and signs
  int ma = -1, mi = -1, patch = 0, used = 0;
  const int n = std::sscanf(text.c_str(), "%d.%d%n.%d%n", &ma, &mi, &used, &patch, &used);
  if (n < 2 || ma < 0 || mi < 0 || size_t(used) != text.size()) return false;
  *major = ma;
  *minor = mi;
  return true;
}

LossFusion planned_loss_fusion(const Scenario& s, Framework f) {
  if (s.training.cross_entropy_fusion) return *s.training.cross_entropy_fusion;
  const bool te_here = !s.cluster.lacks(Kernel::TransformerEngine) && te_at_least(s.cluster.te_version, 2, 2);
  return megatron_core(f) && te_here ? LossFusion::Te : LossFusion::Off;
}

double loss_bytes_per_logit(const Scenario& s, Framework f) {
  const bool in_place = planned_loss_fusion(s, f) == LossFusion::Te && megatron_core(f) &&
                        !s.cluster.te_version.empty() && !te_at_least(s.cluster.te_version, 2, 18);
  return in_place ? 2 : 6;
}

std::string loss_fusion_problem(const Scenario& s, Framework f) {
  const auto stated = s.training.cross_entropy_fusion;
  if (!stated || *stated == LossFusion::Off) return "";
  if (!megatron_core(f))
    return "cross_entropy_fusion is Megatron-Core's --cross-entropy-loss-fusion (megatron, nemo); this framework "
           "computes its loss with PyTorch's cross entropy: give cross_entropy_fusion=off";
  if (*stated != LossFusion::Te) return "";
  if (s.cluster.lacks(Kernel::TransformerEngine))
    return "cross_entropy_fusion=te needs Transformer Engine, which the site says is not installed (facts.kernels); "
           "give cross_entropy_fusion=native";
  if (!s.cluster.te_version.empty() && !te_at_least(s.cluster.te_version, 2, 2))
    return "cross_entropy_fusion=te needs Transformer Engine 2.2 or later (parallel_cross_entropy); the site's is " +
           s.cluster.te_version + ": give cross_entropy_fusion=native";
  return "";
}

}  // namespace paratune::advisor
