#include "plan_json.h"

namespace paratune::job {

using nlohmann::json;

json to_json(const advisor::Scenario& s) {
  const auto& m = s.model;
  const auto& c = s.cluster;
  json nics = json::array();
  for (const auto& n : c.nics)
    nics.push_back({{"name", n.name}, {"port", n.port}, {"gbps", n.gbps}, {"active", n.active}, {"gpu_path", n.gpu_path}});
  return {
      {"model", {{"name", m.name}, {"layers", m.layers}, {"hidden", m.hidden}, {"heads", m.heads},
                 {"kv_heads", m.kv_heads}, {"ffn_hidden", m.ffn_hidden}, {"vocab", m.vocab}, {"seq_len", m.seq_len},
                 {"gated_mlp", m.gated_mlp}}},
      {"training", {{"global_batch", s.training.global_batch}, {"precision", advisor::to_string(s.training.precision)},
                    {"framework", advisor::to_string(s.training.framework)}}},
      {"cluster", {{"gpu", c.gpu}, {"nodes", c.nodes}, {"gpus_per_node", c.gpus_per_node},
                   {"nvlink_domain", c.nvlink_domain}, {"nic_count", c.nic_count}, {"nic_gbps", c.nic_gbps},
                   {"fabric", advisor::to_string(c.fabric)}, {"gpu_nic_path", c.gpu_nic_path}, {"nics", nics},
                   {"cloud", c.cloud ? json(*c.cloud) : json(nullptr)}}},
  };
}

json to_json(const advisor::Layout& l) {
  return {{"tp", l.tp}, {"pp", l.pp}, {"dp", l.dp}, {"cp", l.cp}, {"virtual_stages", l.virtual_stages},
          {"micro_batch", l.micro_batch}, {"zero_stage", l.zero_stage},
          {"recompute", advisor::to_string(l.recompute)}, {"sequence_parallel", l.sequence_parallel}};
}

json to_json(const advisor::Prediction& p) {
  const auto& b = p.breakdown;
  const auto& m = p.memory;
  return {{"step_time_s", p.step_time_s},
          {"tokens_per_s", p.tokens_per_s},
          {"tokens_per_s_per_gpu", p.tokens_per_s_per_gpu},
          {"model_tflops_per_gpu", p.model_tflops_per_gpu},
          {"mfu", p.mfu},
          {"flop_convention", "6*N*tokens + attention (12*l*h*s per token), no recompute"},
          {"memory_gib_per_gpu", p.memory_gib_per_gpu},
          {"memory_capacity_gib", p.memory_capacity_gib},
          {"fits", p.fits},
          {"overflow", p.overflow},
          {"memory", {{"weights", m.weights}, {"gradients", m.gradients}, {"optimizer", m.optimizer},
                      {"activations", m.activations}, {"logits", m.logits}, {"buffers", m.buffers},
                      {"reserve", m.reserve}}},
          {"breakdown", {{"compute", b.compute}, {"recompute", b.recompute}, {"tp_comm", b.tp_comm},
                         {"cp_comm", b.cp_comm}, {"pp_bubble", b.pp_bubble}, {"pp_comm", b.pp_comm},
                         {"dp_comm_exposed", b.dp_comm_exposed}, {"optimizer", b.optimizer}, {"other", b.other}}}};
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

}  // namespace paratune::job
