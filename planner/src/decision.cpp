#include "paratune/planner/decision.h"

#include <cstdio>
#include <stdexcept>

#include "paratune/advisor/catalog.h"
#include "paratune/advisor/framework_args.h"
#include "paratune/advisor/framework_versions.h"
#include "paratune/probe/probe.h"
#include "paratune/planner/plan_json.h"
#include "paratune/planner/scenario_builder.h"

namespace paratune::planner {

namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string layout_text(const advisor::Layout& l) {
  return "tp=" + std::to_string(l.tp) + " pp=" + std::to_string(l.pp) + " dp=" + std::to_string(l.dp) +
         " cp=" + std::to_string(l.cp);
}

// The job's place under the leaf switches, with the site's oversubscription above them, into the scenario.
void apply_fabric(const DecisionInput& in, Decision& d) {
  if (!in.fabric || static_cast<int>(in.fabric->node_order.size()) != d.scenario.cluster.nodes) return;
  d.fabric = in.fabric;
  advisor::Placement p = in.fabric->placement;
  p.oversubscription = in.policy.facts.leaf_oversubscription.value_or(policies::kDefaultLeafOversubscription);
  std::string leaves;
  for (size_t i = 0; i < p.leaf_names.size(); ++i)
    leaves += (i ? ", " : "") + p.leaf_names[i] + ": " + std::to_string(p.nodes_per_leaf[i]);
  d.notes.push_back("placement: " + std::to_string(d.scenario.cluster.nodes) + " nodes under " +
                    std::to_string(p.nodes_per_leaf.size()) + " leaf switch" + (p.nodes_per_leaf.size() > 1 ? "es" : "") +
                    " (" + leaves + "), oversubscription " + fixed(p.oversubscription, 2) + " above the leaves (" +
                    (in.policy.facts.leaf_oversubscription ? "site policy facts.leaf_oversubscription"
                                                           : "default: non-blocking") +
                    "); ranks follow the nodes leaf by leaf (PARATUNE_NODE_ORDER)");
  d.scenario.cluster.placement = p;
}

// Whether the placement changed the plan: the same search without it, and a note saying what it would have been.
void explain_placement(Decision& d, const advisor::SearchLimits& limits) {
  const auto& p = *d.scenario.cluster.placement;
  if (p.nodes_per_leaf.size() < 2 || p.oversubscription <= 1) return;
  advisor::Scenario flat = d.scenario;
  flat.cluster.placement.reset();
  const auto without = advisor::advise(flat, limits);
  const auto& a = d.plan.layout;
  const auto& b = without.layout;
  if (a.tp == b.tp && a.pp == b.pp && a.dp == b.dp && a.cp == b.cp && a.zero_stage == b.zero_stage) {
    d.notes.push_back("placement: the plan is the one a single switch would get (" + layout_text(a) +
                      "); its inter-node groups lose " +
                      fixed(100 * (1 - d.plan.prediction.tokens_per_s / std::max(1e-9, without.prediction.tokens_per_s)), 1) +
                      "% throughput to the leaf uplinks");
    return;
  }
  d.notes.push_back("placement changed the plan: under one non-blocking switch it would be " + layout_text(b) +
                    " (predicted " + fixed(without.prediction.tokens_per_s, 0) + " tokens/s there); across " +
                    std::to_string(p.nodes_per_leaf.size()) + " leaf switches with " + fixed(p.oversubscription, 2) +
                    ":1 oversubscription that layout's rings crossing the leaves are slowed, so " + layout_text(a) +
                    " wins (predicted " + fixed(d.plan.prediction.tokens_per_s, 0) + " tokens/s)");
}

// torchrun's rendezvous host is the allocation's first node; the port is derived from the job id so that two
// jobs sharing a first node do not collide (20000-39999, above the usual ephemeral-port floor of 32768 only in part).
advisor::Launch launch_for(const Allocation& alloc) {
  advisor::Launch l;
  if (alloc.first_node.empty()) return l;
  l.master_addr = alloc.first_node;
  unsigned long id = 0;
  for (char c : alloc.job_id)
    if (c >= '0' && c <= '9') id = (id * 10 + unsigned(c - '0')) % 20000;
  l.master_port = std::to_string(20000 + id);
  l.job_id = alloc.job_id;
  return l;
}

}  // namespace

