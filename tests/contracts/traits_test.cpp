// The framework-traits table against the pinned sources: every choice the table lets the search make for a
// framework is an option that framework's source defines (tests/contracts/*.json), in every supported version
// unless that version's own check (version_problem) refuses it. A trait the table denies is not checked: paratune
// may plan less than a framework can.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "../advisor/dgx_h100.h"
#include "contract_json.h"
#include "paratune/advisor/advisor.h"
#include "paratune/advisor/framework_traits.h"
#include "paratune/advisor/framework_versions.h"

using namespace paratune::advisor;
using nlohmann::json;
using paratune::contracts::contract;

namespace {

// The option names a version's contract defines, in one spelling per framework kind: Megatron's argparse flags,
// NeMo's and AutoModel's config keys, torchtitan's section.option names.
std::set<std::string> options(const json& c) {
  std::set<std::string> out;
  if (c.contains("arguments"))
    for (const auto& [k, v] : c["arguments"].items()) out.insert(k);
  if (c.contains("config_keys"))
    for (const auto& [k, v] : c["config_keys"].items()) out.insert(k);
  if (c.contains("cli_options"))
    for (const auto& k : c["cli_options"]) out.insert(k.get<std::string>());
  if (c.contains("sections"))
    for (const auto& [section, fields] : c["sections"].items())
      for (const auto& [k, v] : fields.items()) out.insert(section + "." + k);
  return out;
}

// What backs each trait in each framework's source: the option that sets it.
struct Backing {
  const char* what;
  std::function<bool(const FrameworkTraits&)> claimed;
  std::function<bool(Framework, const json&, const std::set<std::string>&)> present;
};

bool any_of(const std::set<std::string>& o, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (o.count(n)) return true;
  return false;
}

const std::vector<Backing>& backings() {
  using F = Framework;
  static const std::vector<Backing> b = {
      {"context parallelism", [](const FrameworkTraits& t) { return t.context_parallel; },
       [](F, const json&, const std::set<std::string>& o) {
         return any_of(o, {"--context-parallel-size", "trainer.strategy.context_parallel_size",
                           "parallelism.context_parallel_degree", "distributed.cp_size"});
       }},
      {"virtual pipeline stages", [](const FrameworkTraits& t) { return t.interleaving; },
       [](F, const json&, const std::set<std::string>& o) {
         return any_of(o, {"--num-layers-per-virtual-pipeline-stage",
                           "trainer.strategy.virtual_pipeline_model_parallel_size",
                           "parallelism.pipeline_parallel_schedule", "distributed.pipeline.layers_per_stage"});
       }},
      {"expert parallelism", [](const FrameworkTraits& t) { return t.expert_parallel; },
       [](F, const json&, const std::set<std::string>& o) {
         return any_of(o, {"--expert-model-parallel-size", "trainer.strategy.expert_model_parallel_size",
                           "parallelism.expert_parallel_degree", "distributed.ep_size"});
       }},
      {"an explicit stage layout", [](const FrameworkTraits& t) { return t.stage_layout; },
       [](F, const json&, const std::set<std::string>& o) {
         return any_of(o, {"--pipeline-model-parallel-layout", "trainer.strategy.pipeline_model_parallel_layout"});
       }},
      {"hybrid sharding", [](const FrameworkTraits& t) { return t.hybrid_shard; },
       [](F, const json& c, const std::set<std::string>& o) {
         if (any_of(o, {"parallelism.data_parallel_replicate_degree", "distributed.dp_replicate_size"})) return true;
         if (c.contains("fully_shard")) return c["fully_shard"]["params"].contains("mesh");  // FSDP2: a 2-D mesh
         if (c.contains("FullyShardedDataParallel"))
           for (const auto& s : c["FullyShardedDataParallel"]["ShardingStrategy"])
             if (s == "HYBRID_SHARD") return true;
         return false;
       }},
      {"ZeRO-1 sharding scope", [](const FrameworkTraits& t) { return t.zero1_scope; },
       [](F, const json&, const std::set<std::string>& o) {
         // Megatron-Core's distributed-optimizer instances; NeMo's MegatronStrategy field (not only ddp.*: the
         // strategy passes it to the parallel state too).
         return any_of(o, {"--num-distributed-optimizer-instances", "trainer.strategy.num_distributed_optimizer_instances"});
       }},
      {"the flex dispatcher",
       [](const FrameworkTraits& t) { return t.expert_parallel && runs_dispatcher(t.framework, Dispatcher::Flex); },
       [](F f, const json& c, const std::set<std::string>& o) {
         if (c.contains("arguments")) {
           for (const auto& v : c["arguments"]["--moe-token-dispatcher-type"]["choices"])
             if (v == "flex") return true;
           return false;
         }
         if (f == F::Automodel) {  // model.backend.dispatcher: DeepEP or HybridEP
           for (const auto& v : c["config_keys"]["model.backend.dispatcher"]["choices"])
             if (v == "deepep" || v == "hybridep") return true;
           return false;
         }
         if (c.contains("config_keys")) {  // NeMo: Megatron-Core's dispatcher, at the Megatron-Core ref it pins
           const std::string ref = c["megatron_core"]["ref"];  // e.g. core_v0.14.0
           const json mc = contract("megatron--" + ref.substr(0, ref.rfind('.')));
           for (const auto& v : mc["arguments"]["--moe-token-dispatcher-type"]["choices"])
             if (v == "flex") return o.count("model.config.moe_token_dispatcher_type") > 0;
           return false;
         }
         if (f == F::Torchtitan && c.contains("sections") &&
             c["sections"]["parallelism"].contains("expert_parallel_comm_backend"))
           for (const auto& v : c["sections"]["parallelism"]["expert_parallel_comm_backend"]["choices"])
             if (v == "deepep") return true;
         return false;
       }},
      // GPipe and the zero-bubble schedules: torchtitan takes any torch.distributed.pipelining schedule by name
      // (a free string; the names are PyTorch's get_schedule_class keys, which no contract here extracts).
      {"pipeline schedules beyond 1F1B",
       [](const FrameworkTraits& t) {
         return runs_schedule(t.framework, PipelineSchedule::GPipe) ||
                runs_schedule(t.framework, PipelineSchedule::ZeroBubble) ||
                runs_schedule(t.framework, PipelineSchedule::Zbv);
       },
       [](F, const json&, const std::set<std::string>& o) {
         return any_of(o, {"parallelism.pipeline_parallel_schedule", "distributed.pipeline.pp_schedule"});
       }},
  };
  return b;
}

// A version that refuses the trait's layouts itself (version_problem) need not back it: FSDP 1.13's
// ShardingStrategy has no HYBRID_SHARD; torchtitan main sets its dispatcher in the model's config function.
bool version_refuses(const FrameworkVersion& v, const std::string& what) {
  if (v.framework == Framework::Fsdp && v.id == "1.13" && what == "hybrid sharding") return true;
  if (v.framework == Framework::Torchtitan && v.id == "main" && what == "the flex dispatcher") return true;
  return false;
}

}  // namespace

