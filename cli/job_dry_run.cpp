#include "job_dry_run.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "advisor_cli.h"
#include "command.h"
#include "profile_input.h"
#include "job/decide_request.h"
#include "paratune/planner/decision.h"
#include "job/decision_child.h"
#include "paratune/advisor/advisor.h"
#include "paratune/advisor/calibration_file.h"
#include "paratune/advisor/profile.h"
#include "paratune/policies/policy.h"
#include "paratune/probe/probe.h"

namespace paratune::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A plan file the dry run wrote, for --json.
std::string read_plan_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read the plan file just written");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The host whose plugstack line is read: %h in topology=/cache= paths is the node's short name.
std::string short_host(const JobDryRunArgs& a) {
  std::string host = a.nodelist.empty() ? "" : a.nodelist.front();
  if (host.empty()) {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) == 0) host = buf;
  }
  return host.substr(0, host.find('.'));
}

// A file the plugin reads only when it exists (its default paths); one named on the command line must exist.
bool present(const std::string& path) { return !path.empty() && fs::exists(path); }

struct Facts {
  job::StepFacts step;
  std::vector<std::string> notes;  // where each fact came from, for the reader of the dry run
};

void load_site_files(const JobDryRunArgs& a, Facts& f) {
  auto& s = f.step;
  const std::string policy = a.policy_file.empty() ? s.config.policy : a.policy_file;
  if (!a.policy_file.empty() || s.config.policy_explicit || present(policy)) {
    s.policy = policies::resolve(policies::load_policy(policy), a.partition);
    f.notes.push_back("site policy " + policy + (a.partition.empty() ? "" : " (partition " + a.partition + ")"));
  } else {
    f.notes.push_back("no site policy (" + policy + " does not exist)");
  }
  const std::string cal = a.calibration.empty() ? s.config.calibration : a.calibration;
  if (!a.calibration.empty() || present(cal))
    s.calibration = advisor_cli::read_calibration(cal);
  const std::string prof = !a.profile.empty() ? a.profile : s.policy.facts.profile.value_or(s.config.profile);
  if (!a.profile.empty() || present(prof)) s.profile = read_profile(prof);
}

// --leaf-switches NODE=SWITCH,...: the placement the plugin reads from Slurm's topology/tree (fabric_placement.h).
std::optional<planner::FabricPlacement> placement(const JobDryRunArgs& a) {
  if (a.leaf_switches.empty()) return std::nullopt;
  std::map<std::string, std::string> leaf_of;
  for (const auto& pair : a.leaf_switches) {
    const auto eq = pair.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == pair.size())
      throw std::invalid_argument("--leaf-switches: '" + pair + "' is not NODE=SWITCH");
    leaf_of[pair.substr(0, eq)] = pair.substr(eq + 1);
  }
  auto p = planner::placement_from_leaves(a.nodelist, leaf_of);
  if (!p) throw std::invalid_argument("--leaf-switches: every node of --nodelist needs its leaf switch");
  return p;
}

Facts gather(const JobDryRunArgs& a) {
  Facts f;
  auto& s = f.step;
  s.config = planner::parse_plugin_config(words(a.plugstack), short_host(a));
  if (!a.topology.empty()) s.config.topology = a.topology;
  if (s.config.topology.empty() && !a.probe_here)
    throw std::invalid_argument("--topology: give the node's topology (FILE or builtin:NAME), a plugstack "
                                "topology=, or --probe to probe this machine");
  s.spec = planner::parse_option_spec(a.spec);
  s.alloc.nodes = a.nodes;
  s.alloc.partition = a.partition;
  s.alloc.job_id = a.job_id;
  s.alloc.submit_dir = a.submit_dir.empty() ? fs::current_path().string() : a.submit_dir;
  s.node_names = a.nodelist;
  s.job_id = a.job_id;
  if (!a.nodelist.empty() && static_cast<int>(a.nodelist.size()) != a.nodes)
    throw std::invalid_argument("--nodelist names " + std::to_string(a.nodelist.size()) + " nodes, --nodes says " +
                                std::to_string(a.nodes));
  s.fabric = placement(a);
  load_site_files(a, f);
  probe::ProbeOptions opts;
  opts.topology_file = s.config.topology;
  // Without --gpus-per-node the job has every GPU of the node: a first probe counts them.
  const int gpus = a.gpus_per_node > 0 ? a.gpus_per_node : static_cast<int>(probe::probe(opts).gpus.size());
  // Slurm hands the job GPUs 0..G-1 of the node in these runs; the plugin probes with that allocation.
  for (int i = 0; i < gpus; ++i) s.alloc.gpu_indexes.push_back(i);
  s.alloc.gpus_on_node = gpus;
  opts.allocated_gpus = s.alloc.gpu_indexes;
  s.topology = probe::probe(opts);
  s.mode = planner::decide_job_mode(&s.spec, s.config, s.policy, gpus);
  return f;
}

// Whether the site forces this variable (a user's value is replaced).
bool forced(const planner::EnvInjection& inj, const std::string& name) {
  return std::find(inj.force.begin(), inj.force.end(), name) != inj.force.end();
}

json env_json(const planner::EnvInjection& inj) {
  json out = json::array();
  for (const auto& e : inj.assignments) {
    out.push_back({{"name", e.name}, {"value", e.value}, {"reason", e.reason}, {"forced", forced(inj, e.name)}});
  }
  return out;
}

