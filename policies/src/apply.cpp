// Resolving a partition's effective policy and applying it: mode, search limits, scenario, environment.
#include <algorithm>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "internal.h"
#include "paratune/advisor/framework_traits.h"
#include "paratune/advisor/framework_versions.h"
#include "paratune/advisor/loss_fusion.h"
#include "paratune/policies/policy.h"

namespace paratune::policies {

using detail::contains;
using detail::fmt_number;
using detail::is_paratune_var;
using detail::join;

std::string EffectivePolicy::where(const std::string& key) const {
  auto it = origins.find(key);
  if (it == origins.end()) return "site policy " + key;
  return "[" + it->second + "] " + key;
}

std::string describe(const PolicyChange& c) { return c.reason.empty() ? c.what : c.what + " — " + c.reason; }

// ---------------------------------------------------------------------------------------------------------------
// resolve

namespace {

template <typename T>
void take(const std::optional<T>& v, T& dst, std::map<std::string, std::string>& origins, const std::string& key,
          const std::string& section) {
  if (!v) return;
  dst = *v;
  origins[key] = section;
}

template <typename T>
void take_opt(const std::optional<T>& v, std::optional<T>& dst, std::map<std::string, std::string>& origins,
              const std::string& key, const std::string& section) {
  if (!v) return;
  dst = *v;
  origins[key] = section;
}

void overlay(EffectivePolicy& p, const PolicyLayer& L) {
  const std::string& s = L.section;
  auto& o = p.origins;
  take(L.enabled, p.enabled, o, "enabled", s);
  take_opt(L.mode, p.mode, o, "mode", s);
  take(L.max_mode, p.max_mode, o, "max_mode", s);
  take_opt(L.on_by_default, p.on_by_default, o, "on_by_default", s);
  take(L.on_by_default_min_gpus_per_node, p.on_by_default_min_gpus_per_node, o, "on_by_default_min_gpus_per_node",
       s);
  take(L.users_may_opt_out, p.users_may_opt_out, o, "users_may_opt_out", s);
  take(L.on_error, p.on_error, o, "on_error", s);
  take(L.suspect_ratio, p.suspect_ratio, o, "suspect_ratio", s);

  advisor::SearchLimits& l = p.limits;
  take(L.max_tp, l.max_tp, o, "limits.max_tp", s);
  take(L.max_pp, l.max_pp, o, "limits.max_pp", s);
  take(L.max_cp, l.max_cp, o, "limits.max_cp", s);
  take(L.max_ep, l.max_ep, o, "limits.max_ep", s);
  take(L.dispatchers, l.dispatchers, o, "limits.dispatchers", s);
  take(L.min_micro_batch, l.min_micro_batch, o, "limits.min_micro_batch", s);
  take(L.max_micro_batch, l.max_micro_batch, o, "limits.max_micro_batch", s);
  take(L.memory_headroom_gib, l.memory_headroom_gib, o, "limits.memory_headroom_gib", s);
  take(L.zero_stages, l.zero_stages, o, "limits.zero_stages", s);
  take(L.recompute, l.recompute_modes, o, "limits.recompute", s);
  take(L.frameworks, l.frameworks, o, "limits.frameworks", s);
  for (const auto& [fw, id] : L.framework_versions) {
    p.framework_versions[fw] = id;
    o["framework_version." + std::string(advisor::to_string(fw))] = s;
  }

  Facts& f = p.facts;
  take_opt(L.facts.gpu, f.gpu, o, "facts.gpu", s);
  take_opt(L.facts.nic_gbps, f.nic_gbps, o, "facts.nic_gbps", s);
  take_opt(L.facts.nic_count, f.nic_count, o, "facts.nic_count", s);
  take_opt(L.facts.nvlink_domain, f.nvlink_domain, o, "facts.nvlink_domain", s);
  take_opt(L.facts.fabric, f.fabric, o, "facts.fabric", s);
  take_opt(L.facts.nccl_topo_file, f.nccl_topo_file, o, "facts.nccl_topo_file", s);
  take_opt(L.facts.nvls, f.nvls, o, "facts.nvls", s);
  take_opt(L.facts.rail_aligned, f.rail_aligned, o, "facts.rail_aligned", s);
  take_opt(L.facts.leaf_oversubscription, f.leaf_oversubscription, o, "facts.leaf_oversubscription", s);
  take_opt(L.facts.kernels, f.kernels, o, "facts.kernels", s);
  take_opt(L.facts.te_version, f.te_version, o, "facts.te_version", s);
  take_opt(L.facts.profile, f.profile, o, "facts.profile", s);

  EnvRules& e = p.env;
  for (const auto& [name, value] : L.force) {
    e.defaults.erase(name);
    o.erase("env.default." + name);
    e.force[name] = value;
    o["env.force." + name] = s;
  }
  for (const auto& [name, value] : L.defaults) {
    e.force.erase(name);
    o.erase("env.force." + name);
    e.defaults[name] = value;
    o["env.default." + name] = s;
  }
  for (const auto& name : L.forbid) {
    if (!contains(e.forbid, name)) e.forbid.push_back(name);
    if (!o.count("env.forbid." + name)) o["env.forbid." + name] = s;
  }
  take_opt(L.allow_override, e.allow_override, o, "env.allow_override", s);
  take(L.env_all_jobs, e.all_jobs, o, "env.applies_to", s);

  take_opt(L.tuning_log, p.log.tuning_log, o, "log.tuning_log", s);
  take(L.log_mode, p.log.file_mode, o, "log.mode", s);
  take_opt(L.log_group, p.log.group, o, "log.group", s);
}

}  // namespace

EffectivePolicy resolve(const PolicyFile& file, const std::string& partition) {
  EffectivePolicy p;
  p.origin = file.origin;
  p.partition = partition;
  overlay(p, file.defaults);
  auto it = file.partitions.find(partition);
  if (it != file.partitions.end()) {
    p.partition_matched = true;
    overlay(p, it->second);
  }
  // Forbid always wins (a hand-built PolicyFile could contradict; a parsed one cannot).
  for (const auto& name : p.env.forbid) {
    p.env.force.erase(name);
    p.env.defaults.erase(name);
  }
  return p;
}

// ---------------------------------------------------------------------------------------------------------------
// mode

ModeDecision decide_mode(const EffectivePolicy& p, const ModeRequest& r) {
  ModeDecision d;
  const std::string part = p.partition.empty() ? std::string("this job") : "partition " + p.partition;
  if (!p.enabled) {
    d.mode = Mode::Off;
    d.env_rules_apply = false;
    d.why = "paratune is disabled for " + part + " by " + p.where("enabled") + " = false";
    if (r.option_given) d.changes.push_back({"--paratune ignored: paratune is disabled here", p.where("enabled") + " = false"});
    return d;
  }
  const bool on_default = p.on_by_default.value_or(r.plugin_on_by_default);
  const Mode base = p.mode.value_or(r.plugin_default_mode);
  const std::string base_src = p.mode ? p.where("mode") : std::string("plugstack default_mode");
  Mode m = base;
  if (!r.option_given) {
    const std::string src = p.on_by_default ? p.where("on_by_default") : std::string("plugstack on_by_default");
    if (!on_default) {
      d.mode = Mode::Off;
      d.env_rules_apply = p.env.all_jobs;
      d.why = "no --paratune and paratune is opt-in (" + src + ")";
      return d;
    }
    if (r.gpus_per_node < p.on_by_default_min_gpus_per_node) {
      d.mode = Mode::Off;
      d.env_rules_apply = p.env.all_jobs;
      d.why = "no --paratune, and on by default only for jobs with at least " +
              std::to_string(p.on_by_default_min_gpus_per_node) + " GPUs per node (" +
              p.where("on_by_default_min_gpus_per_node") + "); this job has " + std::to_string(r.gpus_per_node);
      return d;
    }
    d.why = "no --paratune: on by default (" + src + "), mode " + to_string(base) + " (" + base_src + ")";
  } else if (r.user_mode && *r.user_mode == Mode::Off) {
    if (p.users_may_opt_out) {
      d.mode = Mode::Off;
      d.env_rules_apply = p.env.all_jobs;
      d.why = "the user asked mode=off";
      return d;
    }
    d.changes.push_back({std::string("mode=off ignored: users may not opt out; mode ") + to_string(base),
                         p.where("users_may_opt_out") + " = false"});
    d.why = std::string("the user asked mode=off, but users may not opt out (") + p.where("users_may_opt_out") +
            "); mode " + to_string(base) + " (" + base_src + ")";
  } else if (r.user_mode) {
    m = *r.user_mode;
    d.why = std::string("the user asked mode=") + to_string(m);
  } else {
    d.why = std::string("mode ") + to_string(base) + " (" + base_src + ")";
  }
  if (m > p.max_mode) {
    d.changes.push_back({std::string("mode lowered to ") + to_string(p.max_mode),
                         p.where("max_mode") + " = \"" + to_string(p.max_mode) + "\" (asked: " + to_string(m) + ")"});
    d.why += std::string(", lowered to ") + to_string(p.max_mode) + " by " + p.where("max_mode");
    m = p.max_mode;
  }
  d.mode = m;
  d.env_rules_apply = m != Mode::Off || p.env.all_jobs;
  return d;
}

// ---------------------------------------------------------------------------------------------------------------
// search and scenario

advisor::SearchLimits search_limits(const EffectivePolicy& p) {
  advisor::SearchLimits l = p.limits;
  // A value the policy imposes on every job decides which layouts can start at all (advisor/env.h).
  if (const auto it = p.env.force.find("CUDA_DEVICE_MAX_CONNECTIONS"); it != p.env.force.end())
    l.cuda_device_max_connections = it->second;
  else if (std::find(p.env.forbid.begin(), p.env.forbid.end(), "CUDA_DEVICE_MAX_CONNECTIONS") != p.env.forbid.end())
    l.cuda_device_max_connections = "";
  return l;
}

const std::vector<advisor::Framework>& allowed_frameworks(const EffectivePolicy& p) {
  return p.limits.frameworks.empty() ? advisor::known_frameworks() : p.limits.frameworks;
}

std::vector<advisor::Framework> unplannable_frameworks(const EffectivePolicy& p) {
  const auto& zs = p.limits.zero_stages;
  const auto& rc = p.limits.recompute_modes;
  std::vector<advisor::Framework> out;
  for (advisor::Framework f : allowed_frameworks(p)) {
    bool zero = false, recompute = false;
    for (int z = 0; z <= 3; ++z)
      zero = zero || ((zs.empty() || std::find(zs.begin(), zs.end(), z) != zs.end()) && advisor::runs_zero(f, z, 1));
    for (advisor::Recompute r : {advisor::Recompute::None, advisor::Recompute::Selective, advisor::Recompute::Full})
      recompute = recompute ||
                  ((rc.empty() || std::find(rc.begin(), rc.end(), r) != rc.end()) && advisor::runs_recompute(f, r));
    if (!zero || !recompute) out.push_back(f);
  }
  return out;
}

namespace {

std::string list_ints(const std::vector<int>& v) {
  std::vector<std::string> s;
  for (int x : v) s.push_back(std::to_string(x));
  return join(s);
}
template <typename E>
std::string list_enums(const std::vector<E>& v) {
  std::vector<std::string> s;
  for (E x : v) s.push_back(advisor::to_string(x));
  return join(s);
}

}  // namespace

namespace {

// The site's default versions: the scenario's own framework takes one when the user named none (SPEC or scenario
// file: the user's choice wins), and every framework a search may pick instead takes its own.
void apply_framework_versions(const EffectivePolicy& p, advisor::Scenario& s, std::vector<PolicyChange>& ch) {
  s.training.site_versions = p.framework_versions;
  const auto it = p.framework_versions.find(s.training.framework);
  if (it == p.framework_versions.end() || !s.training.framework_version.empty()) return;
  const std::string name = advisor::to_string(s.training.framework);
  const std::string& builtin = advisor::resolve_version(s.training.framework, "").id;
  if (it->second == builtin) return;
  ch.push_back({name + " version " + it->second + " (paratune's default: " + builtin + ")",
                "site default " + p.where("framework_version." + name) + " = \"" + it->second + "\""});
}

// A user's cross_entropy_fusion=te where the site's Transformer Engine predates the kernel (TE 2.2): back to the
// framework's own loss, with a change saying why, instead of a refused plan.
void drop_old_te_loss(const EffectivePolicy& p, advisor::Scenario& s, std::vector<PolicyChange>& ch) {
  if (s.training.cross_entropy_fusion != advisor::LossFusion::Te || !p.facts.te_version ||
      advisor::te_version_at_least(*p.facts.te_version, 2, 2))
    return;
  ch.push_back({"Transformer Engine's fused loss not used (user asked cross_entropy_fusion=te)",
                p.where("facts.te_version") + " = \"" + *p.facts.te_version +
                    "\": parallel_cross_entropy is in TE 2.2 and later"});
  s.training.cross_entropy_fusion.reset();
}

}  // namespace

std::vector<PolicyChange> apply_to_scenario(const EffectivePolicy& p, advisor::Scenario& s) {
  std::vector<PolicyChange> ch;
  advisor::ClusterSpec& c = s.cluster;
  const Facts& f = p.facts;

  // Fixed facts.
  if (f.gpu && *f.gpu != c.gpu) {
    ch.push_back({"GPU model " + *f.gpu + " (probe: " + (c.gpu.empty() ? std::string("unknown") : c.gpu) + ")",
                  p.where("facts.gpu")});
    c.gpu = *f.gpu;
  }
  if (f.nic_gbps && *f.nic_gbps != c.nic_gbps) {
    ch.push_back({"NIC rate " + fmt_number(*f.nic_gbps) + " Gb/s (probe: " + fmt_number(c.nic_gbps) + " Gb/s)",
                  p.where("facts.nic_gbps")});
    c.nic_gbps = *f.nic_gbps;
    for (auto& n : c.nics) n.gbps = *f.nic_gbps;
  }
  if (f.nic_count && *f.nic_count != c.nic_count) {
    std::string what = "compute NICs per node " + std::to_string(*f.nic_count) + " (probe: " +
                       std::to_string(c.nic_count) + ")";
    // The probe's list is what the bandwidth and NCCL_IB_HCA come from, so the fact must change it too: fewer NICs
    // than probed keeps the first ones (GPU-affinity order; the rest are not compute NICs), more than probed drops
    // the list (the node's names for the others are not known; the rate is then nic_count x nic_gbps).
    if (!c.nics.empty() && size_t(*f.nic_count) < c.nics.size()) {
      c.nics.resize(size_t(*f.nic_count));
      what += ": only the first " + std::to_string(*f.nic_count) + " probed NICs are used";
    } else if (!c.nics.empty() && size_t(*f.nic_count) > c.nics.size()) {
      what += ": the probe's list of " + std::to_string(c.nics.size()) + " is not used (no device names stated)";
      c.nics.clear();
    }
    ch.push_back({what, p.where("facts.nic_count")});
    c.nic_count = *f.nic_count;
  }
  if (f.nvlink_domain) {
    // The job's share of the node: a domain of 4 on a job with 2 GPUs per node is 2.
    const int dom = c.gpus_per_node > 0 ? std::gcd(*f.nvlink_domain, c.gpus_per_node) : *f.nvlink_domain;
    if (dom != c.nvlink_domain) {
      std::string what = "NVLink domain " + std::to_string(dom) + " GPUs (probe: " + std::to_string(c.nvlink_domain) + ")";
      std::string why = p.where("facts.nvlink_domain") + " = " + std::to_string(*f.nvlink_domain);
      if (dom != *f.nvlink_domain) why += ", within this job's " + std::to_string(c.gpus_per_node) + " GPUs per node";
      ch.push_back({what, why});
      c.nvlink_domain = dom;
    }
  }
  if (f.fabric && (*f.fabric != c.fabric || !c.fabric_known)) {
    ch.push_back({std::string("fabric ") + advisor::to_string(*f.fabric) + " (probe: " +
                      (c.fabric_known ? advisor::to_string(c.fabric) : "not known") + ")",
                  p.where("facts.fabric")});
    c.fabric = *f.fabric;
    c.fabric_known = true;
  }
  if (f.nccl_topo_file && *f.nccl_topo_file != c.nccl_topo_file) {
    ch.push_back({"NCCL topology file " + *f.nccl_topo_file +
                      (c.nccl_topo_file.empty() ? std::string() : " (probe: " + c.nccl_topo_file + ")"),
                  p.where("facts.nccl_topo_file")});
    c.nccl_topo_file = *f.nccl_topo_file;
  }
  if (f.te_version && *f.te_version != c.te_version) {
    ch.push_back({"Transformer Engine " + *f.te_version +
                      (c.te_version.empty() ? std::string() : " (scenario: " + c.te_version + ")"),
                  p.where("facts.te_version")});
    c.te_version = *f.te_version;
  }
  drop_old_te_loss(p, s, ch);
  // Whether the rails are aligned is not something the probe can see (it is the switch cabling): stated here, the
  // plan may keep each ring on one rail (NCCL_CROSS_NIC=0) and prices the fabric as such.
  if (f.rail_aligned && (*f.rail_aligned != c.rail_aligned || !c.rail_alignment_known)) {
    ch.push_back({std::string("fabric ") + (*f.rail_aligned ? "rail-optimised" : "not rail-optimised") + " (probe: " +
                      (c.rail_alignment_known ? (c.rail_aligned ? "rail-optimised" : "not") : "not known") + ")",
                  p.where("facts.rail_aligned")});
    c.rail_aligned = *f.rail_aligned;
    c.rail_alignment_known = true;
  }
  if (f.nvls && *f.nvls != c.nvls) {
    ch.push_back({std::string("NVLink SHARP ") + (*f.nvls ? "usable" : "not used") + " (probe: " +
                      (c.nvls ? "usable" : "not usable") + ")",
                  p.where("facts.nvls")});
    c.nvls = *f.nvls;
  }

  // Framework, then its version.
  const auto& fw = p.limits.frameworks;
  if (!fw.empty() && !contains(fw, s.training.framework)) {
    ch.push_back({std::string("framework ") + advisor::to_string(fw.front()) + " instead of " +
                      advisor::to_string(s.training.framework),
                  p.where("limits.frameworks") + " allows only " + list_enums(fw)});
    if (!s.training.framework_version.empty()) {
      ch.push_back({"framework_version " + s.training.framework_version + " dropped",
                    std::string("it is a ") + advisor::to_string(s.training.framework) + " version, and " +
                        p.where("limits.frameworks") + " replaced the framework"});
      s.training.framework_version.clear();
    }
    s.training.framework = fw.front();
  }
  apply_framework_versions(p, s, ch);

  // User constraints beyond the limits: removed, the search picks within the limits.
  advisor::ParallelSpec& q = s.parallel;
  bool degree_removed = false;
  auto cap = [&](std::optional<int>& v, int limit, const char* name, const char* upper, const std::string& key) {
    if (!v || limit <= 0 || *v <= limit) return;
    ch.push_back({std::string(upper) + " capped at " + std::to_string(limit),
                  p.where(key) + " = " + std::to_string(limit) + " (user asked " + name + "=" + std::to_string(*v) +
                      "; the search picks " + name + " <= " + std::to_string(limit) + ")"});
    v.reset();
    degree_removed = true;
  };
  cap(q.tp, p.limits.max_tp, "tp", "TP", "limits.max_tp");
  const bool had_pp = q.pp.has_value();
  cap(q.pp, p.limits.max_pp, "pp", "PP", "limits.max_pp");
  cap(q.cp, p.limits.max_cp, "cp", "CP", "limits.max_cp");
  if (had_pp && !q.pp && q.virtual_stages) {
    ch.push_back({"virtual pipeline stages no longer fixed (user asked " + std::to_string(*q.virtual_stages) + ")",
                  "they went with the pp the policy removed"});
    q.virtual_stages.reset();
  }
  if (degree_removed && q.dp) {
    ch.push_back({"DP no longer fixed (user asked dp=" + std::to_string(*q.dp) + ")",
                  "tp*pp*dp*cp must equal the GPU count, and a degree it was fixed with was removed by the policy"});
    q.dp.reset();
  }
  const auto& zs = p.limits.zero_stages;
  if (q.zero_stage && !zs.empty() && !contains(zs, *q.zero_stage)) {
    ch.push_back({"ZeRO stage " + std::to_string(*q.zero_stage) + " not allowed",
                  p.where("limits.zero_stages") + " = [" + list_ints(zs) + "] (user asked zero=" +
                      std::to_string(*q.zero_stage) + "; the search picks among the allowed stages)"});
    q.zero_stage.reset();
  }
  const auto& rc = p.limits.recompute_modes;
  if (q.recompute && !rc.empty() && !contains(rc, *q.recompute)) {
    ch.push_back({std::string("recompute ") + advisor::to_string(*q.recompute) + " not allowed",
                  p.where("limits.recompute") + " = [" + list_enums(rc) + "] (user asked recompute=" +
                      advisor::to_string(*q.recompute) + "; the search picks among the allowed modes)"});
    q.recompute.reset();
  }
  // Settings that imply a choice the limits exclude go with it: the search could only answer "nothing fits".
  const bool selective_allowed = rc.empty() || contains(rc, advisor::Recompute::Selective);
  const bool none_allowed = rc.empty() || contains(rc, advisor::Recompute::None);
  if (q.etp && p.limits.max_tp > 0 && *q.etp > p.limits.max_tp) {
    ch.push_back({"expert TP no longer fixed (user asked etp=" + std::to_string(*q.etp) + ")",
                  p.where("limits.max_tp") + " = " + std::to_string(p.limits.max_tp) + ": expert TP is 1 or the TP degree"});
    q.etp.reset();
  }
  if (q.recompute_modules && !selective_allowed) {
    ch.push_back({"recompute modules no longer fixed",
                  p.where("limits.recompute") + " = [" + list_enums(rc) + "]: modules are selective recompute's"});
    q.recompute_modules.reset();
  }
  if (q.offload_layers.value_or(0) > 0 && !none_allowed) {
    ch.push_back({"activation offload no longer fixed (user asked " + std::to_string(*q.offload_layers) + " layers)",
                  p.where("limits.recompute") + " = [" + list_enums(rc) + "]: offloaded layers are not recomputed"});
    q.offload_layers.reset();
  }
  if (q.pipeline_schedule && p.limits.max_pp == 1 && *q.pipeline_schedule != advisor::PipelineSchedule::OneFOneB) {
    ch.push_back({std::string("pipeline schedule ") + advisor::to_string(*q.pipeline_schedule) + " no longer fixed",
                  p.where("limits.max_pp") + " = 1: no pipeline to schedule"});
    q.pipeline_schedule.reset();
  }
  if (q.micro_batch) {
    const int mb = *q.micro_batch;
    if (mb < p.limits.min_micro_batch) {
      ch.push_back({"micro-batch " + std::to_string(mb) + " below the minimum " + std::to_string(p.limits.min_micro_batch),
                    p.where("limits.min_micro_batch") + " (user asked mbs=" + std::to_string(mb) +
                        "; the search picks within the bounds)"});
      q.micro_batch.reset();
    } else if (p.limits.max_micro_batch > 0 && mb > p.limits.max_micro_batch) {
      ch.push_back({"micro-batch capped at " + std::to_string(p.limits.max_micro_batch),
                    p.where("limits.max_micro_batch") + " = " + std::to_string(p.limits.max_micro_batch) +
                        " (user asked mbs=" + std::to_string(mb) + "; the search picks within the bounds)"});
      q.micro_batch.reset();
    }
  }
  detail::apply_kernels_and_experts(p, s, ch);
  return ch;
}

// ---------------------------------------------------------------------------------------------------------------
// environment

EnvPlan plan_env(const EffectivePolicy& p, const std::vector<advisor::EnvSetting>& wanted) {
  EnvPlan out;
  const EnvRules& e = p.env;
  std::set<std::string> seen;
  for (const auto& w : wanted) {
    if (!seen.insert(w.name).second) continue;  // first wins
    if (is_paratune_var(w.name)) {              // the contract: never touched by env rules
      out.set_if_unset.push_back(w);
      continue;
    }
    if (contains(e.forbid, w.name)) {
      out.changes.push_back({w.name + " not set (paratune wanted " + w.value + (w.reason.empty() ? "" : ": " + w.reason) + ")",
                             "forbidden by " + p.where("env.forbid." + w.name)});
      continue;
    }
    if (auto it = e.force.find(w.name); it != e.force.end()) {
      if (it->second != w.value)
        out.changes.push_back({w.name + "=" + it->second + " instead of paratune's " + w.value,
                               "forced by " + p.where("env.force." + w.name)});
      continue;  // added below with the other forced ones
    }
    if (auto it = e.defaults.find(w.name); it != e.defaults.end()) {
      if (it->second != w.value)
        out.changes.push_back({w.name + "=" + it->second + " instead of paratune's " + w.value,
                               "site default " + p.where("env.default." + w.name) + " (a user's value is kept)"});
      out.set_if_unset.push_back({w.name, it->second, "site default (" + p.where("env.default." + w.name) + ")"});
      continue;
    }
    if (e.allow_override && !contains(*e.allow_override, w.name)) {
      advisor::EnvSetting s = w;
      s.reason += (s.reason.empty() ? "" : "; ") + std::string("users may not override it (not in ") +
                  p.where("env.allow_override") + ")";
      out.changes.push_back({w.name + "=" + w.value + " replaces a user's value",
                             "not in " + p.where("env.allow_override") + " (users may override only " +
                                 (e.allow_override->empty() ? std::string("nothing") : join(*e.allow_override)) + ")"});
      out.set_always.push_back(std::move(s));
      continue;
    }
    out.set_if_unset.push_back(w);
  }
  for (const auto& [name, value] : e.force) {
    out.set_always.push_back({name, value, "forced by site policy (" + p.where("env.force." + name) + ")"});
    out.changes.push_back({name + "=" + value + " forced (a user's value is replaced)",
                           "forced by site policy (" + p.where("env.force." + name) + ")"});
  }
  for (const auto& [name, value] : e.defaults) {
    if (seen.count(name)) continue;  // already placed above, with paratune's reason replaced
    out.set_if_unset.push_back({name, value, "site default (" + p.where("env.default." + name) + ")"});
    out.changes.push_back({name + "=" + value + " set unless the job has it",
                           "site default (" + p.where("env.default." + name) + ")"});
  }
  for (const auto& name : e.forbid) {
    out.unset.push_back(name);
    if (!seen.count(name))
      out.changes.push_back({name + " removed from the job environment if present",
                             "forbidden by " + p.where("env.forbid." + name)});
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// summary

std::string summary(const EffectivePolicy& p) {
  std::string s;
  auto line = [&](const std::string& l) { s += "  " + l + "\n"; };
  line(std::string("enabled ") + (p.enabled ? "yes" : "no") + ", mode " +
       (p.mode ? to_string(*p.mode) : "(plugstack default_mode)") + ", max_mode " + to_string(p.max_mode) +
       ", on_by_default " + (p.on_by_default ? (*p.on_by_default ? "yes" : "no") : "(plugstack on_by_default)") +
       (p.on_by_default_min_gpus_per_node > 0
            ? " (jobs with >= " + std::to_string(p.on_by_default_min_gpus_per_node) + " GPUs per node)"
            : std::string()) +
       ", users_may_opt_out " + (p.users_may_opt_out ? "yes" : "no") + ", on_error " + to_string(p.on_error) +
       ", suspect_ratio " + fmt_number(p.suspect_ratio));
  const auto& l = p.limits;
  std::vector<std::string> lim;
  if (l.max_tp) lim.push_back("max_tp " + std::to_string(l.max_tp));
  if (l.max_pp) lim.push_back("max_pp " + std::to_string(l.max_pp));
  if (l.max_cp) lim.push_back("max_cp " + std::to_string(l.max_cp));
  if (l.max_ep) lim.push_back("max_ep " + std::to_string(l.max_ep));
  if (!l.dispatchers.empty()) lim.push_back("dispatchers [" + list_enums(l.dispatchers) + "]");
  if (!l.zero_stages.empty()) lim.push_back("zero_stages [" + list_ints(l.zero_stages) + "]");
  if (!l.recompute_modes.empty()) lim.push_back("recompute [" + list_enums(l.recompute_modes) + "]");
  if (!l.frameworks.empty()) lim.push_back("frameworks [" + list_enums(l.frameworks) + "]");
  if (l.min_micro_batch > 1) lim.push_back("min_micro_batch " + std::to_string(l.min_micro_batch));
  if (l.max_micro_batch) lim.push_back("max_micro_batch " + std::to_string(l.max_micro_batch));
  if (l.memory_headroom_gib > 0) lim.push_back("memory_headroom_gib " + fmt_number(l.memory_headroom_gib));
  line("limits: " + (lim.empty() ? std::string("none") : join(lim)));
  if (!p.framework_versions.empty()) {
    std::vector<std::string> versions;
    for (const auto& [fw, id] : p.framework_versions) versions.push_back(std::string(advisor::to_string(fw)) + " " + id);
    line("framework_version (unless the job names one): " + join(versions));
  }
  std::vector<std::string> facts;
  const Facts& f = p.facts;
  if (f.gpu) facts.push_back("gpu " + *f.gpu);
  if (f.nic_gbps) facts.push_back("nic_gbps " + fmt_number(*f.nic_gbps));
  if (f.nic_count) facts.push_back("nic_count " + std::to_string(*f.nic_count));
  if (f.nvlink_domain) facts.push_back("nvlink_domain " + std::to_string(*f.nvlink_domain));
  if (f.fabric) facts.push_back(std::string("fabric ") + advisor::to_string(*f.fabric));
  if (f.nccl_topo_file) facts.push_back("nccl_topo_file " + *f.nccl_topo_file);
  if (f.nvls) facts.push_back(std::string("nvls ") + (*f.nvls ? "true" : "false"));
  if (f.rail_aligned) facts.push_back(std::string("rail_aligned ") + (*f.rail_aligned ? "true" : "false"));
  if (f.leaf_oversubscription) facts.push_back("leaf_oversubscription " + fmt_number(*f.leaf_oversubscription));
  if (f.kernels) facts.push_back("kernels installed [" + list_enums(*f.kernels) + "]");
  if (f.te_version) facts.push_back("te_version " + *f.te_version);
  if (f.profile) facts.push_back("profile " + *f.profile);
  line("facts: " + (facts.empty() ? std::string("none (the probe decides)") : join(facts)));
  const EnvRules& e = p.env;
  std::vector<std::string> env;
  for (const auto& [n, v] : e.force) env.push_back("force " + n + "=" + v);
  for (const auto& [n, v] : e.defaults) env.push_back("default " + n + "=" + v);
  for (const auto& n : e.forbid) env.push_back("forbid " + n);
  if (e.allow_override)
    env.push_back("allow_override [" + join(*e.allow_override) + "]");
  line("env (" + std::string(e.all_jobs ? "all jobs" : "paratune jobs only") + "): " +
       (env.empty() ? std::string("no rules") : join(env, "; ")));
  line("log: " + (p.log.tuning_log ? *p.log.tuning_log : std::string("(plugstack log_dir)/tuning.jsonl")) +
       ", mode " + detail::fmt_octal_mode(p.log.file_mode) + ", group " +
       (p.log.group ? *p.log.group : std::string("(root's)")));
  return s;
}

}  // namespace paratune::policies
