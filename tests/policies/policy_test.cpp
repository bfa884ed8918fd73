// Site policy: parsing good files, the exact messages for bad ones, resolution and precedence, applying the
// policy to the mode, the scenario and the environment.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "paratune/policies/policy.h"

namespace paratune::policies {
namespace {

// The example of the issue, verbatim.
const char* kIssueExample = R"([defaults]
mode = "apply"                          # apply | suggest | off
on_error = "open"                       # open | closed

[defaults.env]
force  = { NCCL_IB_HCA = "mlx5_0:1,mlx5_1:1" }   # always set, replaces a user's value
default = { NCCL_IB_TIMEOUT = "22" }             # set only if the user did not
forbid = ["NCCL_NVLS_ENABLE"]                    # removed from the job env

[defaults.limits]
max_tp = 8
zero_stages = [0, 1, 2]
frameworks = ["megatron", "deepspeed", "fsdp", "torchtitan", "nemo"]

[partition.opa]                         # refines [defaults] for jobs in partition "opa"
limits = { max_tp = 4, zero_stages = [1] }
env = { force = { NCCL_NET_GDR_LEVEL = "PHB" } }
)";

using advisor::EnvSetting;
using advisor::Framework;
using advisor::Recompute;

const EnvSetting* find(const std::vector<EnvSetting>& v, const std::string& name) {
  for (const auto& e : v)
    if (e.name == name) return &e;
  return nullptr;
}

bool has_change(const std::vector<PolicyChange>& v, const std::string& text) {
  return std::any_of(v.begin(), v.end(), [&](const PolicyChange& c) { return describe(c) == text; });
}

std::string all(const std::vector<PolicyChange>& v) {
  std::string s;
  for (const auto& c : v) s += describe(c) + "\n";
  return s;
}

std::string parse_error(const std::string& text) {
  try {
    parse_policy(text, "p.toml");
  } catch (const PolicyError& e) {
    EXPECT_EQ(e.kind(), PolicyError::Kind::Invalid);
    return e.what();
  }
  return "(no error)";
}

// ---------------------------------------------------------------------------------------------------------------
// Good files

TEST(Parse, IssueExampleDefaults) {
  const PolicyFile f = parse_policy(kIssueExample, "policy.toml");
  const EffectivePolicy p = resolve(f, "");
  EXPECT_FALSE(p.partition_matched);
  EXPECT_TRUE(p.enabled);
  ASSERT_TRUE(p.mode.has_value());
  EXPECT_EQ(*p.mode, Mode::Apply);
  EXPECT_EQ(p.on_error, OnError::Open);
  EXPECT_EQ(p.env.force, (std::map<std::string, std::string>{{"NCCL_IB_HCA", "mlx5_0:1,mlx5_1:1"}}));
  EXPECT_EQ(p.env.defaults, (std::map<std::string, std::string>{{"NCCL_IB_TIMEOUT", "22"}}));
  EXPECT_EQ(p.env.forbid, std::vector<std::string>{"NCCL_NVLS_ENABLE"});
  EXPECT_FALSE(p.env.allow_override.has_value());
  EXPECT_EQ(p.limits.max_tp, 8);
  EXPECT_EQ(p.limits.max_pp, 0);
  EXPECT_EQ(p.limits.zero_stages, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(p.limits.frameworks, (std::vector<Framework>{Framework::Megatron, Framework::DeepSpeed, Framework::Fsdp,
                                                         Framework::Torchtitan, Framework::Nemo}));
  EXPECT_DOUBLE_EQ(p.suspect_ratio, 0.7);
  EXPECT_EQ(p.where("limits.max_tp"), "[defaults] limits.max_tp");
  EXPECT_EQ(p.where("env.force.NCCL_IB_HCA"), "[defaults] env.force.NCCL_IB_HCA");
  // An unknown partition gets [defaults] alone.
  const EffectivePolicy q = resolve(f, "gpu");
  EXPECT_FALSE(q.partition_matched);
  EXPECT_EQ(q.limits.max_tp, 8);
}

TEST(Parse, IssueExamplePartitionOpa) {
  const EffectivePolicy p = resolve(parse_policy(kIssueExample, "policy.toml"), "opa");
  EXPECT_TRUE(p.partition_matched);
  EXPECT_EQ(p.limits.max_tp, 4);
  EXPECT_EQ(p.limits.zero_stages, std::vector<int>{1});
  EXPECT_EQ(p.limits.frameworks.size(), 5u);  // inherited
  EXPECT_EQ(p.env.force, (std::map<std::string, std::string>{{"NCCL_IB_HCA", "mlx5_0:1,mlx5_1:1"},
                                                             {"NCCL_NET_GDR_LEVEL", "PHB"}}));
  EXPECT_EQ(p.env.defaults.at("NCCL_IB_TIMEOUT"), "22");
  EXPECT_EQ(p.env.forbid, std::vector<std::string>{"NCCL_NVLS_ENABLE"});
  EXPECT_EQ(p.where("limits.max_tp"), "[partition.opa] limits.max_tp");
  EXPECT_EQ(p.where("limits.frameworks"), "[defaults] limits.frameworks");
  EXPECT_EQ(p.where("env.force.NCCL_NET_GDR_LEVEL"), "[partition.opa] env.force.NCCL_NET_GDR_LEVEL");
  EXPECT_EQ(*p.mode, Mode::Apply);
}

TEST(Parse, EmptyFileIsNoRules) {
  const EffectivePolicy p = resolve(parse_policy("# nothing\n", "p.toml"), "x");
  EXPECT_TRUE(p.enabled);
  EXPECT_FALSE(p.mode.has_value());
  EXPECT_TRUE(p.env.force.empty());
  EXPECT_EQ(p.limits.max_tp, 0);
}

TEST(Parse, EveryKey) {
  const PolicyFile f = parse_policy(R"(
[defaults]
enabled = true
mode = "suggest"
max_mode = "suggest"
on_by_default = true
on_by_default_min_gpus_per_node = 8
users_may_opt_out = false
on_error = "closed"
suspect_ratio = 0.5
[defaults.env]
force = { NCCL_IB_GID_INDEX = 3 }
default = { NCCL_IB_TIMEOUT = "22" }
forbid = ["NCCL_DEBUG"]
allow_override = ["NCCL_ALGO"]
applies_to = "paratune"
[defaults.limits]
max_tp = 8
max_pp = 16
max_cp = 2
zero_stages = [1, 1, 2]
recompute = ["selective", "full"]
frameworks = ["deepspeed", "megatron"]
min_micro_batch = 2
max_micro_batch = 8
memory_headroom_gib = 1.5
[defaults.facts]
gpu = "h100-sxm5-80gb"
nic_gbps = 400
nic_count = 4
nvlink_domain = 4
fabric = "roce"
nccl_topo_file = "/opt/topo.xml"
nvls = false
profile = "/etc/paratune/profiles/h100.toml"
[defaults.log]
tuning_log = "/var/log/site/tuning.jsonl"
mode = 0o600
group = "adm"
)",
                                    "p.toml");
  const EffectivePolicy p = resolve(f, "");
  EXPECT_EQ(*p.mode, Mode::Suggest);
  EXPECT_EQ(p.max_mode, Mode::Suggest);
  EXPECT_TRUE(*p.on_by_default);
  EXPECT_EQ(p.on_by_default_min_gpus_per_node, 8);
  EXPECT_FALSE(p.users_may_opt_out);
  EXPECT_EQ(p.on_error, OnError::Closed);
  EXPECT_DOUBLE_EQ(p.suspect_ratio, 0.5);
  EXPECT_EQ(p.env.force.at("NCCL_IB_GID_INDEX"), "3");  // integers become strings
  EXPECT_EQ(*p.env.allow_override, std::vector<std::string>{"NCCL_ALGO"});
  EXPECT_FALSE(p.env.all_jobs);
  EXPECT_EQ(p.limits.zero_stages, (std::vector<int>{1, 2}));  // duplicates dropped
  EXPECT_EQ(p.limits.recompute_modes, (std::vector<Recompute>{Recompute::Selective, Recompute::Full}));
  EXPECT_EQ(p.limits.frameworks, (std::vector<Framework>{Framework::DeepSpeed, Framework::Megatron}));
  EXPECT_EQ(p.limits.min_micro_batch, 2);
  EXPECT_EQ(p.limits.max_micro_batch, 8);
  EXPECT_DOUBLE_EQ(p.limits.memory_headroom_gib, 1.5);
  EXPECT_EQ(*p.facts.gpu, "h100-sxm5-80gb");
  EXPECT_DOUBLE_EQ(*p.facts.nic_gbps, 400);
  EXPECT_EQ(*p.facts.nic_count, 4);
  EXPECT_EQ(*p.facts.nvlink_domain, 4);
  EXPECT_EQ(*p.facts.fabric, advisor::Fabric::RoCE);
  EXPECT_EQ(*p.facts.nccl_topo_file, "/opt/topo.xml");
  EXPECT_FALSE(*p.facts.nvls);
  EXPECT_EQ(*p.facts.profile, "/etc/paratune/profiles/h100.toml");
  EXPECT_EQ(*p.log.tuning_log, "/var/log/site/tuning.jsonl");
  EXPECT_EQ(p.log.file_mode, 0600u);
  EXPECT_EQ(*p.log.group, "adm");
  EXPECT_EQ(resolve(parse_policy("[defaults.log]\nmode = 0o640\n", "p.toml"), "").log.file_mode, 0640u)
      << "a TOML octal literal is octal";
  const advisor::SearchLimits l = search_limits(p);
  EXPECT_EQ(l.max_tp, 8);
  EXPECT_EQ(l.max_pp, 16);
  EXPECT_EQ(l.max_cp, 2);
  EXPECT_EQ(l.top_n, 5);
}

TEST(Parse, ShippedExampleIsValid) {
  const PolicyFile f = load_policy(std::string(PARATUNE_SOURCE_ROOT) + "/etc/policy.example.toml");
  EXPECT_EQ(resolve(f, "opa").limits.max_tp, 4);
  EXPECT_FALSE(resolve(f, "cpu").enabled);
  EXPECT_EQ(resolve(f, "debug").max_mode, Mode::Suggest);
  EXPECT_EQ(resolve(f, "h100").env.force.at("NCCL_IB_GID_INDEX"), "3");
  EXPECT_EQ(resolve(f, "legacy").framework_versions,
            (std::map<Framework, std::string>{{Framework::Megatron, "core_v0.14"}, {Framework::Torchtitan, "v0.2"},
                                              {Framework::Fsdp, "1.13"}}));
}

// ---------------------------------------------------------------------------------------------------------------
// Bad files: the exact message

struct BadCase {
  const char* name;
  const char* text;
  const char* message;
};

class BadFile : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadFile, ExactMessage) { EXPECT_EQ(parse_error(GetParam().text), GetParam().message); }

