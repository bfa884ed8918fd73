// The site's optional kernels (facts.kernels) and expert-parallel limits (limits.max_ep, limits.dispatchers):
// parsed with exact messages, resolved per partition, applied to the user's settings and to the search, so that a
// site without DeepEP never gets a plan with the flex dispatcher.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "paratune/advisor/env.h"
#include "paratune/advisor/framework_args.h"
#include "paratune/advisor/model.h"
#include "paratune/policies/policy.h"

namespace paratune::policies {
namespace {

using advisor::Dispatcher;
using advisor::Kernel;

const char* kSite = R"([defaults.facts]
kernels = ["te", "flash3"]

[defaults.limits]
max_ep = 4

[partition.gb200.facts]
kernels = ["te", "deepep", "hybridep"]

[partition.gb200.limits]
dispatchers = ["alltoall", "flex"]
)";

std::string all(const std::vector<PolicyChange>& v) {
  std::string s;
  for (const auto& c : v) s += describe(c) + "\n";
  return s;
}

bool has_change(const std::vector<PolicyChange>& v, const std::string& text) {
  return std::any_of(v.begin(), v.end(), [&](const PolicyChange& c) { return describe(c) == text; });
}

advisor::Scenario mixtral(int nodes, const char* preset = "mixtral-8x22b") {
  advisor::Scenario s;
  s.model = advisor::model_preset(preset);
  s.training.global_batch = 1024;
  s.cluster.gpu = "h100-sxm5-80gb";
  s.cluster.nodes = nodes;
  s.cluster.gpus_per_node = 8;
  s.cluster.nvlink_domain = 8;
  s.cluster.nic_count = 8;
  s.cluster.nic_gbps = 400;
  return s;
}

// Llama 3 8B on 4 nodes whose probe named 8 InfiniBand ports each (mlx5_0..7, 400 Gb/s).
advisor::Scenario probed_infiniband() {
  advisor::Scenario s = mixtral(4, "llama3-8b");
  s.cluster.fabric = advisor::Fabric::InfiniBand;
  s.cluster.fabric_known = true;
  for (int i = 0; i < 8; ++i) {
    advisor::NicFacts n;
    n.name = "mlx5_" + std::to_string(i);
    n.gbps = 400;
    s.cluster.nics.push_back(n);
  }
  return s;
}

advisor::Layout data_parallel(int dp) {
  advisor::Layout l;
  l.dp = dp;
  l.zero_stage = 1;
  l.micro_batch = 1;
  return l;
}

std::string parse_error(const std::string& text) {
  try {
    parse_policy(text, "p.toml");
  } catch (const PolicyError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(Kernels, ParsedAndResolvedPerPartition) {
  const PolicyFile f = parse_policy(kSite, "p.toml");
  const EffectivePolicy d = resolve(f, "batch");
  ASSERT_TRUE(d.facts.kernels);
  EXPECT_EQ(*d.facts.kernels, (std::vector<Kernel>{Kernel::TransformerEngine, Kernel::FlashAttention3}));
  EXPECT_EQ(search_limits(d).max_ep, 4);
  EXPECT_TRUE(search_limits(d).dispatchers.empty());
  const EffectivePolicy g = resolve(f, "gb200");
  EXPECT_EQ(g.facts.kernels->size(), 3u);
  EXPECT_EQ(search_limits(g).dispatchers, (std::vector<Dispatcher>{Dispatcher::AllToAll, Dispatcher::Flex}));
  EXPECT_NE(summary(g).find("dispatchers [alltoall, flex]"), std::string::npos) << summary(g);
  EXPECT_NE(summary(g).find("kernels installed [te, deepep, hybridep]"), std::string::npos) << summary(g);
}

TEST(Kernels, ExactMessages) {
  EXPECT_EQ(parse_error("[defaults.facts]\nkernels = [\"nccl\"]\n"),
            "p.toml:2:12: defaults.facts.kernels[0]: got \"nccl\"; valid: deepep, hybridep, te, flash3");
  EXPECT_EQ(parse_error("[defaults.limits]\ndispatchers = []\n"),
            "p.toml:2:15: defaults.limits.dispatchers: empty list; valid: a non-empty list from alltoall, allgather, "
            "flex");
  EXPECT_EQ(parse_error("[defaults.limits]\nmax_ep = 0\n"), "p.toml:2:10: defaults.limits.max_ep: got 0; valid: 1..65536");
  EXPECT_EQ(parse_error("[defaults.facts]\nkernels = []\n"), "(no error)") << "[] = none of them installed";
}

// A site without DeepEP: the user's dispatcher=flex and ep beyond the cap are removed, and the plan has no flex.
TEST(Kernels, SiteWithoutDeepEPNeverGetsTheFlexDispatcher) {
  const EffectivePolicy p = resolve(parse_policy(kSite, "p.toml"), "batch");
  advisor::Scenario s = mixtral(8, "qwen3-30b-a3b");  // 128 fine-grained experts: flex wins across nodes
  ASSERT_EQ(advisor::advise(s).layout.dispatcher, Dispatcher::Flex) << "positive control: flex wins without a policy";
  s.parallel.dispatcher = Dispatcher::Flex;
  s.parallel.ep = 8;
  const auto ch = apply_to_scenario(p, s);
  EXPECT_FALSE(s.parallel.dispatcher.has_value()) << all(ch);
  EXPECT_FALSE(s.parallel.ep.has_value()) << all(ch);
  EXPECT_TRUE(has_change(ch, "EP capped at 4 — [defaults] limits.max_ep = 4 (user asked ep=8; the search picks ep "
                             "<= 4)"))
      << all(ch);
  EXPECT_TRUE(has_change(ch, "dispatcher flex not available (user asked dispatcher=flex) — [defaults] facts.kernels "
                             "lists no DeepEP/HybridEP backend the framework version can use; the search picks "
                             "alltoall or allgather"))
      << all(ch);
  advisor::validate(s);
  const advisor::Plan plan = advisor::advise(s, search_limits(p));
  EXPECT_NE(plan.layout.dispatcher, Dispatcher::Flex);
  EXPECT_LE(plan.layout.ep, 4);
  EXPECT_EQ(advisor::framework_args(s, plan).files[0].content.find("deepep"), std::string::npos);
}

TEST(Kernels, PartitionWithDeepEPKeepsFlexAndTheNotesSaySo) {
  const EffectivePolicy p = resolve(parse_policy(kSite, "p.toml"), "gb200");
  advisor::Scenario s = mixtral(8);
  s.parallel.dispatcher = Dispatcher::Flex;
  apply_to_scenario(p, s);
  ASSERT_EQ(s.parallel.dispatcher, Dispatcher::Flex);
  const advisor::Plan plan = advisor::advise(s, search_limits(p));
  EXPECT_EQ(plan.layout.dispatcher, Dispatcher::Flex);
  EXPECT_TRUE(std::any_of(plan.notes.begin(), plan.notes.end(), [](const std::string& n) {
    return n.find("needs deepep for the flex token dispatcher (--moe-enable-deepep) (installed") != std::string::npos;
  })) << plan.notes.back();
}

// No Transformer Engine: the user's TE-only settings are removed and the defaults settled, each change said.
TEST(Kernels, WithoutTransformerEngine) {
  const EffectivePolicy p = resolve(parse_policy("[defaults.facts]\nkernels = [\"deepep\"]\n", "p.toml"), "");
  advisor::Scenario s = mixtral(8);
  s.training.tp_comm_overlap = true;
  s.training.attention = advisor::Attention::Flash3;
  const auto ch = apply_to_scenario(p, s);
  EXPECT_EQ(s.training.tp_comm_overlap, false) << all(ch);
  EXPECT_EQ(s.training.attention, advisor::Attention::Flash2) << all(ch);
  EXPECT_TRUE(has_change(ch, "attention flash3 not used (user asked attention=flash3) — [defaults] facts.kernels = "
                             "[deepep]: FlashAttention-3 not installed"))
      << all(ch);
  EXPECT_TRUE(has_change(ch, "TP communication overlap off (user asked tp_comm_overlap=yes) — [defaults] facts.kernels = "
                             "[deepep]: it is Transformer Engine's"))
      << all(ch);
  advisor::validate(s);
  s.training.precision = advisor::Precision::Fp8;
  EXPECT_THROW(advisor::validate(s), std::invalid_argument) << "FP8 in Megatron-Core is Transformer Engine's";
}


// Transformer Engine's version (facts.te_version): checked as MAJOR.MINOR and set into the scenario, where it prices
// a stated fused loss (TE before 2.18 takes the gradient in place) but never turns the kernel on by itself; a
// user's fused loss on a TE before the kernel existed (2.2) goes back to the framework's own, with a change.
TEST(Kernels, TeVersionIsAFactThatPricesAStatedFusedLoss) {
  EXPECT_EQ(parse_error("[defaults.facts]\nte_version = \"2.x\"\n"),
            "p.toml:2:14: defaults.facts.te_version: got \"2.x\"; valid: a Transformer Engine version MAJOR.MINOR, "
            "e.g. \"2.14\"");
  const EffectivePolicy p = resolve(parse_policy("[defaults.facts]\nte_version = \"2.14\"\n", "p.toml"), "batch");
  ASSERT_TRUE(p.facts.te_version);
  EXPECT_NE(summary(p).find("te_version 2.14"), std::string::npos) << summary(p);
  advisor::Scenario s = mixtral(8, "llama3-70b");
  s.training.framework = advisor::Framework::Megatron;
  const auto ch = apply_to_scenario(p, s);
  EXPECT_EQ(s.cluster.te_version, "2.14");
  EXPECT_TRUE(has_change(ch, "Transformer Engine 2.14 — [defaults] facts.te_version")) << all(ch);
  const advisor::Plan plan = advisor::advise(s, search_limits(p));
  EXPECT_EQ(advisor::framework_args(s, plan).files[0].content.find("--cross-entropy"), std::string::npos)
      << "the fact alone plans no fused loss";
  s.training.cross_entropy_fusion = advisor::LossFusion::Te;
  const advisor::Plan fused = advisor::advise(s, search_limits(p));
  EXPECT_NE(advisor::framework_args(s, fused).files[0].content.find("--cross-entropy-fusion-impl=te"), std::string::npos);

  const EffectivePolicy old = resolve(parse_policy("[defaults.facts]\nte_version = \"2.1\"\n", "p.toml"), "batch");
  advisor::Scenario t = mixtral(8, "llama3-70b");
  t.training.framework = advisor::Framework::Megatron;
  t.training.cross_entropy_fusion = advisor::LossFusion::Te;
  const auto dropped = apply_to_scenario(old, t);
  EXPECT_FALSE(t.training.cross_entropy_fusion.has_value()) << all(dropped);
  EXPECT_TRUE(has_change(dropped, "Transformer Engine's fused loss not used (user asked cross_entropy_fusion=te) — "
                                  "[defaults] facts.te_version = \"2.1\": parallel_cross_entropy is in TE 2.2 and later"))
      << all(dropped);
  advisor::validate(t);
}


// A TE version beside a kernel list without "te" is a contradiction in the site's facts, refused where it arises:
// in [defaults] itself, or in a partition that sets one of the two over the other from [defaults].
TEST(Kernels, TeVersionWithoutTeInTheKernelListIsRefused) {
  EXPECT_EQ(parse_error("[defaults.facts]\nkernels = [\"deepep\"]\nte_version = \"2.14\"\n"),
            "p.toml:3:14: defaults.facts.te_version: says Transformer Engine 2.14 is installed, but "
            "defaults.facts.kernels (at 2:11) lists no \"te\"; valid: add \"te\" to facts.kernels, or remove "
            "te_version where Transformer Engine is not installed");
  EXPECT_EQ(parse_error("[defaults.facts]\nkernels = []\n[partition.gpu.facts]\nte_version = \"2.8\"\n"),
            "p.toml:4:14: partition.gpu.facts.te_version: says Transformer Engine 2.8 is installed, but "
            "defaults.facts.kernels (at 2:11) lists no \"te\"; valid: add \"te\" to facts.kernels, or remove "
            "te_version where Transformer Engine is not installed");
  EXPECT_EQ(parse_error("[defaults.facts]\nte_version = \"2.8\"\n[partition.gpu.facts]\nkernels = [\"flash3\"]\n"),
            "p.toml:4:11: partition.gpu.facts.kernels: lists no \"te\", but defaults.facts.te_version (at 2:14) says "
            "Transformer Engine 2.8 is installed; valid: add \"te\" to facts.kernels, or remove te_version where "
            "Transformer Engine is not installed");
  // Controls: TE listed, or either fact alone, or a partition that lists TE again over [defaults]' list.
  EXPECT_EQ(parse_error("[defaults.facts]\nkernels = [\"te\", \"deepep\"]\nte_version = \"2.14\"\n"), "(no error)");
  EXPECT_EQ(parse_error("[defaults.facts]\nkernels = [\"deepep\"]\n"), "(no error)");
  EXPECT_EQ(parse_error("[defaults.facts]\nte_version = \"2.14\"\n"), "(no error)");
  EXPECT_EQ(parse_error("[defaults.facts]\nkernels = []\n[partition.gpu.facts]\nkernels = [\"te\"]\n"
                        "te_version = \"2.8\"\n"),
            "(no error)");
}

// A CUDA_DEVICE_MAX_CONNECTIONS the policy forces or forbids reaches the search (advisor/env.h
// cuda_connections_problem), per partition; a default does not (a job's own value may replace it).
TEST(Kernels, TheForcedCudaDeviceMaxConnectionsReachesTheSearch) {
  const PolicyFile f = parse_policy(
      "[defaults.env]\nforce = { CUDA_DEVICE_MAX_CONNECTIONS = \"1\" }\n"
      "[partition.b.env]\nforbid = [\"CUDA_DEVICE_MAX_CONNECTIONS\"]\n"
      "[partition.c.env]\ndefault = { CUDA_DEVICE_MAX_CONNECTIONS = \"8\" }\n",
      "p.toml");
  EXPECT_EQ(search_limits(resolve(f, "a")).cuda_device_max_connections, std::optional<std::string>("1"));
  EXPECT_EQ(search_limits(resolve(f, "b")).cuda_device_max_connections, std::optional<std::string>(""));
  const PolicyFile d = parse_policy("[defaults.env]\ndefault = { CUDA_DEVICE_MAX_CONNECTIONS = \"8\" }\n", "p.toml");
  EXPECT_FALSE(search_limits(resolve(d, "a")).cuda_device_max_connections) << "a default is not imposed";
}

// facts.nic_count replaces the probe's NIC list too, which the bandwidth and NCCL_IB_HCA come from: fewer NICs than
// probed keep the first ones (a 1-NIC fact used to change only the count, and the plan kept 8 NICs' bandwidth), more
// drop the list (no names for the others). Control: without the fact the list is the probe's.
TEST(Kernels, TheNicCountFactReplacesTheProbesList) {
  advisor::Scenario probed = probed_infiniband();
  const advisor::Layout l = data_parallel(32);
  probed.training.overlap_dp_comm = false;  // the gradient all-reduce exposed: the network shows in the step
  const double eight = advisor::Evaluator(probed, advisor::Framework::Megatron).evaluate(l).step_s;
  advisor::Scenario one = probed;
  apply_to_scenario(resolve(parse_policy("[defaults.facts]\nnic_count = 1\n", "p.toml"), ""), one);
  ASSERT_EQ(one.cluster.nics.size(), 1u);
  EXPECT_EQ(one.cluster.nics[0].name, "mlx5_0");
  EXPECT_GT(advisor::Evaluator(one, advisor::Framework::Megatron).evaluate(l).step_s, eight);
  advisor::Scenario sixteen = probed;
  apply_to_scenario(resolve(parse_policy("[defaults.facts]\nnic_count = 16\n", "p.toml"), ""), sixteen);
  EXPECT_TRUE(sixteen.cluster.nics.empty());
  EXPECT_EQ(sixteen.cluster.nic_count, 16);
  advisor::Scenario same = probed;
  apply_to_scenario(resolve(parse_policy("[defaults.facts]\nnic_count = 8\n", "p.toml"), ""), same);
  EXPECT_EQ(same.cluster.nics.size(), 8u) << "control";
}

// A user's setting that implies a choice the limits exclude goes with it, with a change saying why (the plan then
// found "nothing fits" blaming the caps): etp above max_tp (expert TP is 1 or the TP degree), recompute modules
// where selective recompute is not allowed, offloaded layers where no-recompute is not, a pipeline schedule under
// max_pp = 1. Control: within the limits they stay.
TEST(Kernels, SettingsThatImplyAnExcludedChoiceGoWithIt) {
  advisor::Scenario s = mixtral(2, "mixtral-8x7b");
  s.parallel.etp = 8;
  s.parallel.recompute_modules = 1u;
  s.parallel.offload_layers = 2;
  s.parallel.pipeline_schedule = advisor::PipelineSchedule::Interleaved;
  advisor::Scenario limited = s;
  const auto ch = apply_to_scenario(
      resolve(parse_policy("[defaults.limits]\nmax_tp = 2\nmax_pp = 1\nrecompute = [\"full\"]\n", "p.toml"), ""),
      limited);
  EXPECT_FALSE(limited.parallel.etp);
  EXPECT_FALSE(limited.parallel.recompute_modules);
  EXPECT_FALSE(limited.parallel.offload_layers);
  EXPECT_FALSE(limited.parallel.pipeline_schedule);
  EXPECT_TRUE(has_change(ch, "expert TP no longer fixed (user asked etp=8) — [defaults] limits.max_tp = 2: expert TP "
                             "is 1 or the TP degree"));
  advisor::Scenario free = s;
  apply_to_scenario(resolve(parse_policy("[defaults.limits]\nmax_tp = 8\n", "p.toml"), ""), free);
  EXPECT_EQ(free.parallel.etp, 8) << "control";
  EXPECT_TRUE(free.parallel.recompute_modules && free.parallel.offload_layers && free.parallel.pipeline_schedule);
}

// Rail alignment is the switch cabling, which no probe sees: facts.rail_aligned states it, and a multi-node plan on
// InfiniBand then keeps each ring on its rail (NCCL_CROSS_NIC=0, docs/operations.md "rails stated"), which the
// plugin's jobs could not get before (the probe's cluster never knew it). Control: without the fact, nothing.
TEST(Kernels, TheRailFactLetsThePlanKeepRingsOnTheirRails) {
  const advisor::Scenario s = probed_infiniband();
  const advisor::Layout l = data_parallel(32);
  const auto cross_nic = [&](const advisor::Scenario& x) {
    for (const auto& e : advisor::synthesize_env(x, advisor::Framework::Megatron, l, 40))
      if (e.name == "NCCL_CROSS_NIC") return e.value;
    return std::string("<unset>");
  };
  EXPECT_EQ(cross_nic(s), "<unset>") << "control: not stated";
  advisor::Scenario stated = s;
  const auto ch = apply_to_scenario(resolve(parse_policy("[defaults.facts]\nrail_aligned = true\n", "p.toml"), ""), stated);
  EXPECT_TRUE(has_change(ch, "fabric rail-optimised (probe: not known) — [defaults] facts.rail_aligned"));
  EXPECT_EQ(cross_nic(stated), "0");
}

}  // namespace paratune::policies