TEST(FrameworkTraits, EveryFrameworkHasARow) {
  for (Framework f :
       {Framework::Megatron, Framework::Nemo, Framework::DeepSpeed, Framework::Fsdp, Framework::Torchtitan,
        Framework::Automodel})
    EXPECT_EQ(traits(f).framework, f) << to_string(f);
}

TEST(FrameworkTraits, WhatTheTableAllowsTheSourceDefines) {
  int checked = 0;
  for (const FrameworkVersion& v : framework_versions()) {
    const json c = contract(v.contract);
    const std::set<std::string> o = options(c);
    for (const Backing& b : backings()) {
      if (!b.claimed(traits(v.framework)) || version_refuses(v, b.what)) continue;
      EXPECT_TRUE(b.present(v.framework, c, o)) << to_string(v.framework) << " " << v.id << ": the table plans "
                                                << b.what << ", which " << v.contract << ".json does not define";
      ++checked;
    }
  }
  EXPECT_GE(checked, 20);
}

TEST(FrameworkTraits, TheChecksBite) {
  // Controls: DeepSpeed's contract defines none of the options behind context parallelism or a stage layout, and
  // FSDP 1.13's sharding strategies lack HYBRID_SHARD, so a table claiming them would fail above.
  const json ds = contract("deepspeed--0.16"), fsdp113 = contract("pytorch--1.13");
  EXPECT_FALSE(backings()[0].present(Framework::DeepSpeed, ds, options(ds)));
  EXPECT_FALSE(backings()[3].present(Framework::DeepSpeed, ds, options(ds)));
  EXPECT_FALSE(backings()[4].present(Framework::Fsdp, fsdp113, options(fsdp113)));
  // AutoModel's keys hold no per-stage layout (module_fqns_per_model_part names model modules, not planned).
  const json am = contract("automodel--v0.5.0");
  EXPECT_FALSE(backings()[3].present(Framework::Automodel, am, options(am)));
  EXPECT_TRUE(backings()[2].present(Framework::Automodel, am, options(am)));
  const json fsdp2 = contract("pytorch--2.x");
  EXPECT_TRUE(backings()[4].present(Framework::Fsdp, fsdp2, options(fsdp2)));
  // Megatron-DeepSpeed's fork has no distributed-optimizer instances; Megatron-LM core_v0.14 and NeMo 2.4 have.
  const json mds = contract("megatron-deepspeed--main"), m14 = contract("megatron--core_v0.14"),
             nemo = contract("nemo--2.4");
  EXPECT_FALSE(backings()[5].present(Framework::DeepSpeed, mds, options(mds)));
  EXPECT_TRUE(backings()[5].present(Framework::Megatron, m14, options(m14)));
  EXPECT_TRUE(backings()[5].present(Framework::Nemo, nemo, options(nemo)));
  EXPECT_FALSE(runs_shard_scope(Framework::DeepSpeed, 1));
  EXPECT_TRUE(runs_shard_scope(Framework::Megatron, 1));
  EXPECT_FALSE(runs_shard_scope(Framework::Megatron, 3)) << "Megatron-FSDP's HSDP is not planned";
  // The schedules beyond 1F1B: torchtitan's schedule option; Megatron's argparse has none by that name.
  const json tt = contract("torchtitan--v0.2");
  EXPECT_TRUE(backings().back().present(Framework::Torchtitan, tt, options(tt)));
  EXPECT_FALSE(backings().back().present(Framework::Megatron, m14, options(m14)));
  EXPECT_FALSE(runs_schedule(Framework::Megatron, PipelineSchedule::ZeroBubble));
  EXPECT_TRUE(runs_schedule(Framework::Torchtitan, PipelineSchedule::Zbv));
}

