// The whole decision as the plugin makes it in user_init (plugin/job/decision.h): the user's SPEC and @FILE
// scenario text against a fixed node (the builtin DGX-2: 16 V100 on NVSwitch, or Lassen: 4 V100, 4 IB NICs),
// an allocation and optionally a restrictive site policy; then the environment, the plan files and the
// tuning-log record. Input: byte 0 selects node/GPUs/nodes/policy, then "SPEC\nSCENARIO-TOML".
// Contract: a Decision or a std::exception (the plugin logs it and fails open); no crash, no sanitizer report,
// no hang (libFuzzer -timeout).
#include <stdexcept>

#include "paratune/planner/decision.h"
#include "fuzz_common.h"
#include "paratune/probe/probe.h"
#include "job/tuning_record.h"

using namespace paratune;

namespace {

const probe::Topology& node(int which) {
  static const probe::Topology dgx2 = [] {
    probe::ProbeOptions o;
    o.topology_file = "builtin:nvidia-dgx2";
    return probe::probe(o);
  }();
  static const probe::Topology lassen = [] {
    probe::ProbeOptions o;
    o.topology_file = "builtin:lassen";
    return probe::probe(o);
  }();
  return which ? lassen : dgx2;
}

const policies::EffectivePolicy& strict_policy() {
  static const policies::EffectivePolicy p = policies::resolve(policies::parse_policy(R"(
[defaults]
max_mode = "suggest"
[defaults.limits]
max_tp = 2
max_pp = 4
zero_stages = [1]
recompute = ["full"]
frameworks = ["fsdp", "megatron"]
max_micro_batch = 2
memory_headroom_gib = 4
[defaults.env]
force = { NCCL_IB_HCA = "mlx5_0" }
forbid = ["NCCL_NVLS_ENABLE"]
allow_override = ["NCCL_ALGO"]
[defaults.facts]
nic_gbps = 100
)", "strict.toml"), "");
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = fuzz::as_view(data, size);
  const uint8_t sel = fuzz::take_byte(text);
  const size_t nl = text.find('\n');
  const std::string_view spec_text = text.substr(0, nl);
  const std::string scenario_text(nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1));

  planner::DecisionInput in;
  try {
    in.spec = planner::parse_option_spec(spec_text);
  } catch (const planner::SpecError&) {
    return 0;  // rejected at submit time: never reaches a node
  }
  const int which = sel & 1;
  in.topology = node(which);
  const int gpus = which ? 1 + ((sel >> 1) & 3) : 1 + ((sel >> 1) & 15);
  in.alloc.gpus_on_node = gpus;
  in.alloc.nodes = 1 << (2 * ((sel >> 5) & 3));  // 1, 4, 16, 64 nodes
  for (auto& g : in.topology.gpus) g.in_allocation = g.index < gpus;
  if (sel & 0x80) in.policy = strict_policy();
  in.mode = in.spec.mode.value_or(planner::Mode::Apply);
  if (in.mode == planner::Mode::Off) in.mode = planner::Mode::Suggest;
  in.scenario_text = scenario_text;
  planner::Decision d;
  try {
    d = planner::decide(in);
  } catch (const std::exception&) {
    return 0;  // logged, the job runs untouched
  }
  const auto& l = d.plan.layout;
  FUZZ_CHECK(l.tp >= 1 && l.pp >= 1 && l.dp >= 1 && l.cp >= 1 && l.micro_batch >= 1);
  FUZZ_CHECK(static_cast<long>(l.tp) * l.pp * l.dp * l.cp == static_cast<long>(gpus) * in.alloc.nodes);
  if (sel & 0x80) FUZZ_CHECK(l.tp <= 2 && l.pp <= 4 && l.micro_batch <= 2);
  const auto env = planner::decision_env(d, "/tmp/paratune-1/plan.json", "/tmp/paratune-1/report.jsonl");
  const auto inj = planner::policy_injection(in.policy, env);
  planner::MapEnvironment jobenv({{"NCCL_IB_HCA", "user"}, {"PARATUNE_TP", "3"}, {"NCCL_NVLS_ENABLE", "1"}});
  const auto outcome = planner::inject(jobenv, inj.assignments, inj.force, inj.unset);
  (void)planner::decision_files(d);
  job::JobIdentity who;
  who.job_id = "1";
  who.step_id = "batch";
  who.user = "user";
  who.partition = "debug";
  who.hostname = "node";
  who.uid = 1000;
  who.nodes = in.alloc.nodes;
  who.gpus_on_node = gpus;
  // As the plugin writes it (job/tuning_record.cpp tuning_line_text): invalid UTF-8 from user input is replaced, never thrown.
  (void)job::tuning_record(who, in.spec, d, outcome, 1700000000).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return 0;
}
