// `paratune advise --scenario FILE [--top N] [--json] [--all-frameworks] [--topology FILE]`: search every valid
// layout, print the best plan, its prediction, env, framework arguments and the ranked alternatives.
// Also holds the helpers `paratune predict` shares (scenario loading with topology resolution, JSON forms).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "advisor_cli.h"
#include "command.h"
#include "explain.h"
#include "input_file.h"
#include "job_dry_run.h"
#include "partition_names.h"
#include "options.h"
#include "paratune/advisor/advisor.h"
#include "paratune/advisor/breakdown_terms.h"
#include "paratune/advisor/calibration_file.h"
#include "profile_input.h"
#include "paratune/advisor/catalog.h"
#include "paratune/advisor/framework_args.h"
#include "paratune/advisor/knobs.h"
#include "paratune/advisor/scenario_toml.h"
#include "paratune/probe/probe.h"
#include "paratune/planner/decision.h"
#include "paratune/planner/plan_json.h"
#include "paratune/planner/scenario_builder.h"
#include "paratune/policies/policy.h"

namespace paratune::cli::advisor_cli {

using nlohmann::json;
using namespace paratune::advisor;

// --calibration FILE: the site's fitted efficiencies (`paratune calibrate` output) applied to this scenario.
Calibration read_calibration(const std::string& path) {
  return parse_calibration(read_cli_file(path, "calibration"), path);
}

ModelParams load_calibration(const std::string& path, const Scenario& s) {
  return calibrated_params(read_calibration(path), s);
}

double load_headroom(const std::string& path, const Scenario& s) {
  return calibrated_headroom_gib(read_calibration(path), s);
}

// The scenario file and the topology its [cluster] topology = "..." (relative to the file) or --topology names,
// probed as the planner takes it. Without a topology the file's [cluster] is the whole cluster (and validated
// where it is read, with its line); with one, [cluster] may leave out what the topology says.
ScenarioFacts read_scenario(const std::string& path, const std::string& topology_override) {
  const std::string text = read_cli_file(path, "scenario");
  ScenarioFacts f{parse_scenario_toml(text, path, ClusterSource::Caller), std::nullopt};
  std::string topo = topology_override.empty() ? f.scenario.cluster.topology_file : topology_override;
  if (topo.empty()) {
    // BF16 on a GPU without it (a scenario written for another machine): the planner plans FP16 and says so,
    // as in the job; every other problem is reported at its line by the file's own check.
    Scenario fp16 = f.scenario;
    std::vector<std::string> unused;
    planner::plan_precision(fp16, /*given=*/false, unused);
    if (fp16.training.precision != f.scenario.training.precision) {
      try {
        validate(fp16);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(path + ": " + e.what());
      }
      return f;
    }
    f.scenario = parse_scenario_toml(text, path, ClusterSource::File);
    return f;
  }
  if (topo.rfind("builtin:", 0) != 0 && !std::filesystem::path(topo).is_absolute() && topology_override.empty())
    topo = (std::filesystem::path(path).parent_path() / topo).string();
  probe::ProbeOptions po;
  po.topology_file = topo;
  po.use_ibverbs = false;
  po.use_nvml = false;
  try {
    f.topology = probe::probe(po);
  } catch (const std::exception& e) {
    throw std::invalid_argument(path + ":0:0: cluster.topology: " + e.what());
  }
  f.scenario.cluster.topology_file = topo;
  return f;
}

Scenario load_scenario(const std::string& path, const std::string& topology_override, std::vector<std::string>& notes) {
  ScenarioFacts f = read_scenario(path, topology_override);
  if (!f.topology) return f.scenario;
  Scenario s;
  try {
    s = planner::cluster_over_scenario(f.scenario, *f.topology, notes);
  } catch (const std::exception& e) {
    throw std::invalid_argument(path + ":0:0: cluster.topology: " + e.what());
  }
  validate(s);
  return s;
}

json layout_json(const Layout& l) { return planner::to_json(l); }

json prediction_json(const Prediction& p) { return planner::to_json(p); }

std::string layout_text(const Layout& l) {
  char b[160];
  std::snprintf(b, sizeof b, "tp=%d pp=%d dp=%d cp=%d vpp=%d mb=%d zero=%d rc=%s%s%s", l.tp, l.pp, l.dp, l.cp,
                l.virtual_stages, l.micro_batch, l.zero_stage, to_string(l.recompute), l.sequence_parallel ? " sp" : "",
                l.shard_group > 0 ? (" hsdp=" + std::to_string(l.shard_group)).c_str() : "");
  std::string out = b;
  if (l.ep > 1 || l.etp > 1)  // expert parallelism (MoE)
    out += " ep=" + std::to_string(l.ep) + " etp=" + std::to_string(l.etp) + " dispatcher=" + to_string(l.dispatcher);
  if (l.schedule) out += std::string(" schedule=") + to_string(*l.schedule);  // a fixed pipeline schedule
  return out;
}

// A bar of `width` characters for the breakdown, scaled to `scale` seconds: each term its own character.
std::string breakdown_bar(const Breakdown& b, double scale, int width) {
  std::string out;
  double acc = 0;
  int drawn = 0;
  for (const auto& t : kBreakdownTerms) {
    acc += b.*t.field;
    const int upto = int(acc / scale * width + 0.5);
    for (; drawn < upto && drawn < width; ++drawn) out += t.bar;
  }
  return out;
}

std::string legend() {
  std::string out = "bar:";
  for (const auto& t : kBreakdownTerms) out += std::string(out.size() > 4 ? "  " : " ") + t.bar + " " + t.legend;
  return out;
}

void print_breakdown(const Prediction& p) {
  const Breakdown& b = p.breakdown;
  // One line for the terms of no group, one per group that is priced (moe: dispatch/combine all-to-all and the
  // busiest expert rank's excess; offload: activations to and from host memory; stages: the slowest pipeline
  // rank's excess over an even share); terms two spaces apart.
  std::vector<std::pair<std::string, std::string>> lines = {{"", "  breakdown (s):"}};
  char value[64];
  for (const auto& t : kBreakdownTerms) {
    if (!shown(b, t)) continue;
    if (lines.back().first != t.group) lines.push_back({t.group, std::string("  ") + t.group + " (s):"});
    std::snprintf(value, sizeof value, "%s%s %.3f", lines.back().second.back() == ':' ? " " : "  ", t.name, b.*t.field);
    lines.back().second += value;
  }
  for (const auto& [group, text] : lines) std::printf("%s\n", text.c_str());
  const MemoryBreakdown& m = p.memory;
  std::printf("  memory (GiB/GPU): %.1f of %.1f  [weights %.1f  grads %.1f  optimizer %.1f  activations %.1f  logits "
              "%.1f  buffers %.1f  reserve %.1f]%s\n",
              p.memory_gib_per_gpu, p.memory_capacity_gib, m.weights, m.gradients, m.optimizer, m.activations, m.logits,
              m.buffers, m.reserve, p.memory_gib_per_gpu > p.memory_capacity_gib ? "  DOES NOT FIT" : "");
  if (!p.fits) std::printf("  overflow: %s\n", p.overflow.c_str());
}

}  // namespace paratune::cli::advisor_cli