const BadCase kBadCases[] = {
    {"Syntax", "[defaults\n",
     "p.toml:1:10: syntax: Error while parsing table header: expected ']', saw '\\n'; valid: TOML "
     "(https://toml.io/en/v1.0.0)"},
    // A TOML++ parser assertion in header-only debug builds (abort); the library build reports it.
    {"SyntaxBraceInHeader", "[{partition.opa]\n",
     "p.toml:1:2: syntax: Error while parsing key: expected bare key starting character or string delimiter, saw "
     "'{'; valid: TOML (https://toml.io/en/v1.0.0)"},
    {"UnknownTopKey", "[default]\nmode = \"apply\"\n",
     "p.toml:1:2: default: unknown key; valid: defaults, partition"},
    {"UnknownSectionKey", "[defaults]\nmax_tp = 8\n",
     "p.toml:2:1: defaults.max_tp: unknown key; valid: enabled, mode, max_mode, on_by_default, "
     "on_by_default_min_gpus_per_node, users_may_opt_out, on_error, suspect_ratio, framework_version, env, limits, "
     "facts, log"},
    {"UnknownLimitKey", "[defaults.limits]\nmax_dp = 8\n",
     "p.toml:2:1: defaults.limits.max_dp: unknown key; valid: max_tp, max_pp, max_cp, max_ep, dispatchers, "
     "zero_stages, recompute, frameworks, min_micro_batch, max_micro_batch, memory_headroom_gib"},
    {"UnknownEnvKey", "[defaults.env]\nforced = { A = \"1\" }\n",
     "p.toml:2:1: defaults.env.forced: unknown key; valid: force, default, forbid, allow_override, applies_to"},
    {"UnknownFactKey", "[partition.a.facts]\nnic_speed = 100\n",
     "p.toml:2:1: partition.a.facts.nic_speed: unknown key; valid: gpu, nic_gbps, nic_count, nvlink_domain, "
     "fabric, nccl_topo_file, nvls, rail_aligned, leaf_oversubscription, kernels, te_version, profile"},
    {"UnknownLogKey", "[defaults.log]\npath = \"/x\"\n",
     "p.toml:2:1: defaults.log.path: unknown key; valid: tuning_log, mode, group"},
    {"BadMode", "[defaults]\nmode = \"sugest\"\n",
     "p.toml:2:8: defaults.mode: got \"sugest\"; valid: apply, suggest, off"},
    {"ModeWrongType", "[defaults]\nmode = 1\n",
     "p.toml:2:8: defaults.mode: expected a string, got an integer; valid: apply, suggest, off"},
    {"BadOnError", "[defaults]\non_error = \"fail\"\n",
     "p.toml:2:12: defaults.on_error: got \"fail\"; valid: open, closed"},
    {"EnabledNotBool", "[partition.gpu]\nenabled = \"yes\"\n",
     "p.toml:2:11: partition.gpu.enabled: expected a boolean, got a string; valid: true, false"},
    {"MaxTpZero", "[defaults.limits]\nmax_tp = 0\n", "p.toml:2:10: defaults.limits.max_tp: got 0; valid: 1..1024"},
    {"MaxTpString", "[partition.opa]\nlimits = { max_tp = \"4\" }\n",
     "p.toml:2:21: partition.opa.limits.max_tp: expected an integer, got a string; valid: 1..1024"},
    {"MaxTpFloat", "[defaults.limits]\nmax_tp = 4.0\n",
     "p.toml:2:10: defaults.limits.max_tp: expected an integer, got a float; valid: 1..1024"},
    {"ZeroStageOutOfRange", "[defaults.limits]\nzero_stages = [0, 4]\n",
     "p.toml:2:19: defaults.limits.zero_stages[1]: got 4; valid: 0, 1, 2, 3"},
    {"ZeroStagesEmpty", "[defaults.limits]\nzero_stages = []\n",
     "p.toml:2:15: defaults.limits.zero_stages: empty list; valid: a non-empty list of ZeRO stages from 0, 1, 2, 3"},
    {"ZeroStagesNotArray", "[defaults.limits]\nzero_stages = 3\n",
     "p.toml:2:15: defaults.limits.zero_stages: expected an array, got an integer; valid: a non-empty list of ZeRO "
     "stages from 0, 1, 2, 3"},
    {"BadFramework", "[defaults.limits]\nframeworks = [\"megatron\", \"jax\"]\n",
     "p.toml:2:27: defaults.limits.frameworks[1]: got \"jax\"; valid: megatron, deepspeed, fsdp, torchtitan, nemo, "
     "automodel"},
    {"BadRecompute", "[defaults.limits]\nrecompute = [\"some\"]\n",
     "p.toml:2:14: defaults.limits.recompute[0]: got \"some\"; valid: none, selective, full"},
    {"NegativeHeadroom", "[defaults.limits]\nmemory_headroom_gib = -1\n",
     "p.toml:2:23: defaults.limits.memory_headroom_gib: got -1; valid: a number of GiB 0..1024"},
    {"MinAboveMaxMicroBatch", "[defaults.limits]\nmin_micro_batch = 4\nmax_micro_batch = 2\n",
     "p.toml:3:19: defaults.limits.max_micro_batch: 2 is below min_micro_batch = 4 (at 2:19); valid: >= 4 (or lower "
     "min_micro_batch)"},
    {"MinAboveMaxAcrossSections", "[defaults.limits]\nmax_micro_batch = 2\n[partition.p.limits]\nmin_micro_batch = 4\n",
     "p.toml:4:19: partition.p.limits.min_micro_batch: 4 is above [defaults] limits.max_micro_batch = 2 (at 2:19); "
     "valid: <= 2 (or set max_micro_batch here too)"},
    {"ForcedAndForbidden", "[defaults.env]\nforce = { NCCL_IB_HCA = \"mlx5_0\" }\nforbid = [\"NCCL_IB_HCA\"]\n",
     "p.toml:2:11: defaults.env.force.NCCL_IB_HCA: both forced and forbidden (forbid at 3:11); valid: force it or "
     "forbid it, not both"},
    {"PartitionForcesWhatDefaultsForbid",
     "[defaults.env]\nforbid = [\"NCCL_NVLS_ENABLE\"]\n[partition.h100]\nenv = { force = { NCCL_NVLS_ENABLE = \"1\" } "
     "}\n",
     "p.toml:4:19: partition.h100.env.force.NCCL_NVLS_ENABLE: forbidden by [defaults] env.forbid (at 2:11); a "
     "partition cannot lift a forbid; valid: a variable [defaults] does not forbid"},
    {"ForcedAndDefault", "[defaults.env]\nforce = { A = \"1\" }\ndefault = { A = \"2\" }\n",
     "p.toml:3:13: defaults.env.default.A: both forced and given a default (force at 2:11); valid: force it or give "
     "a default, not both"},
    {"ForcedAndAllowed", "[defaults.env]\nforce = { NCCL_IB_HCA = \"x\" }\nallow_override = [\"NCCL_IB_HCA\"]\n",
     "p.toml:3:19: defaults.env.allow_override: NCCL_IB_HCA is forced (at 2:11): users can never override it; "
     "valid: variables that are neither forced nor forbidden"},
    {"ForceParatune", "[defaults.env]\nforce = { PARATUNE_TP = \"2\" }\n",
     "p.toml:2:11: defaults.env.force.PARATUNE_TP: PARATUNE_* variables are paratune's own output and cannot be "
     "forced, defaulted or forbidden; valid: any other variable (constrain the plan with limits.* instead)"},
    {"ForbidParatune", "[defaults.env]\nforbid = [\"PARATUNE_PLAN\"]\n",
     "p.toml:2:11: defaults.env.forbid[0]: PARATUNE_* variables are paratune's own output and cannot be forced, "
     "defaulted or forbidden; valid: any other variable (constrain the plan with limits.* instead)"},
    {"BadVariableName", "[defaults.env]\nforbid = [\"NCCL-IB\"]\n",
     "p.toml:2:11: defaults.env.forbid[0]: not a valid environment variable name; valid: letters, digits and '_', "
     "not starting with a digit (at most 128 characters)"},
    {"EnvValueBool", "[defaults.env]\nforce = { NCCL_IB_DISABLE = true }\n",
     "p.toml:2:29: defaults.env.force.NCCL_IB_DISABLE: expected a string, got a boolean; valid: a string (or an "
     "integer)"},
    {"BadPartitionName", "[partition.\"gpu nodes\"]\nenabled = false\n",
     "p.toml:1:12: partition.\"gpu nodes\": not a valid partition name; valid: letters, digits, '_', '-' and '.' (at "
     "most 64 characters), as in SLURM_JOB_PARTITION"},
    {"PartitionNotTable", "[partition]\nopa = 1\n",
     "p.toml:2:7: partition.opa: expected a table, got an integer; valid: a table ([partition.opa] or partition.opa "
     "= { ... })"},
    {"ModeAboveMaxMode", "[partition.debug]\nmode = \"apply\"\nmax_mode = \"suggest\"\n",
     "p.toml:2:8: partition.debug.mode: \"apply\" is above max_mode = \"suggest\" (at 3:12); valid: suggest, off"},
    {"SuspectRatio", "[defaults]\nsuspect_ratio = 1.5\n",
     "p.toml:2:17: defaults.suspect_ratio: got 1.5; valid: a number 0..1 (0 = never flag)"},
    {"UnknownGpu", "[defaults.facts]\nfabric = \"myrinet\"\n",
     "p.toml:2:10: defaults.facts.fabric: got \"myrinet\"; valid: infiniband, roce, efa, slingshot, omnipath, "
     "ethernet"},
    {"RelativeProfile", "[partition.h100.facts]\nprofile = \"h100.toml\"\n",
     "p.toml:2:11: partition.h100.facts.profile: got \"h100.toml\"; valid: an absolute path without '..' (on the "
     "compute nodes)"},
    {"RelativeTopoFile", "[defaults.facts]\nnccl_topo_file = \"topo.xml\"\n",
     "p.toml:2:18: defaults.facts.nccl_topo_file: got \"topo.xml\"; valid: an absolute path without '..' (on the "
     "compute nodes)"},
    {"NvlinkDomainZero", "[defaults.facts]\nnvlink_domain = 0\n",
     "p.toml:2:17: defaults.facts.nvlink_domain: got 0; valid: 1..1024"},
    {"LogWorldWritable", "[defaults.log]\nmode = \"0666\"\n",
     "p.toml:2:8: defaults.log.mode: got 0666: writable by others, anyone could forge records; valid: an octal "
     "permission string such as \"0640\" or \"0600\" (not writable by others)"},
    {"LogModeNotOctal", "[defaults.log]\nmode = \"rw-r-----\"\n",
     "p.toml:2:8: defaults.log.mode: got \"rw-r-----\"; valid: an octal permission string such as \"0640\" or "
     "\"0600\" (not writable by others)"},
    // A decimal 400 was taken as the bits 0620 (group-writable: the log's group could forge records).
    {"LogModeDecimal", "[defaults.log]\nmode = 400\n",
     "p.toml:2:8: defaults.log.mode: got the decimal 400 (write 0o400 or \"0400\" for octal); valid: an octal "
     "permission string such as \"0640\" or \"0600\" (not writable by others)"},
    // An alias would plan another stack than the name says ("megatron-deepspeed" resolved to DeepSpeed 0.16).
    {"FrameworkAlias", "[defaults.limits]\nframeworks = [\"megatron-deepspeed\"]\n",
     "p.toml:2:15: defaults.limits.frameworks[0]: got \"megatron-deepspeed\"; valid: megatron, deepspeed, fsdp, "
     "torchtitan, nemo, automodel"},
};

