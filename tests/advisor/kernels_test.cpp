// Optional kernels (framework_kernels.h): a site that says DeepEP, HybridEP, Transformer Engine or FlashAttention-3
// is not installed never gets a plan that uses it, the site's caps on expert parallelism and dispatchers hold, and
// a plan says which optional kernels it needs (notes, framework notes). Flags: tests/contracts/megatron--*.json.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "dgx_h100.h"
#include "paratune/advisor/advisor.h"
#include "paratune/advisor/framework_args.h"
#include "paratune/advisor/framework_kernels.h"
#include "paratune/advisor/scenario_toml.h"

using namespace paratune::advisor;

namespace {

Scenario h100(const char* model, int nodes, Framework f = Framework::Megatron, const std::string& version = "") {
  Scenario s = test_scenarios::on_dgx_h100(model, nodes, 1024);
  s.training.framework = f;
  s.training.framework_version = version;
  return s;
}

bool mentions(const std::vector<std::string>& notes, const std::string& what) {
  return std::any_of(notes.begin(), notes.end(), [&](const std::string& n) { return n.find(what) != std::string::npos; });
}

bool has_line(const std::string& file, const std::string& line) {
  return ("\n" + file).find("\n" + line + "\n") != std::string::npos;
}

}  // namespace

// The case: a fine-grained MoE (Qwen3-30B-A3B, 128 experts, EP across nodes) plans the flex dispatcher
// (DeepEP) where nothing is said; a site without DeepEP gets another.
TEST(Kernels, FlexIsNotPickedWhereTheSiteLacksDeepEP) {
  Scenario s = h100("qwen3-30b-a3b", 8);
  const Plan open = advise(s);
  ASSERT_EQ(open.layout.dispatcher, Dispatcher::Flex) << "positive control: flex wins where nothing is said";
  EXPECT_TRUE(mentions(open.notes, "needs deepep")) << "the plan says it needs DeepEP";
  EXPECT_TRUE(mentions(framework_args(s, open).notes, "needs deepep"));
  EXPECT_TRUE(has_line(framework_args(s, open).files[0].content, "--moe-enable-deepep"));

  s.cluster.kernels = std::vector<Kernel>{Kernel::TransformerEngine};
  const Plan site = advise(s);
  EXPECT_NE(site.layout.dispatcher, Dispatcher::Flex);
  EXPECT_FALSE(mentions(site.notes, "needs deepep"));
  EXPECT_EQ(framework_args(s, site).files[0].content.find("deepep"), std::string::npos);
  for (const auto& a : site.alternatives) EXPECT_NE(a.layout.dispatcher, Dispatcher::Flex);
  Layout flex = open.layout;
  EXPECT_NE(layout_problem(s, flex, Framework::Megatron).find("DeepEP"), std::string::npos) << "predict refuses it";
}

// Megatron-LM main names the backend: HybridEP where only it is installed; 0.15 has DeepEP alone, so no flex.
TEST(Kernels, MainTakesTheBackendTheSiteHas) {
  Scenario s = h100("mixtral-8x22b", 8, Framework::Megatron, "main");
  s.cluster.kernels = std::vector<Kernel>{Kernel::HybridEP, Kernel::TransformerEngine};
  ASSERT_EQ(flex_backend(s, Framework::Megatron), Kernel::HybridEP);
  Plan p = advise(s);
  ASSERT_GT(p.layout.ep, 1);
  p.layout.dispatcher = Dispatcher::Flex;
  EXPECT_EQ(layout_problem(s, p.layout, Framework::Megatron), "");
  EXPECT_TRUE(has_line(framework_args(s, p).files[0].content, "--moe-flex-dispatcher-backend=hybridep"));
  s.training.framework_version = "core_v0.15";
  EXPECT_FALSE(flex_backend(s, Framework::Megatron)) << "--moe-enable-deepep is DeepEP only";
  EXPECT_NE(layout_problem(s, p.layout, Framework::Megatron).find("DeepEP"), std::string::npos);
}