policies::ModeDecision decide_job_mode(const OptionSpec* spec, const PluginConfig& config,
                                       const policies::EffectivePolicy& policy, int gpus_per_node) {
  policies::ModeRequest r;
  r.option_given = spec != nullptr;
  if (spec) r.user_mode = spec->mode;
  r.gpus_per_node = gpus_per_node;
  r.plugin_default_mode = config.default_mode;
  r.plugin_on_by_default = config.enabled_by_default;
  return policies::decide_mode(policy, r);
}

namespace {

// A hardware profile measured on nodes of this node's fingerprint replaces the catalog's rates it measured; one
// for another GPU or node type is left out, and the notes say so (the tuning log and the plan file keep them).
void apply_profile(const advisor::HardwareProfile& profile, Decision& d) {
  const auto use = advisor::use_profile(profile, d.scenario, d.fingerprint);
  if (!use.applies) {
    d.notes.push_back(use.warning);
    return;
  }
  d.scenario = advisor::with_profile(d.scenario, use);
  d.notes.insert(d.notes.end(), use.notes.begin(), use.notes.end());
}

}  // namespace

namespace {

// A GPU the node's topology does not name in the catalog. A job's user cannot describe it (the scenario's
// [cluster.gpu_spec] is the command line's), the site can, where it is one of the catalog's: say which GPU the
// probe saw and where each of them names it. The probe writes a GPU it cannot name as "unknown-VVVV:DDDD" (PCI
// vendor:device); device 0000 means the source carried no device id, as the static NCCL topology files of cloud
// VMs do.
void require_known_gpu(const advisor::ClusterSpec& c) {
  if (advisor::gpu_described(c)) return;
  std::string seen = "GPU '" + c.gpu + "' is not in the catalog";
  if (c.gpu.empty()) seen = "the topology names no GPU";
  if (c.gpu.rfind("unknown-", 0) == 0)
    seen = "the topology names no GPU model, only PCI " + c.gpu.substr(8) +
           (c.gpu.compare(c.gpu.size() - 4, 4, "0000") == 0 ? " (no device id: static NCCL topology files carry none)"
                                                            : "");
  throw std::invalid_argument("cluster.gpu: " + seen +
                              "; if it is one of the catalog's GPUs, the site policy names it: facts.gpu = \"KEY\" "
                              "in [defaults.facts] or [partition.NAME.facts] (`paratune advise --help` lists the "
                              "keys); a scenario for `paratune` may describe it instead ([cluster.gpu_spec] "
                              "peak_tflops and memory_gib)");
}

// A resumed run whose checkpoint needs what the site policy then removed (a ZeRO stage, a framework, a degree the
// format cannot reshard) cannot load it: refused, so the job runs untouched, instead of a plan whose notes say the
// checkpoint was kept.
void require_checkpoint_kept(const advisor::Scenario& resumed, const advisor::Scenario& now, const std::string& origin,
                             const std::vector<policies::PolicyChange>& changes) {
  const advisor::ParallelSpec &a = resumed.parallel, &b = now.parallel;
  std::string lost;
  const auto degree = [&](const char* name, const std::optional<int>& before, const std::optional<int>& after) {
    if (before && before != after) lost += std::string(lost.empty() ? "" : ", ") + name + "=" + std::to_string(*before);
  };
  if (resumed.training.framework != now.training.framework)
    lost = std::string("framework ") + advisor::to_string(resumed.training.framework);
  degree("zero", a.zero_stage, b.zero_stage);
  degree("tp", a.tp, b.tp);
  degree("pp", a.pp, b.pp);
  degree("cp", a.cp, b.cp);
  degree("dp", a.dp, b.dp);
  degree("ep", a.ep, b.ep);
  degree("etp", a.etp, b.etp);
  if (lost.empty()) return;
  std::string why;
  for (const auto& c : changes) why += (why.empty() ? "" : "; ") + policies::describe(c);
  throw std::invalid_argument("resume from " + origin + ": its checkpoint needs " + lost +
                              ", which the site policy does not allow here (" + why +
                              "): convert the checkpoint, or resume where the policy allows it");
}

// The scenario the plan is for: the SPEC's (or the whole scenario's) on the node and the allocation, a resumed
// run's constraints, then the site policy's facts and caps, which have the last word; validated once, here.
void settle_scenario(const DecisionInput& in, Decision& d) {
  if (in.scenario) {
    d.scenario = in.topology_known ? cluster_over_scenario(*in.scenario, in.topology, d.notes) : *in.scenario;
    plan_precision(d.scenario, /*given=*/false, d.notes);
  } else {
    d.scenario = build_scenario(in.spec, in.config, in.alloc, in.topology, in.scenario_text, d.notes);
  }
  // A resumed run keeps its checkpoint's format and sharding family (the policy below still has the last word).
  if (!in.resume_text.empty()) apply_resume(d.scenario, in.resume_text, in.resume_origin, d.notes);
  const advisor::Scenario resumed = d.scenario;
  // The site has the last word: its facts replace the probe's, its caps replace the user's constraints.
  d.policy_changes = policies::apply_to_scenario(in.policy, d.scenario);
  if (!in.resume_text.empty()) require_checkpoint_kept(resumed, d.scenario, in.resume_origin, d.policy_changes);
  if (in.topology_known) {
    resolve_nvlink_assumption(in.topology, in.policy.facts.nvlink_domain.has_value(), d.scenario.cluster, d.notes);
    require_known_gpu(d.scenario.cluster);
  }
  advisor::validate(d.scenario);
}

// The search's limits: the site policy's caps, what the caller asked to see, the site's calibration.
void settle_limits(const DecisionInput& in, Decision& d) {
  d.limits = policies::search_limits(in.policy);
  if (in.top_n) d.limits.top_n = *in.top_n;
  if (in.all_frameworks) d.limits.all_frameworks = *in.all_frameworks;
  if (!in.calibration) return;
  d.limits.params = advisor::calibrated_params(*in.calibration, d.scenario);
  // The same lookup calibrated_params made: the stack's own entry first, then the framework-less one.
  const auto& c = d.scenario.cluster;
  if (const auto* e = advisor::find_entry(*in.calibration, c.gpu, c.fabric, d.scenario.training.framework)) {
    d.calibrated = true;
    d.notes.push_back("model calibrated for " + c.gpu + " on " + advisor::to_string(c.fabric) +
                      (e->framework.empty() ? std::string(" (all frameworks)") : " with " + e->framework) +
                      " from this site's history");
  }
  // Memory head-room the site's own OOM deaths and near-limit runs taught (calibration [[memory]]): on top of
  // the policy's head-room, so a layout like the one that died no longer fits.
  d.calibration_entries = calibration_json(*in.calibration, d.scenario)["entries"];
  if (const double h = advisor::calibrated_headroom_gib(*in.calibration, d.scenario); h > 0) {
    d.limits.memory_headroom_gib += h;
    d.notes.push_back("memory head-room " + fixed(h, 1) + " GiB per GPU learned from this site's jobs");
  }
}

}  // namespace

