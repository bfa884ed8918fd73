#include "paratune/planner/plan_json.h"

#include "paratune/advisor/breakdown_terms.h"

#include "paratune/tuning/scenario_json.h"

namespace paratune::planner {

using nlohmann::json;

// The scenario and layout forms are the tuning library's, so that `paratune log`/`calibrate` read back exactly
// what the plugin wrote; the plan file adds the NIC list and the cloud the probe found.
json to_json(const advisor::Scenario& s) {
  json j = tuning::scenario_to_json(s);
  json nics = json::array();
  for (const auto& n : s.cluster.nics)
    nics.push_back({{"name", n.name}, {"port", n.port}, {"gbps", n.gbps}, {"active", n.active}, {"gpu_path", n.gpu_path}});
  j["cluster"]["nics"] = nics;
  j["cluster"]["cloud"] = s.cluster.cloud ? json(*s.cluster.cloud) : json(nullptr);
  if (s.cluster.placement)
    j["cluster"]["placement"] = {{"nodes_per_leaf", s.cluster.placement->nodes_per_leaf},
                                 {"leaf_switches", s.cluster.placement->leaf_names},
                                 {"oversubscription", s.cluster.placement->oversubscription}};
  return j;
}

json to_json(const advisor::Layout& l) { return tuning::layout_to_json(l); }

json to_json(const advisor::Prediction& p) {
  const auto& b = p.breakdown;
  const auto& m = p.memory;
  json j = {{"step_time_s", p.step_time_s},
            {"tokens_per_s", p.tokens_per_s},
            {"tokens_per_s_per_gpu", p.tokens_per_s_per_gpu},
            {"model_tflops_per_gpu", p.model_tflops_per_gpu},
            {"hardware_tflops_per_gpu", p.hardware_tflops_per_gpu},
            {"mfu", p.mfu},
            {"flop_convention", std::string(p.flop_convention) + "; mfu against the dense BF16/FP16 peak"},
            {"microbatches_per_step", p.microbatches},
            {"memory_gib_per_gpu", p.memory_gib_per_gpu},
            {"memory_capacity_gib", p.memory_capacity_gib},
            {"fits", p.fits},
            {"memory_gib", {{"weights", m.weights}, {"gradients", m.gradients}, {"optimizer", m.optimizer},
                            {"activations", m.activations}, {"logits", m.logits}, {"buffers", m.buffers},
                            {"reserve", m.reserve}}},
            {"breakdown", json::object()}};
  for (const auto& t : advisor::kBreakdownTerms)  // the MoE and offload terms only where they are priced
    if (advisor::shown(b, t)) j["breakdown"][t.name] = b.*t.field;
  if (p.host_memory_gib_per_gpu > 0) {  // CPU activation offload: the pinned host memory, and what a GPU may pin
    j["host_memory_gib_per_gpu"] = p.host_memory_gib_per_gpu;
    j["host_capacity_gib"] = p.host_capacity_gib;
  }
  if (!p.fits) j["overflow"] = p.overflow;
  return j;
}

json to_json(const advisor::Plan& p) {
  json env = json::array();
  for (const auto& e : p.env) env.push_back({{"name", e.name}, {"value", e.value}, {"reason", e.reason}});
  json alternatives = json::array();
  for (const auto& a : p.alternatives)
    alternatives.push_back({{"layout", to_json(a.layout)}, {"prediction", to_json(a.prediction)}});
  return {{"layout", to_json(p.layout)},      {"prediction", to_json(p.prediction)},
          {"env", env},                       {"alternatives", alternatives},
          {"candidates_evaluated", p.candidates_evaluated}, {"search_seconds", p.search_seconds},
          {"notes", p.notes}};
}

json calibration_json(const advisor::Calibration& c, const advisor::Scenario& s) {
  json entries = json::array();
  const auto& k = s.cluster;
  const auto* e = advisor::find_entry(c, k.gpu, k.fabric, s.training.framework);
  if (e)
    entries.push_back({{"kind", "efficiency"}, {"gpu", e->gpu}, {"fabric", e->fabric}, {"framework", e->framework},
                       {"compute_scale", e->compute_scale}, {"network_scale", e->network_scale},
                       {"samples", e->samples}, {"error_before", e->error_before}, {"error_after", e->error_after}});
  if (const auto* m = advisor::find_memory_entry(c, k.gpu, s.training.framework); m && m->headroom_gib > 0)
    entries.push_back({{"kind", "memory"}, {"gpu", m->gpu}, {"framework", m->framework},
                       {"headroom_gib", m->headroom_gib}, {"oom_jobs", m->oom_jobs},
                       {"near_limit_jobs", m->near_limit_jobs}});
  return {{"calibrated", e != nullptr}, {"entries", entries}};
}

}  // namespace paratune::planner
