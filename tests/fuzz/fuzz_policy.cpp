// The site policy loader (policies/policy.h): parse_policy, then everything the plugin does with a parsed file
// for each partition it names (resolve, decide_mode, apply_to_scenario, plan_env, summary). Contract: a
// PolicyFile or PolicyError (Kind::Invalid, one line per problem); "never throws for a valid policy" after that.
#include "fuzz_common.h"
#include "paratune/advisor/scenario.h"
#include "paratune/policies/policy.h"

using namespace paratune;

namespace {

advisor::Scenario base_scenario() {
  advisor::Scenario s;
  s.model = advisor::model_preset("llama3-8b");
  s.training.global_batch = 64;
  s.cluster.gpu = "a100-sxm4-80gb";
  s.cluster.nodes = 2;
  s.cluster.gpus_per_node = 8;
  s.cluster.nvlink_domain = 8;
  s.cluster.nic_count = 4;
  s.cluster.nic_gbps = 200;
  s.parallel.tp = 8;
  s.parallel.pp = 2;
  s.parallel.dp = 1;
  s.parallel.zero_stage = 3;
  s.parallel.recompute = advisor::Recompute::Full;
  return s;
}

void exercise(const policies::PolicyFile& f, const std::string& partition) {
  const policies::EffectivePolicy p = policies::resolve(f, partition);
  for (int gpus : {0, 8}) {
    policies::ModeRequest r;
    r.option_given = gpus != 0;
    r.user_mode = gpus ? std::optional(policies::Mode::Apply) : std::nullopt;
    r.gpus_per_node = gpus;
    const auto m = policies::decide_mode(p, r);
    (void)m;
  }
  advisor::Scenario s = base_scenario();
  policies::apply_to_scenario(p, s);
  const auto limits = policies::search_limits(p);
  FUZZ_CHECK(limits.max_tp >= 0 && limits.max_pp >= 0 && limits.max_cp >= 0);
  const std::vector<advisor::EnvSetting> wanted = {{"NCCL_IB_HCA", "mlx5_0", "probe"},
                                                   {"NCCL_NVLS_ENABLE", "1", "model"},
                                                   {"PARATUNE_TP", "8", "plan"}};
  const auto e = policies::plan_env(p, wanted);
  for (const auto& u : e.unset) FUZZ_CHECK(u.rfind("PARATUNE_", 0) != 0);  // PARATUNE_* never affected
  (void)policies::summary(p);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > policies::kMaxPolicyBytes) return 0;  // load_policy refuses larger files before parsing
  policies::PolicyFile f;
  try {
    f = policies::parse_policy(fuzz::as_view(data, size), "fuzz.toml");
  } catch (const policies::PolicyError& e) {
    FUZZ_CHECK(e.kind() == policies::PolicyError::Kind::Invalid && !e.problems().empty());
    (void)e.fails_closed("");
    (void)e.fails_closed("gpu");
    return 0;
  }
  exercise(f, "");
  exercise(f, "no-such-partition");
  for (const auto& [name, layer] : f.partitions) exercise(f, name);
  return 0;
}