INSTANTIATE_TEST_SUITE_P(Table, BadFile, ::testing::ValuesIn(kBadCases),
                         [](const ::testing::TestParamInfo<BadCase>& i) { return std::string(i.param.name); });

// TOML++ recurses once per header segment: 50,000 of them overflowed the stack (SIGSEGV in slurmstepd). The depth
// is checked before TOML++ sees the file: segment 65 (column 130 of line 2) is the first too deep; the message
// names it and does not echo the 100 kB header.
TEST(Parse, DeepTableHeaderIsASyntaxErrorNotACrash) {
  std::string header = "[a";
  for (int i = 1; i < 50000; ++i) header += ".a";
  EXPECT_EQ(parse_error("[defaults]\n" + header + "]\n"),
            "p.toml:2:130: syntax: nested deeper than 64 levels (table header segments, dotted key segments, inline "
            "tables and arrays count together); valid: TOML (https://toml.io/en/v1.0.0) at most 64 levels deep");
}

TEST(Parse, AllErrorsInFileOrder) {
  const std::string msg = parse_error(
      "[partition.opa]\nlimits = { max_tp = 0 }\n[defaults]\nmode = \"x\"\ncolour = 1\n[defaults.limits]\n"
      "zero_stages = [7]\n");
  EXPECT_EQ(msg,
            "p.toml:2:21: partition.opa.limits.max_tp: got 0; valid: 1..1024\n"
            "p.toml:4:8: defaults.mode: got \"x\"; valid: apply, suggest, off\n"
            "p.toml:5:1: defaults.colour: unknown key; valid: enabled, mode, max_mode, on_by_default, "
            "on_by_default_min_gpus_per_node, users_may_opt_out, on_error, suspect_ratio, framework_version, env, "
            "limits, facts, log\n"
            "p.toml:7:16: defaults.limits.zero_stages[0]: got 7; valid: 0, 1, 2, 3");
  try {
    parse_policy("[defaults]\nmode = 1\nenabled = 2\n", "p.toml");
    FAIL();
  } catch (const PolicyError& e) {
    EXPECT_EQ(e.problems().size(), 2u);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Precedence

TEST(Resolve, Precedence) {
  const PolicyFile f = parse_policy(R"(
[defaults]
mode = "apply"
on_error = "open"
[defaults.env]
force = { A = "1", B = "1" }
default = { C = "1" }
forbid = ["X"]
allow_override = ["NCCL_ALGO"]
[defaults.limits]
max_tp = 8
max_pp = 4
[partition.p]
on_error = "closed"
limits = { max_tp = 16 }
[partition.p.env]
default = { A = "2" }      # a partition may turn a default's force into a default
force = { C = "2" }        # ... and a default into a force
forbid = ["B", "Y"]        # a partition's forbid drops the default's force of B
allow_override = []        # replaces: nothing may be overridden here
)",
                                    "p.toml");
  const EffectivePolicy p = resolve(f, "p");
  EXPECT_EQ(p.on_error, OnError::Closed);
  EXPECT_EQ(*p.mode, Mode::Apply);
  EXPECT_EQ(p.limits.max_tp, 16);  // replaced (partitions may loosen too)
  EXPECT_EQ(p.limits.max_pp, 4);   // inherited
  EXPECT_EQ(p.env.force, (std::map<std::string, std::string>{{"C", "2"}}));
  EXPECT_EQ(p.env.defaults, (std::map<std::string, std::string>{{"A", "2"}}));
  EXPECT_EQ(p.env.forbid, (std::vector<std::string>{"X", "B", "Y"}));
  EXPECT_TRUE(p.env.allow_override->empty());
  EXPECT_EQ(p.where("env.forbid.X"), "[defaults] env.forbid.X");
  EXPECT_EQ(p.where("env.forbid.B"), "[partition.p] env.forbid.B");
  EXPECT_EQ(p.where("on_error"), "[partition.p] on_error");
}

// ---------------------------------------------------------------------------------------------------------------
// Mode

TEST(DecideMode, Rules) {
  const PolicyFile f = parse_policy(R"(
[defaults]
users_may_opt_out = true
[partition.debug]
max_mode = "suggest"
[partition.cpu]
enabled = false
[partition.h100]
on_by_default = true
on_by_default_min_gpus_per_node = 8
users_may_opt_out = false
[partition.quiet]
mode = "off"
env = { applies_to = "paratune", force = { A = "1" } }
)",
                                    "p.toml");
  ModeRequest r;
  r.option_given = true;

  // Plain job with --paratune: the plugstack default.
  ModeDecision d = decide_mode(resolve(f, "gpu"), r);
  EXPECT_EQ(d.mode, Mode::Apply);
  EXPECT_TRUE(d.env_rules_apply);

  // debug: apply lowered to suggest.
  r.user_mode = Mode::Apply;
  d = decide_mode(resolve(f, "debug"), r);
  EXPECT_EQ(d.mode, Mode::Suggest);
  ASSERT_EQ(d.changes.size(), 1u);
  EXPECT_EQ(describe(d.changes[0]),
            "mode lowered to suggest — [partition.debug] max_mode = \"suggest\" (asked: apply)");

  // cpu: off, even when asked; env rules off too.
  d = decide_mode(resolve(f, "cpu"), r);
  EXPECT_EQ(d.mode, Mode::Off);
  EXPECT_FALSE(d.env_rules_apply);
  EXPECT_EQ(d.why, "paratune is disabled for partition cpu by [partition.cpu] enabled = false");

  // Without --paratune: opt-in by default, on by default on h100 for 8-GPU jobs only.
  ModeRequest none;
  none.gpus_per_node = 8;
  EXPECT_EQ(decide_mode(resolve(f, "gpu"), none).mode, Mode::Off);
  EXPECT_TRUE(decide_mode(resolve(f, "gpu"), none).env_rules_apply);  // applies_to = all (default)
  EXPECT_EQ(decide_mode(resolve(f, "h100"), none).mode, Mode::Apply);
  none.gpus_per_node = 4;
  EXPECT_EQ(decide_mode(resolve(f, "h100"), none).mode, Mode::Off);
  none.plugin_on_by_default = true;  // plugstack on_by_default=yes, policy silent
  none.plugin_default_mode = Mode::Suggest;
  EXPECT_EQ(decide_mode(resolve(f, "gpu"), none).mode, Mode::Suggest);

  // Opting out.
  r.user_mode = Mode::Off;
  EXPECT_EQ(decide_mode(resolve(f, "gpu"), r).mode, Mode::Off);
  d = decide_mode(resolve(f, "h100"), r);
  EXPECT_EQ(d.mode, Mode::Apply);
  ASSERT_EQ(d.changes.size(), 1u);
  EXPECT_EQ(describe(d.changes[0]),
            "mode=off ignored: users may not opt out; mode apply — [partition.h100] users_may_opt_out = false");

  // quiet: mode off unless asked; env rules only for paratune jobs.
  r.user_mode.reset();
  d = decide_mode(resolve(f, "quiet"), r);
  EXPECT_EQ(d.mode, Mode::Off);
  EXPECT_FALSE(d.env_rules_apply);
  r.user_mode = Mode::Apply;
  EXPECT_EQ(decide_mode(resolve(f, "quiet"), r).mode, Mode::Apply);
}

