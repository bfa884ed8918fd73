// `paratune portability`: how portable the site's training workloads are across its platforms (Pennycook's P,
// docs/portability.md) — measured from the tuning log, or predicted for a scenario across the site policy's
// partitions before anything runs.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "advisor_cli.h"
#include "command.h"
#include "partition_names.h"
#include "log_input.h"
#include "options.h"
#include "paratune/tuning/scan/log_stream.h"
#include "paratune/advisor/advisor.h"
#include "paratune/policies/policy.h"
#include "paratune/tuning/portability.h"

namespace paratune::cli {
namespace {

using namespace paratune::tuning;
using nlohmann::json;

const char* kDescription =
    "Performance portability after Pennycook, Sewall and Lee (PMBS 2016, arXiv:1611.07409): for each application\n"
    "(model at a sequence length, trained with one framework) and each platform (partition/gpu/fabric), the\n"
    "efficiency e of its best job there, and P = the harmonic mean of e over the platform set, 0 when the\n"
    "application does not run on one of them. Two efficiencies:\n"
    "  predicted    achieved tokens/s per GPU / the best predicted for the model on that platform\n"
    "  application  achieved tokens/s per GPU / the best achieved for the model there by any framework\n"
    "With --scenario and --policy: the predicted portability of that scenario across the policy's partitions\n"
    "(each partition's facts and caps applied, as the plugin would): e_arch = predicted MFU (architectural\n"
    "efficiency), e_app = the scenario framework's predicted tokens/s over the best framework's there; a partition\n"
    "where nothing fits or the framework is not allowed counts 0; one where paratune is disabled is left out of P\n"
    "(and said so). --partitions picks some (default: all); a name the policy lacks is warned about (uses\n"
    "[defaults]), an error with --strict.";
const char* kFooter = "exit status: 0 ok, 1 a log or file cannot be read, 2 bad option or input, 3 nothing to compute";

std::string f3(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", v);
  return b;
}

json report_json(const PortabilityReport& r) {
  json apps = json::array();
  for (const auto& a : r.applications) {
    json pls = json::array();
    for (const auto& p : a.platforms)
      pls.push_back({{"platform", p.platform.key()}, {"partition", p.platform.partition}, {"gpu", p.platform.gpu},
                     {"fabric", p.platform.fabric}, {"jobs", p.jobs}, {"measured", p.measured}, {"ooms", p.ooms},
                     {"best_job", p.best_job}, {"achieved_tokens_per_s_per_gpu", p.achieved},
                     {"best_predicted_tokens_per_s_per_gpu", p.best_predicted},
                     {"best_achieved_tokens_per_s_per_gpu", p.best_achieved}, {"e_predicted", p.e_predicted},
                     {"e_application", p.e_application}, {"why_zero", p.why_zero}});
    apps.push_back({{"problem", a.problem}, {"framework", a.framework}, {"platforms", pls},
                    {"P_predicted", a.p_predicted}, {"P_application", a.p_application}});
  }
  return {{"definition", "Pennycook, Sewall, Lee 2016 (arXiv:1611.07409): P = |H| / sum 1/e_i, 0 if not run on "
                         "every platform of H"},
          {"jobs_used", r.jobs_used}, {"jobs_skipped", r.jobs_skipped}, {"applications", apps}};
}

void print_report(const PortabilityReport& r) {
  for (const auto& a : r.applications) {
    std::printf("%s with %s\n", a.problem.c_str(), a.framework.c_str());
    std::printf("  %-36s %5s %11s %11s %11s %7s %7s  %s\n", "platform (partition/gpu/fabric)", "jobs", "tok/s/GPU",
                "best pred", "best any", "e_pred", "e_app", "");
    for (const auto& p : a.platforms)
      std::printf("  %-36.36s %5zu %11.1f %11.1f %11.1f %7s %7s  %s\n", p.platform.key().c_str(), p.jobs, p.achieved,
                  p.best_predicted, p.best_achieved, f3(p.e_predicted).c_str(), f3(p.e_application).c_str(),
                  p.why_zero.c_str());
    std::printf("  P = %s (against the best prediction), %s (against the best achieved), over %zu platforms\n\n",
                f3(a.p_predicted).c_str(), f3(a.p_application).c_str(), a.platforms.size());
  }
  std::printf("%zu jobs used, %zu without scenario or partition skipped; P after Pennycook et al. 2016\n", r.jobs_used,
              r.jobs_skipped);
}

int from_log(const std::vector<std::string>& paths, const LogFilter& filter, const PortabilityOptions& o,
             bool as_json, const std::string& svg_path) {
  PortabilityTally tally;  // per application and platform: what the report needs, not the jobs
  const LogStream in = stream_logs(paths, "paratune portability", filter, [&](LogEntry& e) { tally.add(e); });
  if (!in.any) return kFailure;
  const PortabilityReport r = tally.report(o);
  if (r.applications.empty()) {
    std::fprintf(stderr, "paratune portability: no job with a scenario and a partition in the selection\n");
    return kNothingFits;
  }
  if (!svg_path.empty()) {
    std::ofstream out(svg_path, std::ios::trunc);
    out << portability_svg(r);
    out.close();
    if (!out.good()) {
      std::fprintf(stderr, "paratune portability: cannot write %s\n", svg_path.c_str());
      return kFailure;
    }
    std::fprintf(stderr, "paratune portability: wrote %s\n", svg_path.c_str());
  }
  if (as_json) std::printf("%s\n", report_json(r).dump(2).c_str());
  else print_report(r);
  return in.complete ? kOk : kFailure;
}

// ---- the what-if across the policy's partitions ----

struct PartitionPrediction {
  std::string partition, gpu, fabric, framework, plan, best_framework, why_zero;
  double tokens_per_gpu = 0, mfu = 0, best_tokens_per_gpu = 0, e_arch = 0, e_app = 0;
  bool disabled = false;  // paratune is off there: no platform of H (P is over the partitions it tunes)
};

// The best of a plan and its alternatives in tokens/s per GPU.
double best_of(const advisor::Plan& p, std::string* framework) {
  double best = p.prediction.tokens_per_s_per_gpu;
  *framework = advisor::to_string(p.framework);
  for (const auto& a : p.alternatives)
    if (a.prediction.tokens_per_s_per_gpu > best) {
      best = a.prediction.tokens_per_s_per_gpu;
      *framework = advisor::to_string(a.framework);
    }
  return best;
}

PartitionPrediction predict_partition(const advisor::Scenario& base, const policies::PolicyFile& file,
                                      const std::string& name, const std::string& calibration) {
  PartitionPrediction r;
  r.partition = name;
  advisor::Scenario s = base;
  const auto policy = policies::resolve(file, name);
  policies::apply_to_scenario(policy, s);
  r.gpu = s.cluster.gpu;
  r.fabric = advisor::to_string(s.cluster.fabric);
  r.framework = advisor::to_string(base.training.framework);
  auto zero = [&r](std::string why) {
    r.why_zero = std::move(why);
    return r;
  };
  if (!policy.enabled) {
    r.disabled = true;
    return zero("paratune disabled there: not counted in P");
  }
  if (s.training.framework != base.training.framework) return zero("framework not allowed there");
  auto limits = policies::search_limits(policy);
  limits.top_n = 8;
  try {
    advisor::validate(s);
    if (!calibration.empty()) {
      limits.params = advisor_cli::load_calibration(calibration, s);
      limits.memory_headroom_gib += advisor_cli::load_headroom(calibration, s);
    }
    const advisor::Plan own = advisor::advise(s, limits);
    r.tokens_per_gpu = own.prediction.tokens_per_s_per_gpu;
    r.mfu = own.prediction.mfu;
    r.plan = advisor_cli::layout_text(own.layout);
    limits.all_frameworks = true;
    r.best_tokens_per_gpu = std::max(r.tokens_per_gpu, best_of(advisor::advise(s, limits), &r.best_framework));
    if (r.best_tokens_per_gpu == r.tokens_per_gpu) r.best_framework = r.framework;
  } catch (const advisor::NothingFits& e) {
    return zero(std::string("nothing fits: ") + e.what());
  } catch (const std::invalid_argument& e) {  // the scenario cannot run there at all (FP8 on an A100 partition)
    return zero(std::string("cannot run there: ") + e.what());
  }
  r.e_arch = r.mfu;
  r.e_app = r.best_tokens_per_gpu > 0 ? r.tokens_per_gpu / r.best_tokens_per_gpu : 0;
  return r;
}

void print_whatif(const std::vector<PartitionPrediction>& rows, double p_arch, double p_app, bool as_json) {
  std::vector<std::string> disabled;
  for (const auto& r : rows)
    if (r.disabled) disabled.push_back(r.partition);
  const size_t counted = rows.size() - disabled.size();
  if (as_json) {
    json arr = json::array();
    for (const auto& r : rows)
      arr.push_back({{"partition", r.partition}, {"gpu", r.gpu}, {"fabric", r.fabric}, {"framework", r.framework},
                     {"plan", r.plan}, {"tokens_per_s_per_gpu", r.tokens_per_gpu}, {"mfu", r.mfu},
                     {"best_framework", r.best_framework}, {"best_tokens_per_s_per_gpu", r.best_tokens_per_gpu},
                     {"e_arch", r.e_arch}, {"e_app", r.e_app}, {"why_zero", r.why_zero}, {"counted", !r.disabled}});
    std::printf("%s\n", json{{"partitions", arr}, {"P_arch", p_arch}, {"P_app", p_app},
                              {"excluded_disabled", disabled}}.dump(2).c_str());
    return;
  }
  std::printf("%-12s %-18s %-11s %10s %6s %-10s %10s %6s %6s  %s\n", "partition", "gpu", "fabric", "tok/s/GPU", "MFU",
              "best fw", "best", "e_arch", "e_app", "plan");
  for (const auto& r : rows)
    std::printf("%-12.12s %-18.18s %-11.11s %10.1f %6.3f %-10.10s %10.1f %6.3f %6.3f  %s\n", r.partition.c_str(),
                r.gpu.c_str(), r.fabric.c_str(), r.tokens_per_gpu, r.mfu, r.best_framework.c_str(),
                r.best_tokens_per_gpu, r.e_arch, r.e_app, r.why_zero.empty() ? r.plan.c_str() : r.why_zero.c_str());
  std::string excluded;
  for (const auto& d : disabled) excluded += (excluded.empty() ? "" : ", ") + d;
  std::printf("\npredicted P = %s (architectural: MFU), %s (application: against the best framework), over %zu "
              "partitions%s\n", f3(p_arch).c_str(), f3(p_app).c_str(), counted,
              excluded.empty() ? "" : ("; paratune is disabled on " + excluded + ": not counted").c_str());
}

int what_if(const std::string& scenario_path, const std::string& policy_path, const std::vector<std::string>& names,
            const std::string& calibration, bool as_json, bool strict) {
  std::vector<std::string> notes;
  const advisor::Scenario base = advisor_cli::load_scenario(scenario_path, "", notes);
  const policies::PolicyFile file = policies::load_policy(policy_path);
  if (!check_partition_names("portability", file, policy_path, names, strict)) return kBadInput;
  std::vector<std::string> parts = names;
  if (parts.empty())
    for (const auto& [name, layer] : file.partitions) parts.push_back(name);
  if (parts.empty()) {
    std::fprintf(stderr, "paratune portability: %s has no [partition.NAME] section; --partitions names some\n",
                 policy_path.c_str());
    return kNothingFits;
  }
  std::vector<PartitionPrediction> rows;
  std::vector<double> arch, app;
  for (const auto& p : parts) {
    rows.push_back(predict_partition(base, file, p, calibration));
    if (rows.back().disabled) continue;  // not a platform the site tunes: outside H, said so below the table
    arch.push_back(rows.back().e_arch);
    app.push_back(rows.back().e_app);
  }
  print_whatif(rows, harmonic_portability(arch), harmonic_portability(app), as_json);
  return kOk;
}

struct PortabilityArgs {
  std::vector<std::string> paths, partitions, platforms;
  std::string svg_path, scenario, policy, calibration, since;
  LogFilter filter;
  bool as_json = false, strict = false;
};

int run(const PortabilityArgs& a) {
  const std::vector<std::string>& paths = a.paths;
  const std::vector<std::string>& partitions = a.partitions;
  const std::string &svg_path = a.svg_path, &scenario = a.scenario, &policy = a.policy,
                    &calibration = a.calibration;
  LogFilter filter = a.filter;
  if (!a.since.empty()) filter.since = parse_date(a.since);  // checked by the option's validator
  PortabilityOptions o;
  for (const auto& k : a.platforms) o.platforms.push_back(*parse_platform(k));  // checked likewise
  const bool as_json = a.as_json;
  if (!scenario.empty()) {
    try {
      return what_if(scenario, policy, partitions, calibration, as_json, a.strict);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "paratune portability: %s\n", e.what());
      return kBadInput;
    }
  }
  return from_log(paths, filter, o, as_json, svg_path);
}

Action setup(CLI::App& app, const std::vector<std::string>&) {
  auto a = std::make_shared<PortabilityArgs>();
  describe(app, kDescription);
  app.footer(kFooter);
  app.add_option("--log", a->paths, "tuning logs (repeatable; a directory of per-node logs, a quoted pattern)")
      ->type_name("FILE");
  app.add_option("--since", a->since, "only jobs that ended at or after DATE (as in paratune log)")
      ->type_name("DATE")
      ->check(options::parsed_by([](const std::string& v) { parse_date(v); }));
  app.add_option("--user", a->filter.user, "only this user's jobs")->type_name("U");
  app.add_option("--platforms", a->platforms, "the platform set H (partition/gpu/fabric,...); default: where each\n"
                                               "model ran")
      ->type_name("LIST")
      ->delimiter(',')
      ->check(options::parsed_by([](const std::string& k) {
        if (!parse_platform(k)) throw std::invalid_argument("'" + k + "': expected partition/gpu/fabric");
      }));
  app.add_option("--svg", a->svg_path, "also write the efficiencies as bars per application with P")->type_name("FILE");
  app.add_flag("--json", a->as_json, "machine-readable output");
  auto* scenario = app.add_option("--scenario", a->scenario, "predict the portability of this scenario ...")
                       ->type_name("FILE");
  auto* policy = app.add_option("--policy", a->policy, "... across this site policy's partitions")->type_name("FILE");
  scenario->needs(policy);
  policy->needs(scenario);
  app.add_option("--partitions", a->partitions, "with --policy: only these partitions (default: all)")
      ->type_name("LIST")
      ->delimiter(',')
      ->needs(policy);
  app.add_flag("--strict", a->strict, "with --partitions: a name the policy has no section for is an error");
  app.add_option("--calibration", a->calibration, "the site's fitted efficiencies (`paratune calibrate` output)")
      ->type_name("FILE");
  return [a] { return run(*a); };
}

Register reg{"portability", "performance portability across partitions (Pennycook's P), measured or predicted",
             setup};

}  // namespace
}  // namespace paratune::cli