Decision decide(const DecisionInput& in) {
  Decision d;
  d.mode = in.mode;
  if (in.topology_known)
    d.fingerprint = in.topology.fingerprint.empty() ? probe::compute_fingerprint(in.topology) : in.topology.fingerprint;
  settle_scenario(in, d);
  if (in.profile) apply_profile(*in.profile, d);
  settle_limits(in, d);
  apply_fabric(in, d);
  d.plan = advisor::advise(d.scenario, d.limits);
  d.launch = launch_for(in.alloc);
  if (d.scenario.cluster.placement) explain_placement(d, d.limits);
  d.args = advisor::framework_args(d.scenario, d.plan, d.launch);
  // mode=suggest sets PARATUNE_* only, but the arguments may need the plan's own variables (Megatron asserts
  // CUDA_DEVICE_MAX_CONNECTIONS=1 with tp or cp > 1 before Blackwell): the plan says which, for the user to set.
  if (d.mode == Mode::Suggest && !d.plan.env.empty()) {
    std::string wanted;
    for (const auto& e : d.plan.env) wanted += (wanted.empty() ? "" : "; ") + e.name + "=" + e.value + " (" + e.reason + ")";
    d.args.notes.push_back("mode=suggest: the plan's variables are not set; set them where the job needs them: " +
                           wanted);
  }
  return d;
}

