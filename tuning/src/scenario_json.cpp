#include "paratune/tuning/scenario_json.h"

#include "paratune/advisor/framework_versions.h"

#include <algorithm>
#include <limits>

#include <stdexcept>
#include <string>

namespace paratune::tuning {

using nlohmann::json;
using namespace paratune::advisor;

namespace {

const json& obj(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_object()) throw std::invalid_argument(std::string(key) + ": missing or not an object");
  return *it;
}

template <class T>
void opt_num(const json& j, const char* key, T& out, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  if (!it->is_number()) throw std::invalid_argument(where + key + ": must be a number");
  const double v = it->get<double>();
  // The bound is the target type's: converting a double beyond it is undefined behaviour (found by fuzz_tuning_log).
  const double hi = std::min(1e12, static_cast<double>(std::numeric_limits<T>::max()));
  if (!(v >= 0) || v > hi) throw std::invalid_argument(where + key + ": out of range");
  out = static_cast<T>(v);
}

void opt_bool(const json& j, const char* key, bool& out) {
  const auto it = j.find(key);
  if (it != j.end() && it->is_boolean()) out = it->get<bool>();
}

void opt_bool(const json& j, const char* key, std::optional<bool>& out) {
  const auto it = j.find(key);
  if (it != j.end() && it->is_boolean()) out = it->get<bool>();
}

std::string opt_str(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The mixture-of-experts / MLA / MTP fields of the model (absent = dense, as written by older plan files).
void moe_model_from_json(const json& m, ModelSpec& x) {
  opt_num(m, "head_dim", x.head_dim, "model.");
  opt_num(m, "moe_experts", x.moe_experts, "model.");
  opt_num(m, "moe_top_k", x.moe_top_k, "model.");
  opt_num(m, "moe_ffn_hidden", x.moe_ffn_hidden, "model.");
  opt_num(m, "moe_shared_experts", x.moe_shared_experts, "model.");
  opt_num(m, "moe_shared_ffn_hidden", x.moe_shared_ffn_hidden, "model.");
  opt_num(m, "moe_dense_layers", x.moe_dense_layers, "model.");
  opt_num(m, "moe_capacity_factor", x.moe_capacity_factor, "model.");
  if (auto r = opt_str(m, "moe_router"); !r.empty()) x.moe_router = moe_router_from_string(r);
  opt_num(m, "q_lora_rank", x.q_lora_rank, "model.");
  opt_num(m, "kv_lora_rank", x.kv_lora_rank, "model.");
  opt_num(m, "qk_head_dim", x.qk_head_dim, "model.");
  opt_num(m, "qk_rope_head_dim", x.qk_rope_head_dim, "model.");
  opt_num(m, "v_head_dim", x.v_head_dim, "model.");
  opt_num(m, "mtp_layers", x.mtp_layers, "model.");
}

json moe_model_to_json(const ModelSpec& m) {
  json j = json::object();
  if (m.head_dim > 0) j["head_dim"] = m.head_dim;
  if (m.is_moe()) {
    j["moe_experts"] = m.moe_experts; j["moe_top_k"] = m.moe_top_k; j["moe_ffn_hidden"] = m.moe_ffn_hidden;
    j["moe_shared_experts"] = m.moe_shared_experts; j["moe_shared_ffn_hidden"] = m.moe_shared_ffn_hidden;
    j["moe_dense_layers"] = m.moe_dense_layers; j["moe_capacity_factor"] = m.moe_capacity_factor;
    j["moe_router"] = to_string(m.moe_router);
  }
  if (m.is_mla()) {
    j["q_lora_rank"] = m.q_lora_rank; j["kv_lora_rank"] = m.kv_lora_rank; j["qk_head_dim"] = m.qk_head_dim;
    j["qk_rope_head_dim"] = m.qk_rope_head_dim; j["v_head_dim"] = m.v_head_dim;
  }
  if (m.mtp_layers > 0) j["mtp_layers"] = m.mtp_layers;
  return j;
}

}  // namespace

Scenario scenario_from_json(const json& j) {
  if (!j.is_object()) throw std::invalid_argument("scenario: not an object");
  Scenario s;
  const json& m = obj(j, "model");
  s.model.name = opt_str(m, "name");
  opt_num(m, "layers", s.model.layers, "model.");
  opt_num(m, "hidden", s.model.hidden, "model.");
  opt_num(m, "heads", s.model.heads, "model.");
  opt_num(m, "kv_heads", s.model.kv_heads, "model.");
  opt_num(m, "ffn_hidden", s.model.ffn_hidden, "model.");
  opt_num(m, "vocab", s.model.vocab, "model.");
  opt_num(m, "seq_len", s.model.seq_len, "model.");
  opt_bool(m, "gated_mlp", s.model.gated_mlp);
  opt_bool(m, "tied_embeddings", s.model.tied_embeddings);
  opt_bool(m, "dropout", s.model.dropout);
  moe_model_from_json(m, s.model);
  const json& t = obj(j, "training");
  opt_num(t, "global_batch", s.training.global_batch, "training.");
  if (auto p = opt_str(t, "precision"); !p.empty()) s.training.precision = precision_from_string(p);
  if (auto f = opt_str(t, "framework"); !f.empty()) s.training.framework = framework_from_string(f);
  // The version the job's arguments were for (logged since framework versions exist; absent: the default then).
  if (auto v = opt_str(t, "framework_version"); !v.empty()) {
    try {
      s.training.framework_version = resolve_version(s.training.framework, v).id;
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("training.framework_version: ") + e.what());
    }
  }
  opt_bool(t, "flash_attention", s.training.flash_attention);
  opt_bool(t, "overlap_dp_comm", s.training.overlap_dp_comm);
  opt_bool(t, "compile", s.training.compile);
  opt_bool(t, "tp_comm_overlap", s.training.tp_comm_overlap);
  opt_bool(t, "grad_reduce_fp32", s.training.grad_reduce_fp32);
  opt_bool(t, "fp8_param_gather", s.training.fp8_param_gather);
  opt_bool(t, "overlap_param_gather", s.training.overlap_param_gather);
  opt_bool(t, "moe_a2a_overlap", s.training.moe_a2a_overlap);
  opt_bool(t, "moe_force_balance", s.training.moe_force_balance);
  if (auto a = opt_str(t, "attention"); !a.empty()) s.training.attention = attention_from_string(a);
  if (auto r = opt_str(t, "fp8_recipe"); !r.empty()) s.training.fp8_recipe = fp8_recipe_from_string(r);
  if (auto p = opt_str(t, "pipeline_split"); !p.empty()) s.training.pipeline_split = pipeline_split_from_string(p);
  const json& c = obj(j, "cluster");
  s.cluster.gpu = opt_str(c, "gpu");
  opt_num(c, "nodes", s.cluster.nodes, "cluster.");
  opt_num(c, "gpus_per_node", s.cluster.gpus_per_node, "cluster.");
  opt_num(c, "nvlink_domain", s.cluster.nvlink_domain, "cluster.");
  opt_num(c, "nic_count", s.cluster.nic_count, "cluster.");
  opt_num(c, "nic_gbps", s.cluster.nic_gbps, "cluster.");
  if (auto f = opt_str(c, "fabric"); !f.empty()) s.cluster.fabric = fabric_from_string(f);
  s.cluster.gpu_nic_path = opt_str(c, "gpu_nic_path");
  opt_bool(c, "nvls", s.cluster.nvls);
  opt_bool(c, "rail_aligned", s.cluster.rail_aligned);
  // The catalog overrides the job was predicted with (cluster.gpu_spec, e.g. a power-capped peak): a prediction
  // made again without them would not be the job's prediction, and a fit on it would learn the override.
  if (auto it = c.find("gpu_spec"); it != c.end() && !it->is_null()) {
    if (!it->is_object()) throw std::invalid_argument("cluster.gpu_spec: must be an object");
    opt_num(*it, "peak_tflops", s.cluster.peak_tflops, "cluster.gpu_spec.");
    opt_num(*it, "memory_gib", s.cluster.memory_gib, "cluster.gpu_spec.");
    opt_num(*it, "hbm_tbps", s.cluster.hbm_tbps, "cluster.gpu_spec.");
    opt_num(*it, "nvlink_gbps", s.cluster.nvlink_gbps, "cluster.gpu_spec.");
  }
  if (auto it = c.find("nics"); it != c.end() && it->is_array()) {
    for (const auto& n : *it) {
      if (!n.is_object()) continue;
      NicFacts f;
      f.name = opt_str(n, "name");
      opt_num(n, "port", f.port, "cluster.nics.");
      opt_num(n, "gbps", f.gbps, "cluster.nics.");
      opt_bool(n, "active", f.active);
      f.gpu_path = opt_str(n, "gpu_path");
      s.cluster.nics.push_back(f);
    }
  }
  if (s.cluster.nodes < 1) s.cluster.nodes = 1;
  if (s.cluster.gpus_per_node < 1) s.cluster.gpus_per_node = 1;
  return s;
}

