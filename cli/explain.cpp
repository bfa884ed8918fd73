#include "explain.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "advisor_cli.h"
#include "paratune/advisor/breakdown_terms.h"
#include "command.h"
#include "paratune/planner/plan_json.h"
#include "overlap_report.h"

namespace paratune::cli {
namespace {

using nlohmann::json;
using namespace paratune::advisor;
using advisor_cli::layout_json;
using advisor_cli::layout_text;

constexpr const auto& kTerms = kBreakdownTerms;

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// One layout against the winner: how much slower, in which step-time terms, and whether the model can tell.
json compare(Framework f, const Layout& l, const Prediction& p, const Prediction& w) {
  json diff = json::object();
  for (const auto& t : kTerms) {
    const double d = p.breakdown.*t.field - w.breakdown.*t.field;
    if (std::abs(d) >= 0.0005 * std::max(w.step_time_s, 1e-9)) diff[t.name] = d;
  }
  const double pct = 100 * (p.step_time_s / w.step_time_s - 1);
  return {{"framework", to_string(f)},
          {"parallel", layout_json(l)},
          {"layout", layout_text(l)},
          {"step_time_s", p.step_time_s},
          {"slower_by_s", p.step_time_s - w.step_time_s},
          {"slower_by_pct", pct},
          // Faster than the winner: only the tie-break (within 1 %, the simpler layout) put it second.
          {"within_tie_break", p.step_time_s < w.step_time_s},
          {"inside_model_error", std::abs(pct) < kModelErrorPct},
          {"memory_gib_per_gpu", p.memory_gib_per_gpu},
          {"differences_s", diff}};
}

// "tp_comm +2.085 s, compute +1.711 s": the largest differences first.
std::string terms_text(const json& c, size_t most = 4) {
  std::vector<std::pair<double, std::string>> terms;
  for (const auto& [k, v] : c["differences_s"].items()) terms.emplace_back(v.get<double>(), k);
  std::sort(terms.begin(), terms.end(), [](const auto& x, const auto& y) { return std::abs(x.first) > std::abs(y.first); });
  std::string line;
  for (size_t k = 0; k < terms.size() && k < most; ++k)
    line += (k ? ", " : "") + terms[k].second + " " + fmt("%+.3f s", terms[k].first);
  return line;
}

std::string error_mark(const json& c) {
  return c["inside_model_error"].get<bool>() ? "  [inside the model's error, " + fmt("%.0f %%", kModelErrorPct) + "]"
                                             : "";
}

// The layout family: which model-parallel dimensions a layout uses, and whether its data-parallel ranks shard the
// model state (ZeRO-3/FSDP, HSDP) or hold it whole (ZeRO 0-2 shard only optimizer state and gradients). Micro-batch,
// interleaving and recompute are settings within a family.
std::string family(const Layout& l) {
  std::string out;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : " + ") + part; };
  if (l.tp > 1) add("TP");
  if (l.pp > 1) add("PP");
  if (l.cp > 1) add("CP");
  if (l.ep > 1) add("EP");
  if (l.dp > 1 || out.empty()) add(l.zero_stage >= 3 ? (l.shard_group > 0 ? "HSDP" : "FSDP") : "DP");
  return out;
}

// Every ParallelSpec field (a key [parallel] gains needs a line here and in spec_text).
void overlay(ParallelSpec& to, const ParallelSpec& from) {
  auto take = [](auto& a, const auto& b) {
    if (b) a = b;
  };
  take(to.tp, from.tp), take(to.pp, from.pp), take(to.dp, from.dp), take(to.cp, from.cp);
  take(to.virtual_stages, from.virtual_stages), take(to.micro_batch, from.micro_batch);
  take(to.zero_stage, from.zero_stage), take(to.recompute, from.recompute);
  take(to.sequence_parallel, from.sequence_parallel), take(to.ep, from.ep), take(to.etp, from.etp);
  take(to.dispatcher, from.dispatcher), take(to.pipeline_schedule, from.pipeline_schedule);
  take(to.first_stage_layers, from.first_stage_layers), take(to.last_stage_layers, from.last_stage_layers);
  take(to.shard_group, from.shard_group);
  take(to.optimizer_moments, from.optimizer_moments), take(to.main_params, from.main_params);
  take(to.recompute_modules, from.recompute_modules), take(to.offload_layers, from.offload_layers);
}

