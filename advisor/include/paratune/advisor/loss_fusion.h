// The language-model loss: which cross-entropy kernel a plan runs and what it keeps in GPU memory. Transformer
// Engine's fused kernel (parallel_cross_entropy, TE 2.2 on) wrote the loss's gradient into the bf16 logits up to TE
// 2.17; TE 2.18 keeps that gradient in fp32 (TransformerEngine PR #3193, "Fix the numerical issue with the Fused CE
// loss", transformer_engine/pytorch/triton/cross_entropy.py), like the unfused loss's fp32 softmax. Megatron-LM
// main refuses TE's kernel "due to stability issues" (#5115), so the advisor never picks it: it is a stated fact
// (what a run used), priced and emitted, not a default.
#pragma once

#include <string>

#include "paratune/advisor/scenario.h"

namespace paratune::advisor {

// "2.14", "2.14.1" or with a local suffix ("2.5.0+f05f12c", as transformer_engine.__version__ reads in NGC
// containers) -> true and {major, minor}; anything else (signs, spaces, letters) -> false.
bool parse_te_version(const std::string& text, int* major, int* minor);

// The cross-entropy kernel the plan runs: the stated one, else the framework's own loss (Off: what each pinned
// framework version runs without the setting).
LossFusion planned_loss_fusion(const Scenario& s);

// Whether a TE version string is at least major.minor; an unparsable or empty one is not.
bool te_version_at_least(const std::string& version, int major, int minor);

// Bytes per token and vocabulary entry the loss keeps on the GPU that computes it: 2 (bf16 logits that take the
// gradient in place) with TE's kernel where the stated TE version is before 2.18, else 6 (bf16 logits + an fp32
// softmax or gradient).
double loss_bytes_per_logit(const Scenario& s, Framework f);

// "" when framework f at `version` (a framework_version id) can run the stated cross-entropy kernel, else why not:
// a Megatron-Core setting; TE's needs TE 2.2 and is refused by Megatron-LM main.
std::string loss_fusion_problem(const Scenario& s, Framework f, const std::string& version);

}  // namespace paratune::advisor