namespace paratune::cli {
namespace {

using namespace paratune::advisor;
using namespace advisor_cli;

const char* kDescription =
    "Search every valid layout (TP, PP, DP, CP, virtual stages, ZeRO/FSDP, micro-batch, recompute) for the\n"
    "scenario, prune by memory, rank by predicted step time. Prints the best plan, its prediction, the NCCL/CUDA\n"
    "settings it implies (each with its reason), the arguments of the plan's framework in the form its version\n"
    "([training] framework_version, README \"Framework versions\") reads, and the next best layouts.\n"
    "[parallel] keys in the scenario are constraints.";
const char* kExplainDescription =
    "Say why the advised plan wins: for each alternative, how much slower it is and in which step-time terms\n"
    "(differences under 5 %, the model's median out-of-sample error in docs/accuracy.md, are marked as inside it);\n"
    "with --vs, the same for the layout you have in mind; the best plan per layout family and, with\n"
    "--all-frameworks, per framework; and what shaped the plan: the scenario's [parallel] constraints, the site\n"
    "policy's caps (and the plan without them), the calibration entries applied and the memory margin.\n"
    "Takes the options of `paratune advise`.";
const char* kFooter =
    "exit status: 0 ok, 2 bad input (FILE:LINE:COL: field: what is valid), 3 nothing fits (says what would)";

nlohmann::json policy_json(const std::string& file, const std::string& partition, const policies::EffectivePolicy& p,
                           const std::vector<policies::PolicyChange>& changes) {
  if (file.empty()) return nullptr;
  nlohmann::json out = {{"file", file}, {"partition", partition}, {"forbidden", p.env.forbid}};
  nlohmann::json list = nlohmann::json::array();
  for (const auto& c : changes) list.push_back({{"what", c.what}, {"reason", c.reason}});
  out["changes"] = list;
  return out;
}

nlohmann::json args_json(const FrameworkArgs& a) {
  nlohmann::json files = nlohmann::json::object();
  for (const auto& f : a.files) files[f.name] = f.content;
  return {{"framework", to_string(a.framework)}, {"version", a.version}, {"files", files},
          {"torchrun", a.torchrun}, {"yours", a.notes}};
}

nlohmann::json others_json(const std::vector<FrameworkArgs>& others) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& o : others) out.push_back(args_json(o));
  return out;
}