Layout layout_from_json(const json& j) {
  if (!j.is_object()) throw std::invalid_argument("plan: not an object");
  Layout l;
  opt_num(j, "tp", l.tp, "plan.");
  opt_num(j, "pp", l.pp, "plan.");
  opt_num(j, "dp", l.dp, "plan.");
  opt_num(j, "cp", l.cp, "plan.");
  opt_num(j, "virtual_stages", l.virtual_stages, "plan.");
  opt_num(j, "micro_batch", l.micro_batch, "plan.");
  opt_num(j, "zero_stage", l.zero_stage, "plan.");
  opt_num(j, "shard_group", l.shard_group, "plan.");
  if (auto r = opt_str(j, "recompute"); !r.empty()) l.recompute = recompute_from_string(r);
  opt_bool(j, "sequence_parallel", l.sequence_parallel);
  opt_num(j, "ep", l.ep, "plan.");
  opt_num(j, "etp", l.etp, "plan.");
  opt_num(j, "first_stage_layers", l.first_stage_layers, "plan.");
  opt_num(j, "last_stage_layers", l.last_stage_layers, "plan.");
  if (auto d = opt_str(j, "dispatcher"); !d.empty()) l.dispatcher = dispatcher_from_string(d);
  if (auto d = opt_str(j, "optimizer_moments"); !d.empty()) l.optimizer_moments = state_dtype_from_string(d);
  if (auto d = opt_str(j, "main_params"); !d.empty()) l.main_params = state_dtype_from_string(d);
  if (auto m = opt_str(j, "recompute_modules"); !m.empty()) l.recompute_modules = recompute_modules_from_string(m);
  opt_num(j, "offload_layers", l.offload_layers, "plan.");
  if (l.ep < 1) l.ep = 1;
  if (l.etp < 1) l.etp = 1;
  return l;
}