// "tp=4, recompute=selective": the keys a ParallelSpec sets.
std::string spec_text(const ParallelSpec& q) {
  std::string out;
  auto add = [&](const char* k, const std::string& v) { out += (out.empty() ? "" : ", ") + std::string(k) + "=" + v; };
  auto num = [&](const char* k, const std::optional<int>& v) {
    if (v) add(k, std::to_string(*v));
  };
  num("tp", q.tp), num("pp", q.pp), num("dp", q.dp), num("cp", q.cp), num("virtual_stages", q.virtual_stages);
  num("micro_batch", q.micro_batch), num("zero_stage", q.zero_stage);
  if (q.recompute) add("recompute", to_string(*q.recompute));
  if (q.sequence_parallel) add("sequence_parallel", *q.sequence_parallel ? "true" : "false");
  num("ep", q.ep), num("etp", q.etp);
  if (q.dispatcher) add("dispatcher", to_string(*q.dispatcher));
  if (q.pipeline_schedule) add("pipeline_schedule", to_string(*q.pipeline_schedule));
  num("first_stage_layers", q.first_stage_layers), num("last_stage_layers", q.last_stage_layers);
  num("shard_group", q.shard_group);
  if (q.optimizer_moments) add("optimizer_moments", to_string(*q.optimizer_moments));
  if (q.main_params) add("main_params", to_string(*q.main_params));
  if (q.recompute_modules) add("recompute_modules", recompute_modules_to_string(*q.recompute_modules));
  num("offload_layers", q.offload_layers);
  return out;
}

// The site policy's limits (only those it sets), each with the section that set it.
json policy_caps(const ExplainInput& in) {
  json out = json::array();
  if (in.policy_file.empty()) return out;
  const SearchLimits& l = in.policy.limits;
  auto cap = [&](const char* key, const std::string& value) {
    out.push_back({{"key", key}, {"value", value}, {"where", in.policy.where(key)}});
  };
  auto join = [](const auto& xs, auto name) {
    std::string s;
    for (const auto& x : xs) s += (s.empty() ? "" : ",") + name(x);
    return s;
  };
  if (l.max_tp) cap("limits.max_tp", std::to_string(l.max_tp));
  if (l.max_pp) cap("limits.max_pp", std::to_string(l.max_pp));
  if (l.max_cp) cap("limits.max_cp", std::to_string(l.max_cp));
  if (l.max_ep) cap("limits.max_ep", std::to_string(l.max_ep));
  if (!l.zero_stages.empty()) cap("limits.zero_stages", join(l.zero_stages, [](int z) { return std::to_string(z); }));
  if (!l.recompute_modes.empty())
    cap("limits.recompute", join(l.recompute_modes, [](Recompute r) { return std::string(to_string(r)); }));
  if (!l.frameworks.empty())
    cap("limits.frameworks", join(l.frameworks, [](Framework f) { return std::string(to_string(f)); }));
  if (!l.dispatchers.empty())
    cap("limits.dispatchers", join(l.dispatchers, [](Dispatcher d) { return std::string(to_string(d)); }));
  if (l.min_micro_batch > 1) cap("limits.min_micro_batch", std::to_string(l.min_micro_batch));
  if (l.max_micro_batch) cap("limits.max_micro_batch", std::to_string(l.max_micro_batch));
  if (l.memory_headroom_gib > 0) cap("limits.memory_headroom_gib", fmt("%g", l.memory_headroom_gib));
  return out;
}

// The search limits without anything the policy imposes (the calibration and its memory head-room kept).
SearchLimits without_policy(const ExplainInput& in) {
  SearchLimits u;
  u.params = in.limits.params;
  u.memory_headroom_gib = std::max(0.0, in.limits.memory_headroom_gib - in.policy.limits.memory_headroom_gib);
  u.all_frameworks = in.limits.all_frameworks;
  u.time_budget_s = in.limits.time_budget_s;
  u.top_n = 0;
  return u;
}