TEST(Kernels, SiteCapsOnExpertParallelismAndDispatchers) {
  const Scenario s = h100("mixtral-8x22b", 8);
  SearchLimits lim;
  lim.max_ep = 4;
  lim.dispatchers = {Dispatcher::AllToAll};
  const Plan p = advise(s, lim);
  EXPECT_LE(p.layout.ep, 4);
  EXPECT_EQ(p.layout.dispatcher, Dispatcher::AllToAll);
  for (const auto& a : p.alternatives) {
    EXPECT_LE(a.layout.ep, 4);
    EXPECT_EQ(a.layout.dispatcher, Dispatcher::AllToAll);
  }
  EXPECT_GT(advise(s).layout.ep, 4) << "positive control: without the cap the plan takes more expert parallelism";
}

// Megatron-Core's FP8, fused cuDNN attention and TP overlap are Transformer Engine's.
TEST(Kernels, WithoutTransformerEngine) {
  Scenario s = h100("llama3-70b", 4);
  const Plan with_te = advise(s);
  ASSERT_GT(with_te.layout.tp, 1);
  EXPECT_TRUE(has_line(framework_args(s, with_te).files[0].content, "--tp-comm-overlap")) << "positive control";
  EXPECT_TRUE(mentions(with_te.notes, "needs te"));

  s.cluster.kernels = std::vector<Kernel>{Kernel::DeepEP};
  const auto changed = settle_kernel_defaults(s);
  EXPECT_EQ(changed.size(), 2u);
  EXPECT_EQ(s.training.tp_comm_overlap, false);
  EXPECT_EQ(s.training.attention, Attention::Flash2) << "FlashAttention-3 is not listed either";
  const Plan p = advise(s);
  const std::string args = framework_args(s, p).files[0].content;
  EXPECT_FALSE(has_line(args, "--tp-comm-overlap"));
  EXPECT_TRUE(has_line(args, "--transformer-impl=local"));
  EXPECT_FALSE(mentions(p.notes, "needs te"));

  Scenario fp8 = s;
  fp8.training.precision = Precision::Fp8;
  try {
    validate(fp8);
    FAIL() << "FP8 without Transformer Engine was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("Transformer Engine"), std::string::npos) << e.what();
  }
}

TEST(Kernels, FlashAttention3) {
  Scenario s = h100("llama3-8b", 1, Framework::Torchtitan);
  s.training.attention = Attention::Flash3;
  EXPECT_TRUE(mentions(advise(s).notes, "needs flash3"));
  s.cluster.kernels = std::vector<Kernel>{};
  try {
    validate(s);
    FAIL() << "attention=flash3 without FlashAttention-3 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("FlashAttention-3"), std::string::npos) << e.what();
  }
}

TEST(Kernels, ScenarioFileSaysWhatIsInstalled) {
  const std::string base = "[model]\npreset = \"qwen3-30b-a3b\"\n[training]\nglobal_batch = 512\n[cluster]\n"
                           "gpu = \"h100-sxm5-80gb\"\nnodes = 2\ngpus_per_node = 8\nnic_count = 8\nnic_gbps = 400\n";
  const Scenario s = parse_scenario_toml(base + "kernels = [\"te\", \"flash3\"]\n", "s.toml");
  ASSERT_TRUE(s.cluster.kernels);
  EXPECT_TRUE(s.cluster.lacks(Kernel::DeepEP));
  EXPECT_FALSE(s.cluster.lacks(Kernel::FlashAttention3));
  EXPECT_FALSE(parse_scenario_toml(base, "s.toml").cluster.lacks(Kernel::DeepEP)) << "unset: nothing assumed missing";
  try {
    parse_scenario_toml(base + "kernels = [\"nccl\"]\n", "s.toml");
    FAIL() << "an unknown kernel was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("cluster.kernels"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("deepep, hybridep, te, flash3"), std::string::npos) << e.what();
  }
}