// A file's lines, each indented under its heading (blank lines left blank; one final newline).
std::string indented(const std::string& content) {
  std::string shown;
  size_t from = 0;
  while (from < content.size()) {
    size_t end = content.find('\n', from);
    if (end == std::string::npos) end = content.size();
    if (end > from) shown += "    " + content.substr(from, end - from);
    shown += '\n';
    from = end + 1;
  }
  return shown;
}

void print_args(const FrameworkArgs& a) {
  std::printf("\nframework arguments (%s %s):\n", to_string(a.framework), a.version.c_str());
  for (const auto& f : a.files) std::printf("  %s:\n%s", f.name.c_str(), indented(f.content).c_str());
  std::printf("  torchrun:\n%s", indented(a.torchrun).c_str());
  for (const auto& n : a.notes) std::printf("  yours: %s\n", n.c_str());
}

struct AdviseArgs {
  std::string scenario, topology, policy_file, partition, calibration, vs, profile;
  std::vector<std::string> framework_args;
  bool as_json = false, strict = false;
  SearchLimits limits;
  JobDryRunArgs job;  // --paratune SPEC: the job's plan, made as the plugin makes it (job_dry_run.h)
  bool job_mode = false;
};

// The planner's input for the --scenario form: the file's scenario and its topology, the site policy for the
// partition, the calibration and the hardware profile; the plan is made as the plugin makes it (planner::decide).
planner::DecisionInput planner_input(const AdviseArgs& a, const policies::EffectivePolicy& policy,
                                 const std::optional<Calibration>& cal) {
  planner::DecisionInput in;
  ScenarioFacts facts = read_scenario(a.scenario, a.topology);
  in.scenario = std::move(facts.scenario);
  in.topology_known = facts.topology.has_value();
  if (facts.topology) in.topology = std::move(*facts.topology);
  in.policy = policy;
  in.mode = planner::Mode::Apply;
  in.calibration = cal;
  if (!a.profile.empty()) in.profile = read_profile(a.profile);
  in.top_n = a.limits.top_n;
  in.all_frameworks = a.limits.all_frameworks;
  return in;
}