// Which of the policy's caps the asked-for layout keys go beyond.
std::vector<std::string> policy_conflicts(const ParallelSpec& q, const ExplainInput& in) {
  std::vector<std::string> out;
  if (in.policy_file.empty()) return out;
  const SearchLimits& l = in.policy.limits;
  auto above = [&](const char* k, const std::optional<int>& v, int cap, const char* key) {
    if (v && cap && *v > cap)
      out.push_back(std::string(k) + "=" + std::to_string(*v) + " is above " + in.policy.where(key) + " = " +
                    std::to_string(cap));
  };
  above("tp", q.tp, l.max_tp, "limits.max_tp");
  above("pp", q.pp, l.max_pp, "limits.max_pp");
  above("cp", q.cp, l.max_cp, "limits.max_cp");
  above("ep", q.ep, l.max_ep, "limits.max_ep");
  above("micro_batch", q.micro_batch, l.max_micro_batch, "limits.max_micro_batch");
  auto outside = [&](const char* k, const auto& v, const auto& set, const char* key, const std::string& shown) {
    if (v && !set.empty() && std::find(set.begin(), set.end(), *v) == set.end())
      out.push_back(std::string(k) + "=" + shown + " is not in " + in.policy.where(key));
  };
  if (q.zero_stage) outside("zero_stage", q.zero_stage, l.zero_stages, "limits.zero_stages", std::to_string(*q.zero_stage));
  if (q.recompute) outside("recompute", q.recompute, l.recompute_modes, "limits.recompute", to_string(*q.recompute));
  if (q.dispatcher) outside("dispatcher", q.dispatcher, l.dispatchers, "limits.dispatchers", to_string(*q.dispatcher));
  return out;
}

// --vs: the best layout with the asked-for keys (the search completes the rest), against the winner.
json explain_vs(const ExplainInput& in) {
  Scenario s = in.scenario;
  overlay(s.parallel, *in.vs);
  json out = {{"asked", in.vs_text}};
  const auto conflicts = policy_conflicts(*in.vs, in);
  out["excluded_by_policy"] = conflicts;
  SearchLimits l = conflicts.empty() ? in.limits : without_policy(in);
  l.top_n = 0;
  try {
    validate(s);
    const Plan p = advise(s, l);
    json c = compare(p.framework, p.layout, p.prediction, in.plan.prediction);
    c["found"] = true;
    c["is_the_plan"] = p.framework == in.plan.framework && layout_json(p.layout) == layout_json(in.plan.layout);
    c.update(out);
    return c;
  } catch (const std::exception& e) {  // NothingFits or an invalid layout: that is the answer
    out["found"] = false;
    out["why"] = e.what();
    return out;
  }
}

std::string vs_verdict(const json& v) {
  if (!v["found"].get<bool>()) return "no layout with " + v["asked"].get<std::string>() + " runs here: " + v["why"].get<std::string>();
  if (v["is_the_plan"].get<bool>()) return "that is the advised plan";
  const double pct = v["slower_by_pct"].get<double>();
  std::string out;
  if (v["inside_model_error"].get<bool>())
    out = fmt("%+.1f %%", pct) + fmt(" (%+.3f s): inside the model's error (", v["slower_by_s"].get<double>()) +
          fmt("%.0f %%", kModelErrorPct) + "), the model cannot tell it from the plan";
  else if (pct > 0)
    out = "loses by " + fmt("%.1f %%", pct) + fmt(" (%+.3f s)", v["slower_by_s"].get<double>());
  else
    out = "faster by " + fmt("%.1f %%", -pct) + fmt(" (%+.3f s)", v["slower_by_s"].get<double>());
  for (const auto& c : v["excluded_by_policy"]) out += "; the site policy excludes it: " + c.get<std::string>();
  return out;
}