JobPlan plan_decision(Decision d, const policies::EffectivePolicy& policy,
                      const std::vector<policies::PolicyChange>& mode_changes, const std::string& plan_dir) {
  JobPlan out;
  d.policy_changes.insert(d.policy_changes.begin(), mode_changes.begin(), mode_changes.end());
  out.env = plan_dir.empty() ? decision_env(d, "", "")
                             : decision_env(d, plan_dir + "/plan.json", plan_dir + "/report.jsonl");
  out.injection = policy_injection(policy, out.env);
  // The policy's changes to the variables belong in the plan file (the paths are PARATUNE_*: they change none).
  d.policy_changes.insert(d.policy_changes.end(), out.injection.changes.begin(), out.injection.changes.end());
  out.files = decision_files(d);
  out.decision = std::move(d);
  return out;
}

JobPlan plan_job(const DecisionInput& in, const std::vector<policies::PolicyChange>& mode_changes,
                 const std::string& plan_dir) {
  return plan_decision(decide(in), in.policy, mode_changes, plan_dir);
}

EnvInjection policy_injection(const policies::EffectivePolicy& policy, const std::vector<EnvAssignment>& wanted) {
  std::vector<advisor::EnvSetting> settings;
  for (const auto& w : wanted) settings.push_back({w.name, w.value, w.reason});
  const auto plan = policies::plan_env(policy, settings);
  EnvInjection out;
  for (const auto& e : plan.set_always) {
    out.assignments.push_back({e.name, e.value, e.reason});
    out.force.push_back(e.name);
  }
  for (const auto& e : plan.set_if_unset) out.assignments.push_back({e.name, e.value, e.reason});
  out.unset = plan.unset;
  out.changes = plan.changes;
  return out;
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
  if (d.scenario.model.is_moe()) {  // mixture of experts: the expert layout (docs/model.md §9)
    env.push_back({"PARATUNE_EP", std::to_string(l.ep), "expert-parallel degree"});
    env.push_back({"PARATUNE_ETP", std::to_string(l.etp), "expert tensor-parallel degree"});
    env.push_back({"PARATUNE_MOE_DISPATCHER", advisor::to_string(l.dispatcher), "MoE token dispatcher"});
  }
  env.push_back({"PARATUNE_FRAMEWORK", advisor::to_string(d.plan.framework), "the framework the plan is for"});
  env.push_back({"PARATUNE_FRAMEWORK_VERSION", advisor::version_for(d.scenario, d.plan.framework).id,
                 "the framework version the arguments are for"});
  if (!d.launch.master_addr.empty()) {
    env.push_back({"PARATUNE_MASTER_ADDR", d.launch.master_addr, "the allocation's first node: torchrun's rendezvous"});
    env.push_back({"PARATUNE_MASTER_PORT", d.launch.master_port, "rendezvous port, derived from the job id"});
  }
  if (!plan_path.empty()) {
    env.push_back({"PARATUNE_PLAN", plan_path, "the plan file (JSON)"});
    const auto dir = plan_path.substr(0, plan_path.find_last_of('/') + 1);
    env.push_back({"PARATUNE_ARGS", dir + primary_args_file(d), "ready-to-use arguments for the framework"});
  }
  // The same arguments in the environment, for nodes that cannot see the plan directory (job_dir not shared):
  // every step inherits the batch step's environment, wherever it runs.
  if (auto text = primary_args_text(d); text.size() <= kMaxArgsTextBytes)
    env.push_back({"PARATUNE_ARGS_TEXT", text, "the framework arguments (content of $PARATUNE_ARGS)"});
  if (!report_path.empty()) env.push_back({"PARATUNE_REPORT", report_path, "append throughput JSON lines here"});
  if (d.fabric) {
    std::string order;
    for (const auto& n : d.fabric->node_order) order += (order.empty() ? "" : ",") + n;
    if (order.size() <= kMaxArgsTextBytes)
      env.push_back({"PARATUNE_NODE_ORDER", order, "the job's nodes in rank order, leaf switch by leaf switch"});
  }
  if (d.mode == Mode::Apply)
    for (const auto& e : d.plan.env) env.push_back({e.name, e.value, e.reason});
  return env;
}

