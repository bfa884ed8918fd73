// Which cross-entropy kernel a plan runs and the memory it keeps (loss_fusion.h).
#include "paratune/advisor/loss_fusion.h"

#include <cctype>

namespace paratune::advisor {

namespace {

bool megatron_core(Framework f) { return f == Framework::Megatron || f == Framework::Nemo; }

// Digits from text[*at] on, as a number; false when there are none (or too many to be a version part).
bool number(const std::string& text, size_t* at, int* out) {
  const size_t from = *at;
  int v = 0;
  while (*at < text.size() && std::isdigit(static_cast<unsigned char>(text[*at])) && *at - from < 6)
    v = v * 10 + (text[(*at)++] - '0');
  *out = v;
  return *at > from && (*at == text.size() || !std::isdigit(static_cast<unsigned char>(text[*at])));
}

}  // namespace

bool te_version_at_least(const std::string& version, int major, int minor) {
  int ma = 0, mi = 0;
  if (!parse_te_version(version, &ma, &mi)) return false;
  return ma > major || (ma == major && mi >= minor);
}

bool parse_te_version(const std::string& text, int* major, int* minor) {
  size_t at = 0;
  int ma = 0, mi = 0, patch = 0;
  if (!number(text, &at, &ma) || at >= text.size() || text[at++] != '.' || !number(text, &at, &mi)) return false;
  if (at < text.size() && text[at] == '.') {  // the patch number
    ++at;
    if (!number(text, &at, &patch)) return false;
  }
  // A local version label (PEP 440 "+..."), nothing else, may follow.
  if (at < text.size() && (text[at] != '+' || at + 1 == text.size())) return false;
  *major = ma;
  *minor = mi;
  return true;
}

LossFusion planned_loss_fusion(const Scenario& s) {
  return s.training.cross_entropy_fusion.value_or(LossFusion::Off);
}

double loss_bytes_per_logit(const Scenario& s, Framework f) {
  const bool in_place = planned_loss_fusion(s) == LossFusion::Te && megatron_core(f) &&
                        !s.cluster.te_version.empty() && !te_version_at_least(s.cluster.te_version, 2, 18);
  return in_place ? 2 : 6;
}

std::string loss_fusion_problem(const Scenario& s, Framework f, const std::string& version) {
  const auto stated = s.training.cross_entropy_fusion;
  if (!stated || *stated == LossFusion::Off) return "";
  if (!megatron_core(f))
    return "cross_entropy_fusion is Megatron-Core's --cross-entropy-loss-fusion (megatron, nemo); this framework "
           "computes its loss with PyTorch's cross entropy: give cross_entropy_fusion=off";
  if (*stated != LossFusion::Te) return "";
  if (f == Framework::Megatron && version == "main")  // arguments.py: assert not (... impl == 'te')
    return "Megatron-LM main refuses it (\"Transformer Engine cross entropy loss fusion is disabled due to "
           "stability issues\"): give cross_entropy_fusion=native";
  if (s.cluster.lacks(Kernel::TransformerEngine))
    return "cross_entropy_fusion=te needs Transformer Engine, which the site says is not installed (facts.kernels); "
           "give cross_entropy_fusion=native";
  if (!s.cluster.te_version.empty() && !te_version_at_least(s.cluster.te_version, 2, 2))
    return "cross_entropy_fusion=te needs Transformer Engine 2.2 or later (parallel_cross_entropy); the site's is " +
           s.cluster.te_version + ": give cross_entropy_fusion=native";
  return "";
}

}  // namespace paratune::advisor