// ---------------------------------------------------------------------------------------------------------------
// Scenario

advisor::Scenario scenario() {
  advisor::Scenario s;
  s.model = advisor::model_preset("llama3-8b");
  s.training.global_batch = 512;
  s.cluster.gpu = "a100-sxm4-80gb";
  s.cluster.nodes = 2;
  s.cluster.gpus_per_node = 8;
  s.cluster.nvlink_domain = 8;
  s.cluster.nic_count = 4;
  s.cluster.nic_gbps = 100;
  s.cluster.nics = {{"mlx5_0", 1, 100, true, "PIX", "", std::nullopt}};
  return s;
}

TEST(ApplyToScenario, UserConstraintsBeyondLimitsAreRemoved) {
  const EffectivePolicy p = resolve(parse_policy(kIssueExample, "policy.toml"), "opa");
  advisor::Scenario s = scenario();
  s.parallel.tp = 8;
  s.parallel.dp = 2;
  s.parallel.zero_stage = 3;
  const auto ch = apply_to_scenario(p, s);
  EXPECT_FALSE(s.parallel.tp.has_value());
  EXPECT_FALSE(s.parallel.dp.has_value());
  EXPECT_FALSE(s.parallel.zero_stage.has_value());
  EXPECT_TRUE(has_change(ch, "TP capped at 4 — [partition.opa] limits.max_tp = 4 (user asked tp=8; the search picks "
                             "tp <= 4)"))
      << all(ch);
  EXPECT_TRUE(has_change(ch, "ZeRO stage 3 not allowed — [partition.opa] limits.zero_stages = [1] (user asked "
                             "zero=3; the search picks among the allowed stages)"))
      << all(ch);
  EXPECT_TRUE(has_change(ch, "DP no longer fixed (user asked dp=2) — tp*pp*dp*cp must equal the GPU count, and a "
                             "degree it was fixed with was removed by the policy"))
      << all(ch);
  const advisor::SearchLimits l = search_limits(p);
  EXPECT_EQ(l.max_tp, 4);
  EXPECT_EQ(l.zero_stages, std::vector<int>{1});
}