int run_command(const AdviseArgs& a, bool explaining) {
  const char* command = explaining ? "explain" : "advise";
  const std::string &policy_file = a.policy_file, &partition = a.partition, &calibration = a.calibration;
  const bool as_json = a.as_json;
  std::vector<Framework> extra_frameworks;
  for (const auto& f : a.framework_args) extra_frameworks.push_back(framework_from_string(f));  // checked by CLI11
  policies::EffectivePolicy policy;
  std::optional<Calibration> cal;
  std::optional<ParallelSpec> vs;
  planner::Decision d;
  try {
    if (!a.vs.empty()) vs = parse_parallel_list(a.vs, "--vs");
    if (!policy_file.empty()) {
      const policies::PolicyFile file = policies::load_policy(policy_file);
      if (!partition.empty() && !check_partition_names(command, file, policy_file, {partition}, a.strict))
        return kBadInput;
      policy = policies::resolve(file, partition);
      if (!policy.enabled)
        std::fprintf(stderr, "paratune %s: warning: paratune is disabled in partition '%s' (%s): the plugin leaves "
                     "jobs there untouched; this is the plan it would make if enabled\n",
                     command, partition.c_str(), policy.where("enabled").c_str());
    }
    if (!calibration.empty()) cal = read_calibration(calibration);
    d = planner::decide(planner_input(a, policy, cal));
  } catch (const policies::PolicyError& e) {
    std::fprintf(stderr, "paratune %s: %s\n", command, e.what());
    return kBadInput;
  } catch (const NothingFits& e) {
    if (as_json) {
      std::printf("%s\n", nlohmann::json{{"error", "nothing fits"}, {"message", e.what()}}.dump(2).c_str());
    } else {
      std::fprintf(stderr, "paratune %s: %s\n", command, e.what());
    }
    return kNothingFits;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "paratune %s: %s\n", command, e.what());
    return kBadInput;
  }
  const Scenario& s = d.scenario;
  const SearchLimits& limits = d.limits;
  Plan plan = d.plan;
  std::vector<std::string> notes = d.notes;
  std::vector<policies::PolicyChange> changes = d.policy_changes;
  for (const auto& n : notes)
    if (n.rfind("hardware profile ignored", 0) == 0)
      std::fprintf(stderr, "paratune %s: warning: %s (%s)\n", command, n.c_str(), a.profile.c_str());
  if (!policy_file.empty()) {
    // The site's variable rules on the plan's NCCL/CUDA settings, as the plugin applies them in the job.
    const auto env_plan = policies::plan_env(policy, plan.env);
    plan.env = env_plan.set_always;
    plan.env.insert(plan.env.end(), env_plan.set_if_unset.begin(), env_plan.set_if_unset.end());
    changes.insert(changes.end(), env_plan.changes.begin(), env_plan.changes.end());
  }
  for (const auto& n : plan.notes) notes.push_back(n);
  if (explaining)
    return explain({s, plan, limits, notes, changes, policy_file, policy, calibration, cal, vs, a.vs, as_json});
  const FrameworkArgs& fa = d.args;
  // --framework-args LIST: each other framework's arguments, each from its own plan (re-planned for it).
  std::vector<FrameworkArgs> others;
  for (const Framework f : extra_frameworks) {
    if (f == plan.framework) continue;
    Scenario other = s;
    other.training.framework = f;
    other.training.framework_version.clear();
    try {
      validate(other);
      SearchLimits l = limits;
      l.all_frameworks = false;
      others.push_back(framework_args(other, advise(other, l)));
    } catch (const std::exception& e) {
      notes.push_back(std::string("--framework-args ") + to_string(f) + ": no plan (" + e.what() + ")");
    }
  }

  const nlohmann::json calibration_use =
      cal ? planner::calibration_json(*cal, s) : nlohmann::json{{"calibrated", false}, {"entries", nlohmann::json::array()}};
  if (as_json) {
    nlohmann::json env = nlohmann::json::array();
    for (const auto& e : plan.env) env.push_back({{"name", e.name}, {"value", e.value}, {"reason", e.reason}});
    nlohmann::json alts = nlohmann::json::array();
    for (const auto& c : plan.alternatives)
      alts.push_back({{"framework", to_string(c.framework)}, {"parallel", layout_json(c.layout)},
                      {"prediction", prediction_json(c.prediction)}});
    nlohmann::json j = {{"scenario", {{"model", s.model.name}, {"global_batch", s.training.global_batch},
                                      {"gpus", s.total_gpus()}, {"gpu", s.cluster.gpu}}},
                        {"framework", to_string(plan.framework)},
                        {"parallel", layout_json(plan.layout)},
                        {"prediction", prediction_json(plan.prediction)},
                        {"env", env},
                        {"framework_version", fa.version},
                        {"framework_args", args_json(fa)},
                        {"other_frameworks", others_json(others)},
                        {"alternatives", alts},
                        {"policy", policy_json(policy_file, partition, policy, changes)},
                        {"calibrated", calibration_use["calibrated"]},
                        {"calibration_entries", calibration_use["entries"]},
                        {"candidates_evaluated", plan.candidates_evaluated},
                        {"search_seconds", plan.search_seconds},
                        {"notes", notes}};
    std::printf("%s\n", j.dump(2).c_str());
    return kOk;
  }

  const Prediction& p = plan.prediction;
  std::printf("paratune advise: %s, global batch %d x %d tokens, %d x %s (%d node%s)\n", s.model.name.c_str(),
              s.training.global_batch, s.model.seq_len, s.total_gpus(), s.cluster.gpu.c_str(), s.cluster.nodes,
              s.cluster.nodes == 1 ? "" : "s");
  std::printf("\nbest plan (%s): %s\n", to_string(plan.framework), layout_text(plan.layout).c_str());
  std::printf("  step %.3f s   %.0f tokens/s (%.0f per GPU)   %.0f model TFLOP/s per GPU   MFU %.1f %%\n", p.step_time_s,
              p.tokens_per_s, p.tokens_per_s_per_gpu, p.model_tflops_per_gpu, 100 * p.mfu);
  print_breakdown(p);

  // Ranked table: the winner first, then the alternatives, each with its breakdown bar on a common scale.
  std::vector<Candidate> table;
  table.push_back({plan.framework, plan.layout, plan.prediction});
  for (const auto& c : plan.alternatives) table.push_back(c);
  double scale = 0;
  int width = 52;  // the layout column fits the longest layout (MoE layouts add ep, etp and the dispatcher)
  for (const auto& c : table) {
    scale = std::max(scale, c.prediction.step_time_s);
    width = std::max(width, int(layout_text(c.layout).size()));
  }
  std::printf("\n  # %-10s %-*s %9s %7s %8s  %s\n", "framework", width, "layout", "step s", "MFU %", "mem GiB", "breakdown");
  for (size_t i = 0; i < table.size(); ++i) {
    const auto& c = table[i];
    std::printf("%3zu %-10s %-*s %9.3f %7.1f %8.1f  |%s\n", i + 1, to_string(c.framework), width, layout_text(c.layout).c_str(),
                c.prediction.step_time_s, 100 * c.prediction.mfu, c.prediction.memory_gib_per_gpu,
                breakdown_bar(c.prediction.breakdown, scale, 40).c_str());
  }
  std::printf("  %s\n", legend().c_str());

  std::printf("\nenvironment:\n");
  for (const auto& e : plan.env) std::printf("  %s=%s\n      # %s\n", e.name.c_str(), e.value.c_str(), e.reason.c_str());
  print_args(fa);
  for (const auto& o : others) print_args(o);
  if (!policy_file.empty()) {
    std::printf("\nsite policy %s (partition %s):\n", policy_file.c_str(), partition.empty() ? "-" : partition.c_str());
    for (const auto& c : changes) std::printf("  %s\n", policies::describe(c).c_str());
    if (changes.empty()) std::printf("  no change to this plan\n");
  }
  std::printf("\n%lld candidates evaluated in %.3f s\n", plan.candidates_evaluated, plan.search_seconds);
  for (const auto& n : notes) std::printf("note: %s\n", n.c_str());
  return kOk;
}