// Best per framework (--all-frameworks): each searched alone under the same rules.
json per_framework(const ExplainInput& in) {
  json out = json::array();
  if (!in.limits.all_frameworks) return out;
  for (Framework f : known_frameworks()) {
    if ((f == Framework::Nemo || f == Framework::Automodel) && in.scenario.training.framework != f)
      continue;  // as the search does
    const auto& allowed = in.limits.frameworks;
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), f) == allowed.end()) {
      out.push_back({{"framework", to_string(f)}, {"found", false}, {"why", "not in " + in.policy.where("limits.frameworks")}});
      continue;
    }
    SearchLimits l = in.limits;
    l.frameworks = {f};
    l.top_n = 0;
    try {
      const Plan p = advise(in.scenario, l);
      json c = compare(p.framework, p.layout, p.prediction, in.plan.prediction);
      c["found"] = true;
      out.push_back(c);
    } catch (const std::exception& e) {
      out.push_back({{"framework", to_string(f)}, {"found", false}, {"why", e.what()}});
    }
  }
  return out;
}

// Best per layout family, from one wider search under the same rules (the fastest of each family, fastest first).
json per_family(const ExplainInput& in) {
  SearchLimits l = in.limits;
  l.top_n = 4000;
  json out = json::array();
  Plan p;
  try {
    p = advise(in.scenario, l);
  } catch (const std::exception&) {
    return out;
  }
  std::vector<Candidate> all = {{p.framework, p.layout, p.prediction}};
  all.insert(all.end(), p.alternatives.begin(), p.alternatives.end());
  std::stable_sort(all.begin(), all.end(),
                   [](const Candidate& a, const Candidate& b) { return a.prediction.step_time_s < b.prediction.step_time_s; });
  std::map<std::string, bool> seen;
  const std::string winner = family(in.plan.layout);
  for (const auto& c : all) {
    const std::string fam = family(c.layout);
    if (seen[fam]) continue;
    seen[fam] = true;
    // The winner's own family is represented by the winner (the tie-break may have preferred it).
    json j = fam == winner ? compare(in.plan.framework, in.plan.layout, in.plan.prediction, in.plan.prediction)
                           : compare(c.framework, c.layout, c.prediction, in.plan.prediction);
    j["family"] = fam;
    j["is_the_plan"] = fam == winner;
    out.push_back(j);
  }
  return out;
}

// What shaped the plan: the scenario's [parallel] constraints, the policy's caps (and what lifting them would give),
// the calibration and the memory margin.
json shaped_by(const ExplainInput& in) {
  json j;
  j["constraints"] = spec_text(in.scenario.parallel);
  j["policy"] = in.policy_file.empty() ? json(nullptr) : json(in.policy_file);
  j["policy_caps"] = policy_caps(in);
  if (!in.policy_file.empty()) {
    try {
      const Plan u = advise(in.scenario, without_policy(in));
      json c = compare(u.framework, u.layout, u.prediction, in.plan.prediction);
      c["same_plan"] = u.framework == in.plan.framework && layout_json(u.layout) == layout_json(in.plan.layout);
      j["without_policy_caps"] = c;
    } catch (const std::exception& e) {
      j["without_policy_caps"] = {{"found", false}, {"why", e.what()}};
    }
  }
  if (in.calibration) {
    json c = planner::calibration_json(*in.calibration, in.scenario);
    c["file"] = in.calibration_file;
    j["calibration"] = c;
  } else {
    j["calibration"] = {{"file", nullptr}, {"calibrated", false}, {"entries", json::array()}};
  }
  j["memory_margin"] = std::clamp(in.limits.memory_margin.value_or(kMemoryMargin), 0.0, 0.9);
  j["memory_headroom_gib"] = in.limits.memory_headroom_gib;
  return j;
}

void print_comparison(size_t i, const json& c) {
  std::printf("  %zu. %-9s %s: %+.1f %% (%+.3f s)%s%s\n", i, c["framework"].get<std::string>().c_str(),
              c["layout"].get<std::string>().c_str(), c["slower_by_pct"].get<double>(), c["slower_by_s"].get<double>(),
              c["within_tie_break"].get<bool>() ? " faster, but within the 1 % tie-break: the simpler layout won" : "",
              error_mark(c).c_str());
  const std::string t = terms_text(c);
  std::printf("       %s\n", t.empty() ? "same breakdown (tie broken towards the simpler layout)" : t.c_str());
}