// What the job runs is what the plan is priced for: over the settings that decide TP communication overlap (the
// framework, a stated tp_comm_overlap, overlap_dp_comm, compile, Transformer Engine installed or not), the arguments
// switch it on (Megatron's --tp-comm-overlap, NeMo's note naming the recipe's callback, torchtitan's async TP) exactly
// where the prediction hides part of the TP traffic, and Megatron-Core's plans need Transformer Engine for it exactly
// then. torchtitan's async TP needs compiled layers (config/configs.py: "Async TP requires 'model' in
// --compile.components"), so without compile it is neither emitted nor priced.
TEST(Kernels, TpOverlapPricedExactlyWhereTheArgumentsRunIt) {
  Scenario base = h100("llama3-70b", 4);
  base.parallel.tp = 4;  // where every framework here but DeepSpeed (no TP of its own) runs TP
  base.parallel.sequence_parallel = true;
  const auto all_text = [](const FrameworkArgs& a) {
    std::string t = a.torchrun;
    for (const auto& f : a.files) t += "\n" + f.content;
    for (const auto& n : a.notes) t += "\n" + n;
    return t + "\n";
  };
  int on = 0, off = 0, torchtitan_eager_stated = 0;
  std::map<Framework, int> planned;
  for (Framework f : {Framework::Megatron, Framework::Nemo, Framework::Torchtitan, Framework::DeepSpeed,
                      Framework::Fsdp})
    for (std::optional<bool> stated : {std::optional<bool>(), std::optional<bool>(true), std::optional<bool>(false)})
      for (bool overlap_dp : {true, false})
        for (bool compile : {false, true})
          for (bool te : {true, false}) {
            Scenario s = base;
            s.training.framework = f;
            s.training.tp_comm_overlap = stated;
            s.training.overlap_dp_comm = overlap_dp;
            s.training.compile = compile;
            if (!te) s.cluster.kernels = std::vector<Kernel>{Kernel::DeepEP, Kernel::HybridEP};
            try {
              validate(s);
            } catch (const std::invalid_argument&) {
              if (f == Framework::Torchtitan && !compile && stated == true) ++torchtitan_eager_stated;
              continue;  // a combination the scenario check refuses, with its reason
            }
            Plan p;
            try {
              p = advise(s);
            } catch (const std::exception&) {
              continue;  // DeepSpeed: nothing with tp 4
            }
            EXPECT_EQ(p.layout.tp, 4);
            const std::string args = all_text(framework_args(s, p));
            const bool runs = f == Framework::Megatron   ? has_line(args, "--tp-comm-overlap")
                              : f == Framework::Nemo     ? args.find("MegatronCommOverlapCallback") != std::string::npos
                              : f == Framework::Torchtitan ? args.find("async_tensor_parallel = true") != std::string::npos
                                                           : false;
            Scenario without = s;
            without.training.tp_comm_overlap = false;
            const bool priced = predict(s, p.layout).breakdown.tp_comm < predict(without, p.layout).breakdown.tp_comm;
            const std::string where = std::string(to_string(f)) + " stated=" +
                                      (stated ? (*stated ? "yes" : "no") : "-") + " overlap_dp=" +
                                      std::to_string(overlap_dp) + " compile=" + std::to_string(compile) +
                                      " te=" + std::to_string(te);
            EXPECT_EQ(runs, priced) << where;
            const auto needs = kernels_needed(s, p.layout, f);
            const bool needs_te_for_tp = std::any_of(needs.begin(), needs.end(), [](const KernelNeed& n) {
              return n.kernel == Kernel::TransformerEngine && n.why.find("TP communication") != std::string::npos;
            });
            EXPECT_EQ(needs_te_for_tp, runs && (f == Framework::Megatron || f == Framework::Nemo)) << where;
            if (f == Framework::Torchtitan && !compile) {
              EXPECT_FALSE(priced) << where;
            }
            (runs ? on : off)++;
            ++planned[f];
          }
  EXPECT_GT(planned[Framework::Megatron], 0);
  EXPECT_GT(planned[Framework::Nemo], 0);
  EXPECT_GT(planned[Framework::Torchtitan], 0);
  EXPECT_GT(on, 5) << "positive control: some settings run the overlap";
  EXPECT_GT(off, 5);
  EXPECT_EQ(torchtitan_eager_stated, 4) << "a stated async TP without compile is refused (overlap_dp_comm, TE either way)";
}