json files_json(const std::string& dir) {
  json out = json::object();
  for (const auto& entry : fs::directory_iterator(dir))
    out[entry.path().filename().string()] = read_plan_file(entry.path().string());
  return out;
}

void print_env(const planner::EnvInjection& inj) {
  std::printf("\nenvironment the job gets:\n");
  for (const auto& e : inj.assignments) {
    std::string shown = e.value;  // a value of several lines ($PARATUNE_ARGS_TEXT) stays readable
    for (size_t p = 0; (p = shown.find('\n', p)) != std::string::npos; p += 5) shown.replace(p, 1, "\n    ");
    const char* mark = forced(inj, e.name) ? "   (forced by the site)" : "";
    std::printf("  %s=%s%s\n      # %s\n", e.name.c_str(), shown.c_str(), mark, e.reason.c_str());
  }
  for (const auto& n : inj.unset) std::printf("  unset %s   (forbidden by the site)\n", n.c_str());
  if (inj.assignments.empty() && inj.unset.empty()) std::printf("  nothing\n");
}

// Off for this job (the policy, the option, the plugstack default): only the site's variables, if any.
int print_off(const JobDryRunArgs& a, const Facts& f) {
  const auto& s = f.step;
  const auto inj = s.mode.env_rules_apply ? planner::policy_injection(s.policy, {}) : planner::EnvInjection{};
  if (a.as_json) {
    std::printf("%s\n", json{{"mode", "off"}, {"why", s.mode.why}, {"env", env_json(inj)}, {"unset", inj.unset},
                             {"notes", f.notes}}.dump(2).c_str());
    return kOk;
  }
  std::printf("paratune advise --paratune: no plan: %s; the job runs untouched\n", s.mode.why.c_str());
  print_env(inj);
  for (const auto& n : f.notes) std::printf("note: %s\n", n.c_str());
  return kOk;
}

// The plan directory: --write DIR keeps it (DIR/paratune-<job>/, as the job's), else a temporary one.
struct PlanDir {
  std::string base;
  bool temporary = false;
  ~PlanDir() {
    std::error_code ec;
    if (temporary) fs::remove_all(base, ec);
  }
};

int print_plan(const JobDryRunArgs& a, const Facts& f, const job::DecidedJob& d) {
  if (a.as_json) {
    std::vector<std::string> all_notes = d.notes;  // the decision's (as in plan.json), then where the facts came from
    all_notes.insert(all_notes.end(), f.notes.begin(), f.notes.end());
    std::printf("%s\n", json{{"mode", to_string(f.step.mode.mode)}, {"summary", d.summary},
                             {"env", env_json(d.injection)}, {"unset", d.injection.unset},
                             {"files", files_json(d.dir)}, {"dir", a.write_dir.empty() ? "" : d.dir},
                             {"policy_changes", d.changes}, {"notes", all_notes}}
                            .dump(2, ' ', false, json::error_handler_t::replace)
                            .c_str());
    return kOk;
  }
  std::printf("paratune advise --paratune: %s\n", d.summary.c_str());
  std::printf("mode: %s (%s)\n", to_string(f.step.mode.mode), f.step.mode.why.c_str());
  print_env(d.injection);
  std::printf("\nplan files%s:\n", a.write_dir.empty() ? " (not kept: --write DIR keeps them)" : "");
  for (const auto& entry : fs::directory_iterator(d.dir))
    std::printf("  %s (%ju bytes)\n", entry.path().filename().c_str(), static_cast<uintmax_t>(entry.file_size()));
  for (const auto& c : d.changes) std::printf("policy: %s\n", c.c_str());
  for (const auto& n : d.notes) std::printf("note: %s\n", n.c_str());
  for (const auto& n : f.notes) std::printf("note: %s\n", n.c_str());
  return kOk;
}

}  // namespace

int run_job_dry_run(const JobDryRunArgs& a) {
  Facts f;
  try {
    f = gather(a);
    if (f.step.mode.mode == planner::Mode::Off) return print_off(a, f);
    job::DecideRequest r = job::decide_request(f.step);
    std::string base = a.write_dir;
    if (!base.empty()) fs::create_directories(base);  // DIR itself; DIR/paratune-<ID>/ is made as the job makes it
    if (base.empty()) {
      base = (fs::temp_directory_path() / "paratune-dry-run-XXXXXX").string();
      if (!::mkdtemp(base.data())) throw std::runtime_error("cannot make a temporary directory for the plan files");
    }
    const PlanDir dir{base, a.write_dir.empty()};
    // The resume lookup above used the job's own plan directory; the files go where the dry run is told.
    r.dir_bases = {dir.base};
    r.fallback_base.clear();
    return print_plan(a, f, job::decide_and_write(r));
  } catch (const advisor::NothingFits& e) {
    // What the plugin's failure handling does (ctx_remote.cpp handle_failure): open unless the policy says closed.
    const bool closed = f.step.policy.on_error == policies::OnError::Closed;
    std::fprintf(stderr, "paratune advise --paratune: %s\n%s\n", e.what(),
                 closed ? "(the site policy says on_error = \"closed\": the job's step would fail)"
                        : "(the job would run untouched; the site policy's variables still apply)");
    return kNothingFits;
  } catch (const std::exception& e) {  // bad SPEC, policy, topology, scenario file, plugstack argument
    std::fprintf(stderr, "paratune advise --paratune: %s\n", e.what());
    return kBadInput;
  }
}

}  // namespace paratune::cli