json scenario_to_json(const Scenario& s) {
  const auto& m = s.model;
  const auto& c = s.cluster;
  json training = {{"global_batch", s.training.global_batch},
                   {"precision", to_string(s.training.precision)},
                   {"framework", to_string(s.training.framework)}};
  // The version the scenario runs, resolved (the user's, else the site's default, else paratune's), so that the
  // line says which version the prediction was for even when nobody named one.
  try {
    training["framework_version"] = version_for(s, s.training.framework).id;
  } catch (const std::invalid_argument&) {
    if (!s.training.framework_version.empty()) training["framework_version"] = s.training.framework_version;
  }
  if (s.training.flash_attention) training["flash_attention"] = *s.training.flash_attention;
  if (s.training.overlap_dp_comm) training["overlap_dp_comm"] = *s.training.overlap_dp_comm;
  if (s.training.compile) training["compile"] = *s.training.compile;
  if (s.training.tp_comm_overlap) training["tp_comm_overlap"] = *s.training.tp_comm_overlap;
  if (s.training.grad_reduce_fp32) training["grad_reduce_fp32"] = *s.training.grad_reduce_fp32;
  if (s.training.fp8_param_gather) training["fp8_param_gather"] = *s.training.fp8_param_gather;
  if (s.training.overlap_param_gather) training["overlap_param_gather"] = *s.training.overlap_param_gather;
  if (s.training.attention) training["attention"] = to_string(*s.training.attention);
  if (s.training.fp8_recipe) training["fp8_recipe"] = to_string(*s.training.fp8_recipe);
  if (s.training.pipeline_split) training["pipeline_split"] = to_string(*s.training.pipeline_split);
  if (s.training.moe_a2a_overlap) training["moe_a2a_overlap"] = *s.training.moe_a2a_overlap;
  if (s.training.moe_force_balance) training["moe_force_balance"] = *s.training.moe_force_balance;
  json cluster = {{"gpu", c.gpu}, {"nodes", c.nodes}, {"gpus_per_node", c.gpus_per_node},
                  {"nvlink_domain", c.nvlink_domain}, {"nic_count", c.nic_count}, {"nic_gbps", c.nic_gbps},
                  {"fabric", to_string(c.fabric)}, {"gpu_nic_path", c.gpu_nic_path}, {"nvls", c.nvls},
                  {"rail_aligned", c.rail_aligned}};
  json overrides = json::object();  // only those set: 0 means "the catalog's", and absent reads back as 0
  if (c.peak_tflops > 0) overrides["peak_tflops"] = c.peak_tflops;
  if (c.memory_gib > 0) overrides["memory_gib"] = c.memory_gib;
  if (c.hbm_tbps > 0) overrides["hbm_tbps"] = c.hbm_tbps;
  if (c.nvlink_gbps > 0) overrides["nvlink_gbps"] = c.nvlink_gbps;
  if (!overrides.empty()) cluster["gpu_spec"] = overrides;
  json model = {{"name", m.name}, {"layers", m.layers}, {"hidden", m.hidden}, {"heads", m.heads},
                {"kv_heads", m.kv_heads}, {"ffn_hidden", m.ffn_hidden}, {"vocab", m.vocab},
                {"seq_len", m.seq_len}, {"gated_mlp", m.gated_mlp}, {"tied_embeddings", m.tied_embeddings},
                {"dropout", m.dropout}};
  model.update(moe_model_to_json(m));  // only for MoE / MLA / head_dim / MTP models: dense plans are unchanged
  return {{"model", model}, {"training", training}, {"cluster", cluster}};
}

