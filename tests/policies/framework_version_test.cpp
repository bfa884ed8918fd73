// The site policy's framework_version defaults: the schema and its messages (valid ids from the supported-version
// table), partition-by-framework precedence, and what applying them does to a scenario (the user's version wins;
// a version for a framework the policy replaced is dropped; the search's other frameworks get theirs).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "paratune/advisor/advisor.h"
#include "paratune/advisor/framework_args.h"
#include "paratune/advisor/framework_versions.h"
#include "paratune/policies/policy.h"

namespace paratune::policies {
namespace {

using advisor::Framework;

std::string parse_error(const std::string& text) {
  try {
    parse_policy(text, "p.toml");
  } catch (const PolicyError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string all(const std::vector<PolicyChange>& v) {
  std::string s;
  for (const auto& c : v) s += describe(c) + "\n";
  return s;
}

advisor::Scenario scenario(Framework f) {
  advisor::Scenario s;
  s.model = advisor::model_preset("llama3-8b");
  s.training.global_batch = 256;
  s.training.framework = f;
  s.cluster.gpu = "a100-sxm4-80gb";
  s.cluster.nodes = 1;
  s.cluster.gpus_per_node = 8;
  s.cluster.nvlink_domain = 8;
  s.cluster.nic_count = 4;
  s.cluster.nic_gbps = 200;
  return s;
}

const char* kTwoLayers = R"([defaults]
framework_version = { megatron = "core_v0.14", torchtitan = "main" }

[partition.legacy]
framework_version = { megatron = "main", fsdp = "1.13" }
)";

TEST(FrameworkVersionPolicy, ParsedAndMergedFrameworkByFramework) {
  const PolicyFile f = parse_policy(kTwoLayers, "p.toml");
  const EffectivePolicy d = resolve(f, "");
  EXPECT_EQ(d.framework_versions, (std::map<Framework, std::string>{{Framework::Megatron, "core_v0.14"},
                                                                     {Framework::Torchtitan, "main"}}));
  const EffectivePolicy p = resolve(f, "legacy");
  // The partition replaces megatron's, adds fsdp's and inherits torchtitan's.
  EXPECT_EQ(p.framework_versions, (std::map<Framework, std::string>{{Framework::Megatron, "main"},
                                                                     {Framework::Torchtitan, "main"},
                                                                     {Framework::Fsdp, "1.13"}}));
  EXPECT_EQ(p.where("framework_version.megatron"), "[partition.legacy] framework_version.megatron");
  EXPECT_EQ(p.where("framework_version.torchtitan"), "[defaults] framework_version.torchtitan");
  EXPECT_NE(summary(p).find("framework_version (unless the job names one): megatron main, fsdp 1.13, torchtitan main"),
            std::string::npos)
      << summary(p);
  // Positive control for the summary line: no defaults, no line.
  EXPECT_EQ(summary(resolve(parse_policy("", "p.toml"), "")).find("framework_version"), std::string::npos);
}

TEST(FrameworkVersionPolicy, TableHeaderFormIsTheSame) {
  const PolicyFile f = parse_policy("[defaults.framework_version]\ndeepspeed = \"megatron-deepspeed\"\n", "p.toml");
  EXPECT_EQ(resolve(f, "").framework_versions.at(Framework::DeepSpeed), "megatron-deepspeed");
}

TEST(FrameworkVersionPolicy, UnknownVersionListsTheSupportedOnes) {
  // The valid ids are the supported-version table's, default marked: built here from the table itself would
  // only restate the parser; these are the rows docs/frameworks.md "Framework versions" documents.
  EXPECT_EQ(parse_error("[defaults]\nframework_version = { megatron = \"core_v0.13\" }\n"),
            "p.toml:2:34: defaults.framework_version.megatron: got \"core_v0.13\", not a supported megatron version; "
            "valid: \"core_v0.15\" (paratune's default), \"core_v0.14\", \"main\"");
  EXPECT_EQ(parse_error("[partition.a]\nframework_version = { torchtitan = \"v0.1\" }\n"),
            "p.toml:2:36: partition.a.framework_version.torchtitan: got \"v0.1\", not a supported torchtitan "
            "version; valid: \"v0.2\" (paratune's default), \"main\"");
  // A version of another framework is not one of this framework's.
  EXPECT_EQ(parse_error("[defaults.framework_version]\nfsdp = \"core_v0.15\"\n"),
            "p.toml:2:8: defaults.framework_version.fsdp: got \"core_v0.15\", not a supported fsdp version; valid: "
            "\"2.x\" (paratune's default), \"1.13\"");
  EXPECT_EQ(parse_error("[defaults.framework_version]\nnemo = \"\"\n"),
            "p.toml:2:8: defaults.framework_version.nemo: got \"\", not a supported nemo version; valid: \"2.4\" "
            "(paratune's default)");
}

TEST(FrameworkVersionPolicy, WrongShapes) {
  EXPECT_EQ(parse_error("[defaults]\nframework_version = \"core_v0.14\"\n"),
            "p.toml:2:21: defaults.framework_version: expected a table, got a string; valid: a table of FRAMEWORK = "
            "\"VERSION\", e.g. framework_version = { megatron = \"core_v0.14\" } (frameworks: megatron, deepspeed, "
            "fsdp, torchtitan, nemo, automodel)");
  EXPECT_EQ(parse_error("[defaults.framework_version]\njax = \"0.4\"\n"),
            "p.toml:2:1: defaults.framework_version.jax: not a framework name; valid: megatron, deepspeed, fsdp, "
            "torchtitan, nemo, automodel");
  // The framework's own name, not an alias: "megatron-deepspeed" is a DeepSpeed version, not a key.
  EXPECT_EQ(parse_error("[defaults.framework_version]\nmegatron-deepspeed = \"0.16\"\n"),
            "p.toml:2:1: defaults.framework_version.megatron-deepspeed: not a framework name; valid: megatron, "
            "deepspeed, fsdp, torchtitan, nemo, automodel");
  EXPECT_EQ(parse_error("[defaults.framework_version]\nmegatron = 14\n"),
            "p.toml:2:12: defaults.framework_version.megatron: expected a string, got an integer; valid: "
            "\"core_v0.15\" (paratune's default), \"core_v0.14\", \"main\"");
}

TEST(FrameworkVersionPolicy, SiteDefaultWhenTheUserNamesNone) {
  const EffectivePolicy p = resolve(parse_policy(kTwoLayers, "p.toml"), "");
  advisor::Scenario s = scenario(Framework::Megatron);
  const auto ch = apply_to_scenario(p, s);
  EXPECT_TRUE(s.training.framework_version.empty());  // the user's field stays the user's
  EXPECT_EQ(advisor::version_for(s, Framework::Megatron).id, "core_v0.14");
  // A framework the search may pick instead gets the site's default for it, one the policy does not name paratune's.
  EXPECT_EQ(advisor::version_for(s, Framework::Torchtitan).id, "main");
  EXPECT_EQ(advisor::version_for(s, Framework::Fsdp).id, "2.x");
  ASSERT_EQ(ch.size(), 1u) << all(ch);
  EXPECT_EQ(describe(ch[0]), "megatron version core_v0.14 (paratune's default: core_v0.15) — site default [defaults] "
                             "framework_version.megatron = \"core_v0.14\"");
  advisor::validate(s);
  // The plan's arguments are for that version.
  const advisor::Plan plan = advisor::advise(s, search_limits(p));
  EXPECT_EQ(advisor::framework_args(s, plan).version, "core_v0.14");
}

TEST(FrameworkVersionPolicy, TheUsersVersionWins) {
  const EffectivePolicy p = resolve(parse_policy(kTwoLayers, "p.toml"), "");
  advisor::Scenario s = scenario(Framework::Megatron);
  s.training.framework_version = "main";  // SPEC framework_version=main or [training] framework_version
  EXPECT_TRUE(apply_to_scenario(p, s).empty());
  EXPECT_EQ(advisor::version_for(s, Framework::Megatron).id, "main");
  // Positive control: the same policy does set the version when the user names none (previous test), and a site
  // default equal to paratune's own default is no change worth reporting.
  advisor::Scenario t = scenario(Framework::Torchtitan);
  const EffectivePolicy q = resolve(parse_policy("[defaults]\nframework_version = { torchtitan = \"v0.2\" }\n", "p.toml"), "");
  EXPECT_TRUE(apply_to_scenario(q, t).empty());
  EXPECT_EQ(advisor::version_for(t, Framework::Torchtitan).id, "v0.2");
}

TEST(FrameworkVersionPolicy, VersionOfAReplacedFrameworkIsDropped) {
  const EffectivePolicy p = resolve(parse_policy(R"([defaults]
framework_version = { fsdp = "1.13" }
[defaults.limits]
frameworks = ["fsdp"]
)",
                                                 "p.toml"),
                                    "");
  advisor::Scenario s = scenario(Framework::Megatron);
  s.training.framework_version = "core_v0.14";
  const auto ch = apply_to_scenario(p, s);
  EXPECT_EQ(s.training.framework, Framework::Fsdp);
  EXPECT_TRUE(s.training.framework_version.empty());
  EXPECT_EQ(advisor::version_for(s, Framework::Fsdp).id, "1.13");
  EXPECT_NE(all(ch).find("framework_version core_v0.14 dropped — it is a megatron version, and [defaults] "
                         "limits.frameworks replaced the framework"),
            std::string::npos)
      << all(ch);
  EXPECT_NE(all(ch).find("fsdp version 1.13 (paratune's default: 2.x)"), std::string::npos) << all(ch);
  advisor::validate(s);  // without the drop, core_v0.14 would be refused as an fsdp version
}

TEST(FrameworkVersionPolicy, SiteVersionRefusesWhatItCannotRun) {
  // FSDP 1.13 has no HYBRID_SHARD: the site default makes the search skip such layouts, as the user's would.
  const EffectivePolicy p = resolve(parse_policy("[defaults]\nframework_version = { fsdp = \"1.13\" }\n", "p.toml"), "");
  advisor::Scenario s = scenario(Framework::Fsdp);
  s.cluster.nodes = 4;
  apply_to_scenario(p, s);
  advisor::Layout hybrid;
  hybrid.dp = 32;
  hybrid.zero_stage = 3;
  hybrid.shard_group = 8;
  EXPECT_NE(advisor::version_problem(s, hybrid, Framework::Fsdp).find("fsdp 1.13: ShardingStrategy has FULL_SHARD"),
            std::string::npos);
  // Positive control: paratune's default (2.x) runs it.
  advisor::Scenario plain = scenario(Framework::Fsdp);
  plain.cluster.nodes = 4;
  EXPECT_EQ(advisor::version_problem(plain, hybrid, Framework::Fsdp), "");
}

}  // namespace
}  // namespace paratune::policies
