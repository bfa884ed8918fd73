// The optional kernels a plan uses (scenario.h Kernel) and whether the site has them (ClusterSpec::kernels, from
// the site policy's facts.kernels or a scenario's [cluster] kernels): what the search may pick, what a plan says it
// needs, and how a stack without Transformer Engine or FlashAttention-3 runs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "paratune/advisor/plan.h"
#include "paratune/advisor/scenario.h"

namespace paratune::advisor {

struct KernelNeed {
  Kernel kernel;
  std::string why;  // the setting that uses it, with the framework's flag
};

// The kernels the layout's settings use in framework f at the scenario's version: DeepEP or HybridEP for the flex
// dispatcher, Transformer Engine for Megatron-Core's FP8, fused cuDNN attention and TP communication overlap,
// FlashAttention-3 for attention = "flash3".
std::vector<KernelNeed> kernels_needed(const Scenario& s, const Layout& l, Framework f);

// Whether the job overlaps tensor-parallel communication with its GEMMs, the layout aside (it acts only at tp > 1
// with sequence parallelism): Megatron-Core's --tp-comm-overlap (Transformer Engine's userbuffers), torchtitan's and
// AutoModel's async TP (compiled layers only). The scenario's tp_comm_overlap where stated (validate() refuses a stated
// overlap the stack cannot run); by default on Hopper and Blackwell where the stack has it, unless the scenario says
// its communication is not overlapped (overlap_dp_comm = no) or the site lacks Transformer Engine; never by default
// in NeMo 2, whose recipe's MegatronCommOverlapCallback owns it. One decision for the plan's arguments, the kernels
// it needs and its price.
bool tp_comm_overlap_runs(const Scenario& s, Framework f);
bool tp_comm_overlap_runs(const Scenario& s, const Layout& l, Framework f);  // and tp > 1 with sequence parallelism

// Whether attention runs a fused kernel (FlashAttention or cuDNN's) rather than the unfused one that stores the score
// matrices: not switched off (flash_attention = no, attention = none) and a GPU that has one (Ampere on). One
// decision for the price (memory and time) and the arguments (Megatron-DeepSpeed's --use-flash-attn-v2).
bool fused_attention_runs(const Scenario& s);

// The flex dispatcher's backend: HybridEP where the NVLink domain spans nodes and the version has it (Megatron-LM
// main's --moe-flex-dispatcher-backend), else DeepEP; the other one when the site lacks the first; nullopt when the
// site has neither backend the version can use.
std::optional<Kernel> flex_backend(const Scenario& s, Framework f);

// "" when the site has every kernel the layout needs, else what is missing (the search skips such layouts and
// predict refuses them).
std::string kernel_problem(const Scenario& s, const Layout& l, Framework f);

// A stack whose site lacks Transformer Engine or FlashAttention-3: settings left to the framework's default that
// would use them are set to what runs without them (TP comm overlap off, attention from FlashAttention-3 or -2 in
// place of TE's cuDNN kernel); returns one line per change. Settings the scenario states are left alone (validate()
// refuses those the site cannot run: stack_problem).
std::vector<std::string> settle_kernel_defaults(Scenario& s);

// The plan's needs as notes ("needs DeepEP (installed: not stated): ..."), for Plan::notes and the plan file.
std::vector<std::string> kernel_notes(const Scenario& s, const Plan& p);

}  // namespace paratune::advisor