TEST(ApplyToScenario, ConstraintsWithinLimitsStay) {
  const EffectivePolicy p = resolve(parse_policy(kIssueExample, "policy.toml"), "opa");
  advisor::Scenario s = scenario();
  s.parallel.tp = 4;
  s.parallel.dp = 4;
  s.parallel.zero_stage = 1;
  EXPECT_TRUE(apply_to_scenario(p, s).empty());
  EXPECT_EQ(*s.parallel.tp, 4);
  EXPECT_EQ(*s.parallel.dp, 4);
}

TEST(ApplyToScenario, OtherLimits) {
  const EffectivePolicy p = resolve(parse_policy(R"(
[defaults.limits]
max_pp = 2
max_cp = 1
recompute = ["selective", "full"]
frameworks = ["deepspeed", "fsdp"]
min_micro_batch = 2
max_micro_batch = 4
)",
                                                 "p.toml"),
                                    "");
  advisor::Scenario s = scenario();
  s.parallel.pp = 4;
  s.parallel.virtual_stages = 2;
  s.parallel.cp = 2;
  s.parallel.recompute = Recompute::None;
  s.parallel.micro_batch = 8;
  const auto ch = apply_to_scenario(p, s);
  EXPECT_FALSE(s.parallel.pp || s.parallel.virtual_stages || s.parallel.cp || s.parallel.recompute ||
               s.parallel.micro_batch);
  EXPECT_EQ(s.training.framework, Framework::DeepSpeed);
  EXPECT_TRUE(has_change(ch, "framework deepspeed instead of megatron — [defaults] limits.frameworks allows only "
                             "deepspeed, fsdp"))
      << all(ch);
  EXPECT_TRUE(has_change(ch, "micro-batch capped at 4 — [defaults] limits.max_micro_batch = 4 (user asked mbs=8; "
                             "the search picks within the bounds)"))
      << all(ch);
  EXPECT_TRUE(has_change(ch, "recompute none not allowed — [defaults] limits.recompute = [selective, full] (user "
                             "asked recompute=none; the search picks among the allowed modes)"))
      << all(ch);
  s.parallel.micro_batch = 1;
  apply_to_scenario(p, s);
  EXPECT_FALSE(s.parallel.micro_batch.has_value());
}

