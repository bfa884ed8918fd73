#include "decision.h"

#include <cstdio>

#include "paratune/probe/probe.h"
#include "plan_json.h"
#include "scenario_builder.h"

namespace paratune::job {

namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

Mode effective_mode(const OptionSpec& spec, const PluginConfig& config) {
  return spec.mode.value_or(config.default_mode);
}

Decision decide(const DecisionInput& in) {
  Decision d;
  d.mode = effective_mode(in.spec, in.config);
  d.fingerprint = in.topology.fingerprint.empty() ? probe::compute_fingerprint(in.topology) : in.topology.fingerprint;
  d.scenario = build_scenario(in.spec, in.config, in.alloc, in.topology, in.scenario_text, d.notes);
  d.plan = advisor::advise(d.scenario, in.limits);
  return d;
}

std::vector<EnvAssignment> decision_env(const Decision& d, const std::string& plan_path, const std::string& report_path) {
  const auto& l = d.plan.layout;
  const auto& p = d.plan.prediction;
  const int gbs = d.scenario.training.global_batch;
  std::vector<EnvAssignment> env = {
      {"PARATUNE_TP", std::to_string(l.tp), "tensor-parallel degree"},
      {"PARATUNE_PP", std::to_string(l.pp), "pipeline-parallel degree"},
      {"PARATUNE_DP", std::to_string(l.dp), "data-parallel degree"},
      {"PARATUNE_CP", std::to_string(l.cp), "context-parallel degree"},
      {"PARATUNE_VPP", std::to_string(l.virtual_stages), "virtual pipeline stages per rank (interleaving)"},
      {"PARATUNE_MICRO_BATCH", std::to_string(l.micro_batch), "sequences per micro-batch"},
      {"PARATUNE_GLOBAL_BATCH", std::to_string(gbs), "sequences per optimizer step"},
      {"PARATUNE_GRAD_ACCUM", std::to_string(l.grad_accum(gbs)), "micro-batches per step per data-parallel rank"},
      {"PARATUNE_ZERO_STAGE", std::to_string(l.zero_stage), "optimizer-state sharding (ZeRO stage)"},
      {"PARATUNE_RECOMPUTE", advisor::to_string(l.recompute), "activation recomputation"},
      {"PARATUNE_SEQUENCE_PARALLEL", l.sequence_parallel ? "1" : "0", "Megatron sequence parallelism"},
      {"PARATUNE_PREDICTED_STEP_S", fixed(p.step_time_s, 4), "predicted seconds per optimizer step"},
      {"PARATUNE_PREDICTED_TOKENS_PER_S", fixed(p.tokens_per_s, 0), "predicted tokens per second, whole job"},
      {"PARATUNE_FINGERPRINT", d.fingerprint, "topology fingerprint of the node the decision was made on"},
  };
  if (!plan_path.empty()) env.push_back({"PARATUNE_PLAN", plan_path, "the plan file (JSON)"});
  if (!report_path.empty()) env.push_back({"PARATUNE_REPORT", report_path, "append throughput JSON lines here"});
  if (d.mode == Mode::Apply)
    for (const auto& e : d.plan.env) env.push_back({e.name, e.value, e.reason});
  return env;
}

nlohmann::json decision_json(const Decision& d) {
  return {{"mode", to_string(d.mode)},
          {"fingerprint", d.fingerprint},
          {"scenario", to_json(d.scenario)},
          {"plan", to_json(d.plan)},
          {"notes", d.notes}};
}

}  // namespace paratune::job