// Which of the two forms was asked for: --scenario FILE (the model's view) or --paratune SPEC (the job's plan).
int run_chosen(AdviseArgs& a, bool explaining) {
  const char* command = explaining ? "explain" : "advise";
  if (a.job_mode) {
    a.job.topology = a.topology;
    a.job.policy_file = a.policy_file;
    a.job.partition = a.partition;
    a.job.calibration = a.calibration;
    a.job.profile = a.profile;
    a.job.as_json = a.as_json;
    return run_job_dry_run(a.job);
  }
  if (a.scenario.empty()) {
    std::fprintf(stderr, "paratune %s: give --scenario FILE%s\n", command,
                 explaining ? "" : ", or --paratune SPEC for the plan a job with --paratune=SPEC would get");
    return kBadInput;
  }
  if (!a.partition.empty() && a.policy_file.empty()) {
    std::fprintf(stderr, "paratune %s: --partition requires --policy\n", command);
    return kBadInput;
  }
  return run_command(a, explaining);
}

// The words the completion offers for a SPEC or a --vs list: the knob table's keys ("tp=") on that surface (and
// in that section), the SPEC's by the form it shows.
std::vector<std::string> knob_words(unsigned on, const std::string& section) {
  std::vector<std::string> words;
  for (const Knob& k : knobs())
    if (k.on(on) && (section.empty() || section == k.section))
      words.push_back(std::string(on == surface::kSpec && *k.spec_key ? k.spec_key : k.name) + "=");
  return words;
}