void print_vs(const json& v) {
  std::printf("\nyou asked about %s:\n", v["asked"].get<std::string>().c_str());
  if (v["found"].get<bool>())
    std::printf("  the best such layout (%s): %s, %.3f s per step\n", v["framework"].get<std::string>().c_str(),
                v["layout"].get<std::string>().c_str(), v["step_time_s"].get<double>());
  std::printf("  %s\n", vs_verdict(v).c_str());
  if (v["found"].get<bool>() && !v["is_the_plan"].get<bool>()) {
    const std::string t = terms_text(v, 6);
    if (!t.empty()) std::printf("  where (positive = it spends more time there): %s\n", t.c_str());
  }
}

void print_table(const char* title, const json& rows, const char* key, size_t most) {
  if (rows.empty()) return;
  std::printf("\n%s:\n", title);
  int width = 0;
  for (const auto& r : rows) width = std::max(width, int(r[key].get<std::string>().size()));
  for (size_t i = 0; i < rows.size() && i < most; ++i) {
    const json& r = rows[i];
    const std::string name = r[key].get<std::string>();
    if (!r.value("found", true)) {
      std::printf("  %-*s  %s\n", width, name.c_str(), r["why"].get<std::string>().c_str());
      continue;
    }
    const bool plan = r.value("is_the_plan", false) || std::abs(r["slower_by_s"].get<double>()) < 1e-12;
    const std::string label = std::string(key) == "family" ? r["framework"].get<std::string>() + "  " + r["layout"].get<std::string>()
                                                           : r["layout"].get<std::string>();
    std::printf("  %-*s  %9.3f s  %s  %s%s\n", width, name.c_str(), r["step_time_s"].get<double>(),
                plan ? "(the plan)" : fmt("%+8.1f %%", r["slower_by_pct"].get<double>()).c_str(), label.c_str(),
                plan ? "" : error_mark(r).c_str());
  }
  if (rows.size() > most) std::printf("  ... %zu more in --json\n", rows.size() - most);
}

void print_shaped_by(const json& j) {
  std::printf("\nwhat shaped the plan:\n");
  const std::string cons = j["constraints"].get<std::string>();
  std::printf("  scenario [parallel]: %s\n", cons.empty() ? "no constraints" : cons.c_str());
  if (j["policy"].is_null()) {
    std::printf("  site policy: none given (--policy FILE applies one as the plugin would)\n");
  } else {
    std::printf("  site policy %s:", j["policy"].get<std::string>().c_str());
    if (j["policy_caps"].empty()) std::printf(" no search limits");
    std::printf("\n");
    for (const auto& c : j["policy_caps"])
      std::printf("    %s = %s  (%s)\n", c["key"].get<std::string>().c_str(), c["value"].get<std::string>().c_str(),
                  c["where"].get<std::string>().c_str());
    const json& u = j["without_policy_caps"];
    if (!u.value("found", true))
      std::printf("    without them: %s\n", u["why"].get<std::string>().c_str());
    else if (u["same_plan"].get<bool>())
      std::printf("    without them: the same plan\n");
    else
      std::printf("    without them: %s %s, %.3f s (%+.1f %%)%s\n", u["framework"].get<std::string>().c_str(),
                  u["layout"].get<std::string>().c_str(), u["step_time_s"].get<double>(),
                  u["slower_by_pct"].get<double>(), error_mark(u).c_str());
  }
  const json& c = j["calibration"];
  if (c["file"].is_null()) {
    std::printf("  calibration: none given: the shipped parameters (--calibration FILE applies the site's)\n");
  } else {
    std::printf("  calibration %s: %s\n", c["file"].get<std::string>().c_str(),
                c["calibrated"].get<bool>() ? "applied" : "no efficiency entry for this GPU, fabric and framework: the "
                                                          "shipped parameters");
    for (const auto& e : c["entries"]) {
      if (e["kind"] == "efficiency")
        std::printf("    entry gpu=%s fabric=%s framework=%s: compute x%.3f, network x%.3f (%d jobs; error %.1f %% -> "
                    "%.1f %%)\n",
                    e["gpu"].get<std::string>().c_str(), e["fabric"].get<std::string>().c_str(),
                    e["framework"].get<std::string>().c_str(), e["compute_scale"].get<double>(),
                    e["network_scale"].get<double>(), e["samples"].get<int>(), 100 * e["error_before"].get<double>(),
                    100 * e["error_after"].get<double>());
      else
        std::printf("    memory entry gpu=%s framework=%s: %.1f GiB head-room per GPU (%d OOM jobs, %d near the limit)\n",
                    e["gpu"].get<std::string>().c_str(), e["framework"].get<std::string>().c_str(),
                    e["headroom_gib"].get<double>(), e["oom_jobs"].get<int>(), e["near_limit_jobs"].get<int>());
    }
  }
  std::printf("  memory: %.0f %% of each GPU kept free for the memory model's own error", 100 * j["memory_margin"].get<double>());
  if (j["memory_headroom_gib"].get<double>() > 0)
    std::printf(", %.1f GiB head-room per GPU (the policy's and the calibration's) counted in it",
                j["memory_headroom_gib"].get<double>());
  std::printf("\n");
}

}  // namespace

