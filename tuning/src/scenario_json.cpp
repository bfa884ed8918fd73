#include "paratune/tuning/scenario_json.h"

#include "paratune/advisor/framework_versions.h"
#include "paratune/advisor/knobs.h"

#include <algorithm>
#include <limits>

#include <stdexcept>
#include <string>
#include <type_traits>
#include <variant>

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

std::string opt_str(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The keys of one section, each read by its knob (knobs.h) as the log has always been read: a number must be one
// (non-negative, within its type), a flag or a name of the wrong type is left at its default, a name must parse.
void knobs_from_json(const json& j, std::string_view section, const std::string& where, Scenario& s) {
  for (const Knob* k : knobs_of(section)) {
    if (!k->on(surface::kJson)) continue;
    const auto it = j.find(k->name);
    if (it == j.end() || it->is_null()) continue;
    switch (k->type) {
      case KnobType::Int: {
        int v = 0;
        opt_num(j, k->name, v, where);
        k->set(s, long(v));
        break;
      }
      case KnobType::Number: {
        double v = 0;
        opt_num(j, k->name, v, where);
        k->set(s, v);
        break;
      }
      case KnobType::Bool:
        if (it->is_boolean()) k->set(s, it->get<bool>());
        break;
      case KnobType::Enum:
      case KnobType::List:
        if (it->is_string() && !it->get_ref<const std::string&>().empty()) k->set(s, it->get<std::string>());
        break;
      case KnobType::Text:
      case KnobType::Word:
        if (it->is_string()) k->set(s, it->get<std::string>());
        break;
      case KnobType::Table:
        if (!it->is_object()) throw std::invalid_argument(where + k->name + ": must be an object");
        knobs_from_json(*it, k->full_name(), where + k->name + ".", s);
        break;
    }
  }
}

// The knobs of a section that are set, by their getters (knobs.h); a sub-table only when it has any.
json knobs_to_json(const Scenario& s, std::string_view section) {
  json j = json::object();
  for (const Knob* k : knobs_of(section)) {
    if (!k->on(surface::kJson)) continue;
    if (k->type == KnobType::Table) {
      json sub = knobs_to_json(s, k->full_name());
      if (!sub.empty()) j[k->name] = std::move(sub);
      continue;
    }
    std::visit(
        [&](const auto& v) {
          if constexpr (!std::is_same_v<std::decay_t<decltype(v)>, std::monostate>) j[k->name] = v;
        },
        k->get(s));
  }
  return j;
}

}  // namespace

Scenario scenario_from_json(const json& j) {
  if (!j.is_object()) throw std::invalid_argument("scenario: not an object");
  Scenario s;
  knobs_from_json(obj(j, "model"), "model", "model.", s);
  const json& t = obj(j, "training");
  knobs_from_json(t, "training", "training.", s);
  // The version the job's arguments were for (logged since framework versions exist; absent: the default then).
  if (!s.training.framework_version.empty()) {
    try {
      s.training.framework_version = resolve_version(s.training.framework, s.training.framework_version).id;
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("training.framework_version: ") + e.what());
    }
  }
  const json& c = obj(j, "cluster");
  knobs_from_json(c, "cluster", "cluster.", s);
  // The NICs the plan file lists (cluster.nics; [[cluster.nic]] in a scenario file).
  if (auto it = c.find("nics"); it != c.end() && it->is_array()) {
    for (const auto& n : *it) {
      if (!n.is_object()) continue;
      s.cluster.nics.emplace_back();  // the knobs of cluster.nic set the last NIC
      knobs_from_json(n, "cluster.nic", "cluster.nics.", s);
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
  if (auto p = opt_str(j, "pipeline_schedule"); !p.empty()) l.schedule = pipeline_schedule_from_string(p);
  if (l.ep < 1) l.ep = 1;
  if (l.etp < 1) l.etp = 1;
  return l;
}

json scenario_to_json(const Scenario& s) {
  json training = knobs_to_json(s, "training");
  // The version the scenario runs, resolved (the user's, else the site's default, else paratune's), so that the
  // line says which version the prediction was for even when nobody named one.
  try {
    training["framework_version"] = version_for(s, s.training.framework).id;
  } catch (const std::invalid_argument&) {
  }
  // Model, training and cluster as their getters give them: MoE / MLA / head_dim / MTP fields only for models that
  // have them, catalog overrides (cluster.gpu_spec) only when set (0 means "the catalog's", and absent reads back
  // as 0).
  return {{"model", knobs_to_json(s, "model")}, {"training", training}, {"cluster", knobs_to_json(s, "cluster")}};
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
  if (l.schedule) j["pipeline_schedule"] = to_string(*l.schedule);  // a fixed schedule; implied ones keep their keys
  return j;
}

}  // namespace paratune::tuning