TEST(ApplyToScenario, FixedFactsOverrideTheProbe) {
  const EffectivePolicy p = resolve(parse_policy(R"(
[partition.roce.facts]
nic_gbps = 400
nic_count = 2
nvlink_domain = 4
fabric = "roce"
nccl_topo_file = "/opt/topo.xml"
nvls = false
gpu = "h100-sxm5-80gb"
)",
                                                 "p.toml"),
                                    "roce");
  advisor::Scenario s = scenario();
  s.cluster.nvls = true;
  const auto ch = apply_to_scenario(p, s);
  EXPECT_DOUBLE_EQ(s.cluster.nic_gbps, 400);
  EXPECT_DOUBLE_EQ(s.cluster.nics[0].gbps, 400);
  EXPECT_EQ(s.cluster.nic_count, 2);
  EXPECT_EQ(s.cluster.nvlink_domain, 4);
  EXPECT_EQ(s.cluster.fabric, advisor::Fabric::RoCE);
  EXPECT_EQ(s.cluster.nccl_topo_file, "/opt/topo.xml");
  EXPECT_FALSE(s.cluster.nvls);
  EXPECT_EQ(s.cluster.gpu, "h100-sxm5-80gb");
  EXPECT_EQ(ch.size(), 7u) << all(ch);
  EXPECT_TRUE(has_change(ch, "NIC rate 400 Gb/s (probe: 100 Gb/s) — [partition.roce] facts.nic_gbps")) << all(ch);
  EXPECT_TRUE(has_change(ch, "NVLink domain 4 GPUs (probe: 8) — [partition.roce] facts.nvlink_domain = 4")) << all(ch);

  // A job with 2 GPUs per node gets its share of the domain.
  advisor::Scenario small = scenario();
  small.cluster.gpus_per_node = 2;
  small.cluster.nvlink_domain = 2;
  apply_to_scenario(p, small);
  EXPECT_EQ(small.cluster.nvlink_domain, 2);
}