int explain(const ExplainInput& in) {
  const Plan& plan = in.plan;
  const Prediction& w = plan.prediction;
  json comparisons = json::array();
  for (const auto& c : plan.alternatives) comparisons.push_back(compare(c.framework, c.layout, c.prediction, w));
  json policy_changes = json::array();
  for (const auto& c : in.changes) policy_changes.push_back(policies::describe(c));
  const json vs = in.vs ? explain_vs(in) : json(nullptr);
  const json frameworks = per_framework(in), families = per_family(in), shaped = shaped_by(in);
  const json sensitivity = overlap_sensitivity_json(in);
  if (in.as_json) {
    const json j = {{"framework", to_string(plan.framework)},
                    {"parallel", layout_json(plan.layout)},
                    {"prediction", advisor_cli::prediction_json(w)},
                    {"model_error_pct", kModelErrorPct},
                    {"comparisons", comparisons},
                    {"overlap_sensitivity", sensitivity},
                    {"vs", vs},
                    {"per_framework", frameworks},
                    {"per_family", families},
                    {"shaped_by", shaped},
                    {"calibrated", shaped["calibration"]["calibrated"]},
                    {"calibration_entries", shaped["calibration"]["entries"]},
                    {"candidates_evaluated", plan.candidates_evaluated},
                    {"policy_changes", policy_changes},
                    {"notes", in.notes}};
    std::printf("%s\n", j.dump(2).c_str());
    return kOk;
  }
  const Scenario& s = in.scenario;
  std::printf("paratune explain: %s, global batch %d, %d x %s (%d node%s), %lld layouts evaluated\n\n",
              s.model.name.c_str(), s.training.global_batch, s.total_gpus(), s.cluster.gpu.c_str(), s.cluster.nodes,
              s.cluster.nodes == 1 ? "" : "s", plan.candidates_evaluated);
  std::printf("winner (%s): %s\n  %.3f s per step, MFU %.1f %%, %.1f of %.1f GiB per GPU\n", to_string(plan.framework),
              layout_text(plan.layout).c_str(), w.step_time_s, 100 * w.mfu, w.memory_gib_per_gpu, w.memory_capacity_gib);
  advisor_cli::print_breakdown(w);
  if (!vs.is_null()) print_vs(vs);
  std::printf("\nwhy not the next best (positive = the alternative spends more time there; differences under %.0f %% "
              "are inside the model's error):\n",
              kModelErrorPct);
  for (size_t i = 0; i < comparisons.size(); ++i) print_comparison(i + 1, comparisons[i]);
  print_overlap_sensitivity(sensitivity);
  print_table("best per layout family", families, "family", 12);
  print_table("best per framework", frameworks, "framework", 8);
  print_shaped_by(shaped);
  if (!in.changes.empty()) {
    std::printf("\nwhat the site policy changed:\n");
    for (const auto& c : in.changes) std::printf("  %s\n", policies::describe(c).c_str());
  }
  std::printf("\n");
  for (const auto& n : in.notes) std::printf("note: %s\n", n.c_str());
  return kOk;
}

}  // namespace paratune::cli
