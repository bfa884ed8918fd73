// Scenario from the option × the node's topology × the allocation: where probe and advisor meet.
#pragma once

#include <string>
#include <vector>

#include "paratune/planner/allocation.h"
#include "paratune/planner/option_spec.h"
#include "paratune/advisor/scenario.h"
#include "paratune/probe/topology.h"
#include "paratune/planner/plugin_config.h"

namespace paratune::planner {

// The advisor's view of the node, restricted to the allocation's GPUs. Throws std::runtime_error when the
// topology cannot support a decision (no GPU, GPUs of mixed models).
advisor::ClusterSpec cluster_from_topology(const probe::Topology& topo, const Allocation& alloc,
                                           std::vector<std::string>& notes);

// The whole scenario. `scenario_text`: content of the @FILE scenario (read by the caller as the job user),
// empty when the option has no file. Cluster facts always come from the probe and the allocation.
advisor::Scenario build_scenario(const OptionSpec& spec, const PluginConfig& config, const Allocation& alloc,
                                 const probe::Topology& topo, const std::string& scenario_text,
                                 std::vector<std::string>& notes);

// The command line's whole scenario (`paratune advise --scenario FILE --topology T`) on a probed node: the
// topology's facts replace the file's [cluster] where they speak (the file keeps its node count, placement, and
// gives the GPU model, NICs, peak and memory the topology leaves out). Throws std::invalid_argument naming the
// topology when it cannot support a plan (no GPU, mixed models).
advisor::Scenario cluster_over_scenario(const advisor::Scenario& given, const probe::Topology& topo,
                                        std::vector<std::string>& notes);

// BF16 asked for by default (or by a scenario written for another machine) on a GPU without BF16 tensor cores:
// the plan is for FP16 mixed precision, with a note. `given`: the user named the precision (left as it is).
void plan_precision(advisor::Scenario& s, bool given, std::vector<std::string>& notes);

// When the probe could not tell the NVLink domain (topology.nvlink_unknown) and the site policy does not fix it
// (facts.nvlink_domain): the domain from the GPU model the scenario has now (after the policy's facts.gpu), and a
// note saying what was assumed.
void resolve_nvlink_assumption(const probe::Topology& topo, bool policy_sets_domain, advisor::ClusterSpec& c,
                               std::vector<std::string>& notes);

// A resumed run (resume=PLAN, or a requeued job's own previous plan): the scenario constrained to plans that load
// that plan's checkpoints (advisor::keep_checkpoint), what was kept and why appended to `notes`. `plan_text` is the
// previous plan.json, read by the caller as the job's user; throws std::invalid_argument naming `origin` when it
// is not a paratune plan file.
void apply_resume(advisor::Scenario& s, const std::string& plan_text, const std::string& origin,
                  std::vector<std::string>& notes);

// The default global batch when the user gave none: about 4 Mi tokens, at least one sequence per GPU.
int default_global_batch(int seq_len, int total_gpus);

}  // namespace paratune::planner