json layout_to_json(const Layout& l) {
  json j = {{"tp", l.tp}, {"pp", l.pp}, {"dp", l.dp}, {"cp", l.cp}, {"virtual_stages", l.virtual_stages},
            {"micro_batch", l.micro_batch}, {"zero_stage", l.zero_stage}, {"recompute", to_string(l.recompute)},
            {"sequence_parallel", l.sequence_parallel}, {"shard_group", l.shard_group}};
  if (l.ep > 1 || l.etp > 1) {  // expert parallelism (MoE); dense layouts keep their keys
    j["ep"] = l.ep; j["etp"] = l.etp; j["dispatcher"] = to_string(l.dispatcher);
  }
  if (l.first_stage_layers > 0 || l.last_stage_layers > 0) {  // a planned stage layout; others keep their keys
    j["first_stage_layers"] = l.first_stage_layers; j["last_stage_layers"] = l.last_stage_layers;
  }
  // Memory features (docs/model.md §3), only where a layout uses them: a logged plan predicts again as planned.
  if (l.precision_aware_optimizer()) {
    j["optimizer_moments"] = to_string(l.optimizer_moments); j["main_params"] = to_string(l.main_params);
  }
  if (l.recompute_modules != 0) j["recompute_modules"] = recompute_modules_to_string(l.recompute_modules);
  if (l.offload_layers > 0) j["offload_layers"] = l.offload_layers;
  return j;
}

}  // namespace paratune::tuning
