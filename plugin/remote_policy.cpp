// The admin's files a step reads as root in init_post_opt (remote context): the site policy (whether paratune
// acts at all for a step without --paratune, and the rules of the job's partition), the site's calibration and the
// node type's hardware profile. Each is the admin's, trusted only when root's and not writable by others; a broken
// policy is loud and on_error decides, a broken calibration or profile falls back to the shipped model.
#include <unistd.h>

#include "job/decide_request.h"
#include "paratune/common/safe_file.h"
#include "remote.h"

namespace paratune::plugin::remote {

PolicySource read_policy_file() {
  auto& s = state();
  try {
    return {policies::load_policy_secure(s.config.policy), std::nullopt};
  } catch (const policies::PolicyError& e) {
    if (e.kind() == policies::PolicyError::Kind::Missing && !s.config.policy_explicit) return {};
    return {std::nullopt, e};
  }
}

// Whether paratune can do anything at all for a step without --paratune: decide by default, or apply the site's
// variables. Otherwise the step is left alone before anything is asked of slurmctld.
bool may_act_without_option(const PolicySource& src) {
  if (state().config.enabled_by_default || src.error) return true;
  if (!src.file) return false;
  auto acts = [](const policies::PolicyLayer& l) {
    return l.on_by_default.value_or(false) || !l.force.empty() || !l.defaults.empty() || !l.forbid.empty();
  };
  if (acts(src.file->defaults)) return true;
  for (const auto& [name, layer] : src.file->partitions)
    if (acts(layer)) return true;
  return false;
}

// The site policy for the job's partition. Anything wrong with the file is loud: every problem is logged, and
// on_error decides (read from the broken file where possible).
bool load_policy(const PolicySource& src, const std::string& partition) {
  auto& s = state();
  s.policy = policies::EffectivePolicy{};
  if (!src.error) {
    if (src.file) s.policy = policies::resolve(*src.file, partition);
    return true;
  }
  const auto& e = *src.error;
  s.metric_failures.push_back("policy");
  for (const auto& p : e.problems()) log().error("policy: {}", p);
  if (e.fails_closed(partition)) {
    s.policy.on_error = policies::OnError::Closed;
    s.fail_closed = "the site policy " + s.config.policy + " is broken (see the Slurm log)";
    log().error("the broken policy says on_error = \"closed\": the step will fail");
  } else {
    log().error("the site policy {} is unusable; paratune does nothing for this job", s.config.policy);
  }
  return false;
}

// The site's calibration (`paratune calibrate` output), read as root: absent is normal, anything else that is
// wrong is logged and the shipped model is used.
void load_calibration() {
  auto& s = state();
  if (::access(s.config.calibration.c_str(), F_OK) != 0) return;
  try {
    s.calibration = advisor::parse_calibration(common::read_trusted_file(s.config.calibration, job::kMaxScenarioBytes),
                                               s.config.calibration);
  } catch (const std::exception& e) {
    log().error("calibration: {}; using the shipped model", e.what());
  }
}

// The node type's hardware profile (`paratune measure` output: the partition's [facts] profile, else plugstack
// profile=), read as root like the calibration: absent is normal; whether it is for this node is decided with the
// node's fingerprint (decision.cpp).
void load_profile() {
  auto& s = state();
  const std::string path = s.policy.facts.profile.value_or(s.config.profile);
  if (path.empty() || ::access(path.c_str(), F_OK) != 0) return;
  try {
    s.profile = advisor::parse_profile(common::read_trusted_file(path, job::kMaxScenarioBytes), path);
  } catch (const std::exception& e) {
    log().error("hardware profile: {}; using the catalog's rates", e.what());
  }
}

}  // namespace paratune::plugin::remote