// ---------------------------------------------------------------------------------------------------------------
// Environment

TEST(PlanEnv, ForceForbidDefault) {
  const EffectivePolicy p = resolve(parse_policy(kIssueExample, "policy.toml"), "opa");
  const std::vector<EnvSetting> wanted = {
      {"PARATUNE_TP", "4", "plan"},
      {"NCCL_IB_HCA", "mlx5_0:1", "the NICs nearest the GPUs"},
      {"NCCL_NVLS_ENABLE", "1", "NVSwitch gen3"},
      {"NCCL_IB_TIMEOUT", "20", "large fabric"},
      {"CUDA_DEVICE_MAX_CONNECTIONS", "1", "TP overlap"},
  };
  const EnvPlan e = plan_env(p, wanted);

  // Forced: always set, the site's value, replacing the user's.
  ASSERT_NE(find(e.set_always, "NCCL_IB_HCA"), nullptr);
  EXPECT_EQ(find(e.set_always, "NCCL_IB_HCA")->value, "mlx5_0:1,mlx5_1:1");
  EXPECT_EQ(find(e.set_always, "NCCL_IB_HCA")->reason, "forced by site policy ([defaults] env.force.NCCL_IB_HCA)");
  EXPECT_EQ(find(e.set_always, "NCCL_NET_GDR_LEVEL")->value, "PHB");
  EXPECT_EQ(find(e.set_if_unset, "NCCL_IB_HCA"), nullptr);
  EXPECT_EQ(e.set_always.size(), 2u);

  // Forbidden: not set, and removed from the job env.
  EXPECT_EQ(find(e.set_always, "NCCL_NVLS_ENABLE"), nullptr);
  EXPECT_EQ(find(e.set_if_unset, "NCCL_NVLS_ENABLE"), nullptr);
  EXPECT_EQ(e.unset, std::vector<std::string>{"NCCL_NVLS_ENABLE"});
  EXPECT_TRUE(has_change(e.changes, "NCCL_NVLS_ENABLE not set (paratune wanted 1: NVSwitch gen3) — forbidden by "
                                    "[defaults] env.forbid.NCCL_NVLS_ENABLE"))
      << all(e.changes);

  // Default: the site's value, only if unset.
  ASSERT_NE(find(e.set_if_unset, "NCCL_IB_TIMEOUT"), nullptr);
  EXPECT_EQ(find(e.set_if_unset, "NCCL_IB_TIMEOUT")->value, "22");

  // Untouched: PARATUNE_* and the rest.
  EXPECT_EQ(find(e.set_if_unset, "PARATUNE_TP")->value, "4");
  EXPECT_EQ(find(e.set_if_unset, "CUDA_DEVICE_MAX_CONNECTIONS")->value, "1");

  EXPECT_TRUE(has_change(e.changes, "NCCL_IB_HCA=mlx5_0:1,mlx5_1:1 instead of paratune's mlx5_0:1 — forced by "
                                    "[defaults] env.force.NCCL_IB_HCA"))
      << all(e.changes);
  EXPECT_TRUE(has_change(e.changes, "NCCL_NET_GDR_LEVEL=PHB forced (a user's value is replaced) — forced by site "
                                    "policy ([partition.opa] env.force.NCCL_NET_GDR_LEVEL)"))
      << all(e.changes);
}

