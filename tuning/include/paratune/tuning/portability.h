// Performance portability of the site's training workloads across its platforms (docs/portability.md), after
// Pennycook, Sewall and Lee, "A Metric for Performance Portability", PMBS 2016 (arXiv:1611.07409), and
// "Implications of a metric for performance portability", Future Generation Computer Systems 92 (2019) 947-958:
//
//   P(a, p, H) = |H| / sum_{i in H} 1 / e_i(a, p)   if application a runs on every platform i of H,
//              = 0                                  otherwise,
//
// the harmonic mean of a's efficiencies e_i on problem p over the platform set H. Here:
//   problem p      the model (preset name) at a sequence length — what is trained;
//   application a  the problem trained with one framework (megatron, fsdp, ...) — how it is trained;
//   platform i     a (Slurm partition, GPU model, fabric) — where it is trained;
//   performance    tokens/s per GPU: achieved = predicted x achieved/predicted ratio of the job; an application's
//                  performance on a platform is its best job there (what the application does achieve there);
//   e_i, two kinds (Pennycook's application efficiency with two different "best known" performances):
//     predicted    achieved / the best predicted tokens/s per GPU for p on i over all jobs there (the model's plan
//                  for the platform as the reference; above 1 where the site beats the model);
//     application  achieved / the best achieved for p on i by any application (framework): 1 for the best
//                  framework there, meaningful once several frameworks ran p on i.
// A platform of H where the application has no job with an achieved figure (not run, died of OOM, no report)
// counts as "does not run": e = 0 and P = 0, as in Pennycook's definition; the row says why.
// H defaults to the platforms on which any application of p ran; `platforms` fixes it (then a platform on which p
// never ran makes P = 0 for every application of p).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "paratune/tuning/tuning_log.h"

namespace paratune::tuning {

struct Platform {
  std::string partition, gpu, fabric;
  std::string key() const;  // "partition/gpu/fabric"
  bool operator<(const Platform& o) const { return key() < o.key(); }
  bool operator==(const Platform& o) const { return key() == o.key(); }
};
Platform platform_of(const LogEntry& e);
std::optional<Platform> parse_platform(const std::string& key);  // "partition/gpu/fabric"

struct PlatformEfficiency {
  Platform platform;
  size_t jobs = 0;                // the application's jobs there (all, with or without figures)
  size_t measured = 0;            // of which with an achieved figure
  size_t ooms = 0;                // of which died of an out-of-memory error
  std::string best_job;           // the job with the best achieved tokens/s per GPU
  double achieved = 0;            // its achieved tokens/s per GPU (0 when none)
  double best_predicted = 0;      // the best predicted tokens/s per GPU for the problem there (any application)
  double best_achieved = 0;       // the best achieved tokens/s per GPU for the problem there (any application)
  double e_predicted = 0, e_application = 0;
  std::string why_zero;           // "not run", "died of OOM", "no achieved figures" when e = 0
};

struct ApplicationPortability {
  std::string problem, framework;  // problem: "llama3-8b@4096"
  std::vector<PlatformEfficiency> platforms;  // in H's order
  double p_predicted = 0, p_application = 0;
};

struct PortabilityOptions {
  std::vector<Platform> platforms;  // H; empty = per problem, the platforms it ran on
};

struct PortabilityReport {
  std::vector<ApplicationPortability> applications;  // by problem, then framework
  size_t jobs_used = 0, jobs_skipped = 0;            // skipped: no scenario (no problem/framework) or no platform
};

PortabilityReport portability(const std::vector<const LogEntry*>& entries, const PortabilityOptions& o = {});

// The same, one entry at a time (a streamed log): what is kept is per application and platform, not per job.
class PortabilityTally {
 public:
  void add(const LogEntry& e);
  PortabilityReport report(const PortabilityOptions& o = {}) const;

 private:
  struct Own {             // one application's jobs on one platform
    size_t jobs = 0, measured = 0, ooms = 0;
    double achieved = 0;   // the best achieved tokens/s per GPU, and its job
    std::string best_job;
  };
  struct There {           // every application's jobs of a problem on one platform
    double best_predicted = 0, best_achieved = 0;
  };
  using AppKey = std::pair<std::string, std::string>;  // (problem, framework)
  std::map<AppKey, std::map<std::string, Own>> apps_;  // -> platform key -> tally
  std::map<std::string, std::map<std::string, Platform>> ran_on_;  // problem -> platform key -> platform
  std::map<std::pair<std::string, std::string>, There> there_;   // (problem, platform key)
  size_t used_ = 0, skipped_ = 0;
};

// Pennycook's P: the harmonic mean of `e`, 0 when `e` is empty or any e_i <= 0 (or not finite).
double harmonic_portability(const std::vector<double>& e);

// The problem key of a logged job ("llama3-8b@4096"), "" without a scenario.
std::string problem_of(const LogEntry& e);

// One SVG: per application a row of bars, one per platform (height = e, both kinds side by side), with P.
// Bars are <rect class="eff" data-kind="predicted|application">, P is <text class="pp"> (tests count them).
std::string portability_svg(const PortabilityReport& r);

}  // namespace paratune::tuning