static nlohmann::json placement_json(const Decision& d) {
  if (!d.fabric) return nullptr;
  nlohmann::json leaf = nlohmann::json::object();
  for (size_t i = 0; i < d.fabric->node_order.size(); ++i) leaf[d.fabric->node_order[i]] = d.fabric->leaf_of_node[i];
  return {{"node_order", d.fabric->node_order},
          {"leaf_switch", leaf},
          {"oversubscription", d.scenario.cluster.placement ? d.scenario.cluster.placement->oversubscription : 1.0},
          {"groups", parallel_groups(d.plan.layout, d.scenario.cluster.gpus_per_node, d.fabric->node_order)},
          {"hostfile", "hostfile (one node per line, in rank order: node rank = line number - 1)"}};
}

nlohmann::json decision_json(const Decision& d) {
  nlohmann::json changes = nlohmann::json::array();
  for (const auto& c : d.policy_changes) changes.push_back({{"what", c.what}, {"reason", c.reason}});
  const auto& args = d.args;
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : args.files) files.push_back(f.name);
  return {{"mode", to_string(d.mode)},
          {"fingerprint", d.fingerprint},
          {"framework", {{"name", advisor::to_string(d.plan.framework)}, {"version", args.version},
                         {"args_files", files}, {"torchrun", args.torchrun}, {"yours", args.notes}}},
          {"policy_changes", changes},
          {"calibrated", d.calibrated},
          {"calibration_entries", d.calibration_entries},
          {"scenario", to_json(d.scenario)},
          {"plan", to_json(d.plan)},
          {"notes", d.notes},
          {"placement", placement_json(d)}};
}

// decide() makes the arguments; a Decision put together by hand (tests) must set them too.
const advisor::ArgsFile& primary_file(const Decision& d) {
  if (d.args.files.empty()) throw std::logic_error("the decision has no framework arguments (decide() makes them)");
  return d.args.files.front();
}

std::string primary_args_file(const Decision& d) {
  return primary_file(d).name;
}

std::string primary_args_text(const Decision& d) {
  std::string text = primary_file(d).content;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

std::vector<std::pair<std::string, std::string>> decision_files(const Decision& d) {
  const auto& args = d.args;
  // A file name or note with invalid UTF-8 (user input) must not stop the plan files: replace, never throw.
  std::vector<std::pair<std::string, std::string>> out = {
      {"plan.json", decision_json(d).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"}};
  for (const auto& f : args.files) out.emplace_back(f.name, f.content);
  out.emplace_back("torchrun.args", args.torchrun);
  if (d.fabric) {  // several nodes under Slurm's leaf switches: one node per line, in rank order
    std::string hostfile;
    for (const auto& n : d.fabric->node_order) hostfile += n + "\n";
    out.emplace_back("hostfile", hostfile);
  }
  return out;
}

}  // namespace paratune::planner