TEST(PlanEnv, RulesApplyWithoutWantedVariables) {
  // mode=off / no --paratune with applies_to = "all": the env rules alone.
  const EnvPlan e = plan_env(resolve(parse_policy(kIssueExample, "policy.toml"), ""), {});
  EXPECT_EQ(e.set_always.size(), 1u);
  EXPECT_EQ(find(e.set_if_unset, "NCCL_IB_TIMEOUT")->value, "22");
  EXPECT_EQ(e.unset, std::vector<std::string>{"NCCL_NVLS_ENABLE"});
  EXPECT_TRUE(has_change(e.changes, "NCCL_NVLS_ENABLE removed from the job environment if present — forbidden by "
                                    "[defaults] env.forbid.NCCL_NVLS_ENABLE"))
      << all(e.changes);
}

TEST(PlanEnv, AllowOverride) {
  const EffectivePolicy p = resolve(parse_policy(R"(
[defaults.env]
allow_override = ["NCCL_ALGO", "NCCL_SOCKET_IFNAME"]
default = { NCCL_IB_TIMEOUT = "22" }
)",
                                                 "p.toml"),
                                    "");
  const EnvPlan e = plan_env(p, {{"NCCL_SOCKET_IFNAME", "ib0", "bootstrap"},
                                 {"NCCL_IB_QPS_PER_CONNECTION", "4", "RoCE"},
                                 {"PARATUNE_PP", "2", "plan"}});
  EXPECT_NE(find(e.set_if_unset, "NCCL_SOCKET_IFNAME"), nullptr);  // on the list: the user's value wins
  ASSERT_NE(find(e.set_always, "NCCL_IB_QPS_PER_CONNECTION"), nullptr);  // not on it: replaces the user's
  EXPECT_EQ(find(e.set_always, "NCCL_IB_QPS_PER_CONNECTION")->reason,
            "RoCE; users may not override it (not in [defaults] env.allow_override)");
  EXPECT_NE(find(e.set_if_unset, "PARATUNE_PP"), nullptr);       // the contract: never affected
  EXPECT_NE(find(e.set_if_unset, "NCCL_IB_TIMEOUT"), nullptr);   // a default is a default
  EXPECT_TRUE(has_change(e.changes, "NCCL_IB_QPS_PER_CONNECTION=4 replaces a user's value — not in [defaults] "
                                    "env.allow_override (users may override only NCCL_ALGO, NCCL_SOCKET_IFNAME)"))
      << all(e.changes);
}

TEST(PlanEnv, NoPolicyChangesNothing) {
  const std::vector<EnvSetting> wanted = {{"NCCL_IB_HCA", "mlx5_0", "r"}, {"PARATUNE_TP", "2", "r"}};
  const EnvPlan e = plan_env(EffectivePolicy{}, wanted);
  EXPECT_EQ(e.set_if_unset.size(), 2u);
  EXPECT_TRUE(e.set_always.empty());
  EXPECT_TRUE(e.unset.empty());
  EXPECT_TRUE(e.changes.empty());
}

}  // namespace
}  // namespace paratune::policies

namespace paratune::policies {
namespace {

TEST(BrokenPolicy, OnErrorStillReadable) {
  try {
    parse_policy("[defaults]\non_error = \"closed\"\nmode = \"x\"\n[partition.dev]\non_error = \"open\"\n", "p.toml");
    FAIL();
  } catch (const PolicyError& e) {
    EXPECT_TRUE(e.fails_closed(""));
    EXPECT_TRUE(e.fails_closed("gpu"));
    EXPECT_FALSE(e.fails_closed("dev"));
  }
  try {
    parse_policy("[defaults]\non_error = \"closed\"\nmode = \n", "p.toml");  // syntax: nothing can be trusted
    FAIL();
  } catch (const PolicyError& e) {
    EXPECT_FALSE(e.fails_closed(""));
  }
  try {
    parse_policy("[defaults]\nmode = \"x\"\n", "p.toml");
    FAIL();
  } catch (const PolicyError& e) {
    EXPECT_FALSE(e.fails_closed(""));  // default: open
  }
}

}  // namespace

// [facts] profile: the partition's hardware profile replaces the defaults' (the plugin reads it instead of its
// profile=); a partition without one keeps the defaults'.
TEST(PolicyFacts, ProfilePerPartition) {
  const PolicyFile f = parse_policy(R"(
[defaults.facts]
profile = "/etc/paratune/profiles/default.toml"
[partition.h100.facts]
profile = "/etc/paratune/profiles/h100.toml"
[partition.cpu]
enabled = false
)",
                                    "p.toml");
  EXPECT_EQ(*resolve(f, "h100").facts.profile, "/etc/paratune/profiles/h100.toml");
  EXPECT_EQ(*resolve(f, "a100").facts.profile, "/etc/paratune/profiles/default.toml");
  EXPECT_FALSE(resolve(parse_policy("[defaults]\nenabled = true\n", "p.toml"), "h100").facts.profile);
}

}  // namespace paratune::policies