// The keys as the help lists them, "keys: a, b, ..." wrapped under the option's description.
std::string knob_list(unsigned on, const std::string& section) {
  std::string out = "keys: ", line;
  for (auto word : knob_words(on, section)) {
    word.pop_back();  // the '='
    if (line.size() + word.size() > 84) {
      out += line + ",\n";
      line.clear();
    }
    line += (line.empty() ? "" : ", ") + word;
  }
  return out + line;
}

// The options of the --paratune form (advise only): the facts Slurm gives the plugin in a job.
void add_job_options(CLI::App& app, AdviseArgs& a, CLI::Option* scenario) {
  auto* spec = app.add_option("--paratune", a.job.spec,
                              "the plan a job submitted with --paratune=SPEC would get: the plugin's own decision\n"
                              "from the facts below instead of Slurm's (\"\" = bare --paratune);\n" +
                                  knob_list(surface::kSpec, ""))
                   ->type_name("SPEC")
                   ->check(options::completes(knob_words(surface::kSpec, "")))
                   ->excludes(scenario)
                   ->each([&a](const std::string&) { a.job_mode = true; });
  app.add_flag("--probe", a.job.probe_here, "probe this machine as the plugin would (else --topology)")->needs(spec);
  app.add_option("--plugstack", a.job.plugstack, "the plugin's plugstack.conf arguments ('key=value ...')")
      ->type_name("ARGS")
      ->needs(spec);
  app.add_option("--nodes", a.job.nodes, "nodes in the job (default 1)")->type_name("N")->check(options::integer_in(1, 100000))->needs(spec);
  app.add_option("--gpus-per-node", a.job.gpus_per_node, "GPUs the job has on each node (default: all of the topology's)")
      ->type_name("G")
      ->check(options::integer_in(1, 1024))
      ->needs(spec);
  app.add_option("--job-id", a.job.job_id, "the job id (torchrun's port and the plan directory's name; default 0)")
      ->type_name("ID")
      ->needs(spec);
  app.add_option("--nodelist", a.job.nodelist, "the job's nodes, comma-separated, in Slurm's order")
      ->type_name("HOSTS")
      ->delimiter(',')
      ->needs(spec);
  app.add_option("--leaf-switches", a.job.leaf_switches,
                 "each node's leaf switch as Slurm's topology/tree has it, NODE=SWITCH comma-separated (the\n"
                 "placement the plugin plans for; needs --nodelist)")
      ->type_name("PAIRS")
      ->delimiter(',')
      ->needs(spec);
  app.add_option("--submit-dir", a.job.submit_dir, "the job's submit directory (@FILE and resume= are relative to it;\n"
                                                   "default: the current directory)")
      ->type_name("DIR")
      ->needs(spec);
  app.add_option("--write-plan,--write", a.job.write_dir,
                 "write the plan files the job would get into DIR/paratune-<ID>/, as the job writes them\n"
                 "(default: shown, not kept)")
      ->type_name("DIR")
      ->needs(spec);
}

