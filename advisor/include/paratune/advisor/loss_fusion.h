// The language-model loss: which cross-entropy kernel a plan runs and what it keeps in GPU memory. Transformer
// Engine's fused kernel (parallel_cross_entropy, TE 2.2 on) wrote the loss's gradient into the bf16 logits up to TE
// 2.17; TE 2.18 keeps that gradient in fp32 (TransformerEngine PR #3193, transformer_engine/pytorch/triton/
// cross_entropy.py), like the unfused loss's fp32 softmax.
#pragma once

#include <string>

#include "paratune/advisor/scenario.h"

namespace paratune::advisor {

// "2.14" or "2.14.1" -> true and {2, 14}; anything else -> false.
bool parse_te_version(const std::string& text, int* major, int* minor);

// The cross-entropy kernel framework f runs for this scenario: the stated one; else Transformer Engine's where f is
// Megatron-Core's (megatron, nemo), the site states a TE version that has it and does not say TE is missing (what
// NVIDIA's Megatron-Bridge performance recipes run); else Off, the framework's own loss.
LossFusion planned_loss_fusion(const Scenario& s, Framework f);

// Bytes per token and vocabulary entry the loss keeps on the GPU that computes it: 2 (bf16 logits that take the
// gradient in place) with TE's kernel before TE 2.18, else 6 (bf16 logits + an fp32 softmax or gradient).
double loss_bytes_per_logit(const Scenario& s, Framework f);

// "" when framework f can run the stated cross-entropy kernel, else why not (Megatron-Core setting; TE needed).
std::string loss_fusion_problem(const Scenario& s, Framework f);

}  // namespace paratune::advisor