TEST(FrameworkTraits, ZeroStagesAndRecompute) {
  // As the adapters write them: Megatron's distributed optimizer (1) and Megatron-FSDP (3, no pipelining);
  // DeepSpeed's pipeline engine runs ZeRO 0/1; FSDP has no selective checkpointing.
  EXPECT_TRUE(runs_zero(Framework::Megatron, 1, 4));
  EXPECT_TRUE(runs_zero(Framework::Megatron, 3, 1));
  EXPECT_FALSE(runs_zero(Framework::Megatron, 3, 4));
  EXPECT_FALSE(runs_zero(Framework::Megatron, 2, 1));
  EXPECT_TRUE(runs_zero(Framework::DeepSpeed, 2, 1));
  EXPECT_FALSE(runs_zero(Framework::DeepSpeed, 2, 2));
  EXPECT_FALSE(runs_recompute(Framework::Fsdp, Recompute::Selective));
  EXPECT_TRUE(runs_recompute(Framework::Fsdp, Recompute::Full));
  EXPECT_FALSE(runs_dispatcher(Framework::Torchtitan, Dispatcher::AllGather));
  EXPECT_TRUE(runs_dispatcher(Framework::Torchtitan, Dispatcher::Flex));
  // AutoModel: ddp (no pipelining) or FSDP2 resharding or not; its "torch" dispatcher gathers, no all-to-all.
  EXPECT_TRUE(runs_zero(Framework::Automodel, 0, 1));
  EXPECT_FALSE(runs_zero(Framework::Automodel, 0, 2));
  EXPECT_FALSE(runs_zero(Framework::Automodel, 1, 1));
  EXPECT_TRUE(runs_zero(Framework::Automodel, 2, 4));
  EXPECT_TRUE(runs_dispatcher(Framework::Automodel, Dispatcher::AllGather));
  EXPECT_FALSE(runs_dispatcher(Framework::Automodel, Dispatcher::AllToAll));
}

TEST(FrameworkTraits, FrameworksWithoutExpertParallelismStillPlanMoeModels) {
  // DeepSpeed and FSDP replicate the experts (no expert parallelism, no dispatcher): a MoE model is planned with
  // ep 1 on them, as on Megatron (control) where expert parallelism is one of the choices.
  for (Framework f : {Framework::DeepSpeed, Framework::Fsdp, Framework::Megatron}) {
    Scenario s = test_scenarios::on_dgx_h100("mixtral-8x7b", 4, 256);
    s.training.framework = f;
    const Plan p = advise(s);
    EXPECT_EQ(p.framework, f);
    if (f != Framework::Megatron) {
      EXPECT_EQ(p.layout.ep, 1) << to_string(f);
    }
  }
}