// What a scenario may name ([model] preset, [cluster] gpu, SPEC model=): README and paratune.toml(5) point here.
std::string catalog_keys() {
  auto wrapped = [](const std::string& title, const std::vector<std::string>& keys) {
    std::string out = title, line;
    for (const auto& k : keys) {
      if (line.size() + k.size() > 100) {
        out += line + "\n";
        line.clear();
      }
      line += "  " + k;
    }
    return out + line + "\n";
  };
  return wrapped("model presets:\n", model_preset_keys()) + wrapped("GPU catalog keys:\n", gpu_keys()) + "\n";
}

Setup setup_for(bool explaining) {
  return [explaining](CLI::App& app, const std::vector<std::string>&) -> Action {
    auto a = std::make_shared<AdviseArgs>();
    describe(app, explaining ? kExplainDescription : kDescription);
    app.footer(catalog_keys() + kFooter);
    auto* scenario = app.add_option("-s,--scenario", a->scenario,
                                    "the scenario (TOML: [model], [training], [cluster], [parallel])")
                         ->type_name("FILE");
    app.add_option("--top", a->limits.top_n, "show N alternatives (default 5)")
        ->type_name("N")
        ->check(options::integer_in(0, 1000));
    app.add_flag("--json", a->as_json, "machine-readable output");
    app.add_flag("--all-frameworks", a->limits.all_frameworks,
                 "also search megatron, deepspeed, fsdp and torchtitan, not only [training] framework");
    app.add_option("--framework-args", a->framework_args,
                   "also print these frameworks' arguments (comma-separated), each from a plan made for\n"
                   "that framework at its default version (with --policy: the site's); otherwise only the\n"
                   "plan's own framework is printed")
        ->type_name("LIST")
        ->delimiter(',')
        ->check(options::parsed_by([](const std::string& v) { framework_from_string(v); }))
        ->check(options::completes({to_string(Framework::Megatron), to_string(Framework::DeepSpeed),
                                    to_string(Framework::Fsdp), to_string(Framework::Torchtitan),
                                    to_string(Framework::Nemo), to_string(Framework::Automodel)}));
    app.add_option("--topology", a->topology,
                   "take GPU/NIC facts from a topology (hwloc XML, NCCL topo, `paratune probe --json`)")
        ->type_name("FILE");
    app.add_option("--policy", a->policy_file,
                                  "apply a site policy (its facts, caps and env rules) as the plugin would")
                       ->type_name("FILE");
    app.add_option("--partition", a->partition, "the partition whose [partition.P] section applies (default: "
                                                "[defaults] only); with --paratune, the job's partition")
        ->type_name("P");
    app.add_flag("--strict", a->strict, "a --partition the policy has no [partition.P] section for is an error\n"
                                        "(default: a warning, and [defaults] applies)");
    app.add_option("--calibration", a->calibration, "the site's fitted efficiencies (`paratune calibrate` output)")
        ->type_name("FILE");
    if (explaining)
      app.add_option("--vs", a->vs,
                     "also explain this layout: [parallel] keys as KEY=VALUE,... (e.g. tp=8,pp=2); the\n"
                     "search completes the rest and says why it loses, or that it is inside the model's error;\n" +
                         knob_list(surface::kToml, "parallel"))
          ->type_name("LAYOUT")
          ->check(options::completes(knob_words(surface::kToml, "parallel")));
    app.add_option("--profile", a->profile,
                   "a hardware profile (`paratune measure`): its measured GEMM, HBM and bus bandwidths replace\n"
                   "the catalog's for a scenario on that GPU (and, with a topology, those nodes)")
        ->type_name("FILE");
    if (!explaining) add_job_options(app, *a, scenario);
    return [a, explaining] { return run_chosen(*a, explaining); };
  };
}

Register reg{"advise", "search every valid layout and print the fastest plan that fits, with env and args",
             setup_for(false)};
Register reg_explain{"explain", "why the advised plan wins: each alternative's step-time terms against it",
                     setup_for(true)};

}  // namespace
}  // namespace paratune::cli
