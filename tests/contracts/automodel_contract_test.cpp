// NeMo AutoModel 0.5.0: every override paratune writes (automodel.args, --dotted.key=value) is a key the pinned
// recipe reads, with a value it accepts, for the strategy the file selects; and every launch-failing check of the
// pinned source (tests/contracts/automodel--v0.5.0.json "rules", each still found there) holds on the values
// written, recomputed from the file itself: the world size, the batch split, the pipeline's stage count
// (pipelining/functional.py calculate_virtual_stages), the MoE mesh, the strategy's limits.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../advisor/dgx_h100.h"
#include "contract_json.h"
#include "paratune/advisor/advisor.h"
#include "paratune/advisor/automodel_stages.h"
#include "paratune/advisor/env.h"
#include "paratune/advisor/framework_args.h"
#include "paratune/advisor/framework_versions.h"

using namespace paratune::advisor;
using nlohmann::json;
using paratune::contracts::contract;

namespace {

using Overrides = std::map<std::string, std::string>;

// parse_cli_argv's "--key=val" form, one a line; a key given twice would be applied twice (the last wins).
Overrides overrides(const std::string& file) {
  Overrides out;
  std::istringstream in(file);
  for (std::string line; std::getline(in, line);) {
    EXPECT_EQ(line.rfind("--", 0), 0u) << line;
    const auto eq = line.find('=');
    EXPECT_NE(eq, std::string::npos) << line;
    EXPECT_EQ(out.count(line.substr(2, eq - 2)), 0u) << "written twice: " << line;
    out[line.substr(2, eq - 2)] = line.substr(eq + 1);
  }
  return out;
}

int num(const Overrides& o, const std::string& key, int absent = 1) {
  const auto it = o.find(key);
  return it == o.end() || it->second == "None" ? absent : std::stoi(it->second);
}

void expect_rule(const json& c, const std::string& id, const std::string& text) {
  ASSERT_TRUE(c["rules"].contains(id)) << id;
  ASSERT_FALSE(c["rules"][id].is_null()) << "rule " << id << " is no longer in AutoModel's source";
  const json& r = c["rules"][id];
  EXPECT_NE((r.value("test", "") + r.value("message", "") + r.value("raise", "")).find(text), std::string::npos) << id;
}

// Every key exists (for the strategy written, where the key is a strategy field) and every value is a choice.
void check_keys(const json& c, const Overrides& o) {
  const json& keys = c["config_keys"];
  const std::string strategy = o.at("distributed.strategy");
  const std::vector<std::string> fields = c["strategy_fields"].at(strategy);
  for (const auto& [key, value] : o) {
    ASSERT_TRUE(keys.contains(key)) << key << " is not a key AutoModel 0.5.0 reads";
    const json& k = keys[key];
    // translate_value reads "None" as None, which an Optional field takes.
    const std::string type = k.value("type", "");
    const bool optional = type.rfind("Optional[", 0) == 0 || type.find("| None") != std::string::npos;
    if (k.contains("choices") && !(value == "None" && optional)) {
      const auto& ch = k["choices"];
      EXPECT_NE(std::find(ch.begin(), ch.end(), value), ch.end()) << key << "=" << value;
    }
    if (k.contains("strategies") && key != "distributed.activation_checkpointing") {
      const std::string field = key.substr(std::string("distributed.").size());
      EXPECT_NE(std::find(fields.begin(), fields.end(), field), fields.end())
          << key << " is not a field of the " << strategy << " strategy (it raises \"Unknown options\")";
    }
  }
}

// calculate_virtual_stages() at the pin, on the values written.
int stages_built(const Overrides& o, int layers, bool single_stage_schedule) {
  const int pp = num(o, "distributed.pp_size");
  const int per = num(o, "distributed.pipeline.layers_per_stage", 0);
  if (per == 0) return pp * (single_stage_schedule ? 1 : 2);
  int n = (layers + per - 1) / per;
  const auto round = o.find("distributed.pipeline.round_virtual_stages_to_pp_multiple");
  if (n % pp != 0 && round != o.end() && round->second == "up") n += pp - n % pp;
  if (n % pp != 0 && round != o.end() && round->second == "down") n -= n % pp;
  EXPECT_EQ(n % pp, 0) << "\"Number of virtual stages ... must be divisible by pipeline parallel size\"";
  return n;
}

void check_rules(const json& c, const Scenario& s, const Plan& p, const Overrides& o) {
  const int tp = num(o, "distributed.tp_size"), pp = num(o, "distributed.pp_size"), cp = num(o, "distributed.cp_size");
  const int dp = num(o, "distributed.dp_size"), ep = num(o, "distributed.ep_size");
  const int rep = num(o, "distributed.dp_replicate_size");
  EXPECT_EQ(long(tp) * pp * cp * dp, s.total_gpus()) << "the mesh must cover the job's GPUs";
  expect_rule(c, "ddp_sizes_one", "does not support");
  if (o.at("distributed.strategy") == "ddp") {
    EXPECT_EQ(tp * pp * cp * ep, 1) << "ddp refuses tp/pp/cp/ep > 1";
  }
  expect_rule(c, "selective_ac_fsdp2_only", "selective activation checkpointing is supported only for FSDP2");
  if (o.at("distributed.activation_checkpointing") == "selective") {
    EXPECT_EQ(o.at("distributed.strategy"), "fsdp2");
  }
  expect_rule(c, "replicate_below_dp", "must be less than dp_size");
  EXPECT_EQ(dp % rep, 0);
  EXPECT_TRUE(rep == 1 || rep < dp);
  expect_rule(c, "ep_divides_non_pp", "must be a multiple of");
  EXPECT_EQ((long(dp) * cp * tp) % ep, 0);
  expect_rule(c, "moe_no_tensor_parallel", "Tensor parallelism not supported for custom MoE models");
  if (ep > 1) {
    EXPECT_EQ(tp, 1);
  }
  // The batch: grad_acc_steps = global / (local * dp) (step_scheduler.py), the plan's micro-batches.
  const int local = num(o, "step_scheduler.local_batch_size"), global = num(o, "step_scheduler.global_batch_size");
  EXPECT_EQ(global, s.training.global_batch);
  ASSERT_EQ(global % (local * dp), 0) << "global_batch_size must be divisible by local_batch_size * dp_size";
  const int accum = p.layout.grad_accum(s.training.global_batch);
  if (pp > 1) {
    const int micro = num(o, "distributed.pipeline.pp_microbatch_size");
    expect_rule(c, "pp_microbatches_cover_stages", "pp_batch_size // pp_microbatch_size >= ");
    EXPECT_GE(local / micro, pp);
    EXPECT_EQ(local / micro, accum) << "pipeline micro-batches";
    EXPECT_EQ(global / (local * dp), 1);
    expect_rule(c, "virtual_stages_divisible", "must be divisible by pipeline parallel size");
    expect_rule(c, "multi_stage_two_per_rank", "Multi-stage schedule requires at least 2 stages per rank");
    const bool single = p.layout.virtual_stages == 1;
    EXPECT_EQ(stages_built(o, s.model.layers, single), pp * p.layout.virtual_stages) << "stages AutoModel builds";
  } else {
    EXPECT_EQ(global / (local * dp), accum) << "gradient accumulation steps";
  }
}

struct Case {
  std::string name;
  Scenario s;
  Plan plan;
};

Scenario automodel_on(const char* preset, int nodes, int gbs) {
  Scenario s = test_scenarios::on_dgx_h100(preset, nodes, gbs);
  s.training.framework = Framework::Automodel;
  return s;
}

Plan fixed(const Scenario& s, int tp, int pp, int vpp, int zero, Recompute r, int ep = 1,
           Dispatcher d = Dispatcher::AllGather) {
  Plan p;
  p.framework = Framework::Automodel;
  Layout& l = p.layout;
  l.tp = tp; l.pp = pp; l.virtual_stages = vpp; l.zero_stage = zero; l.recompute = r; l.sequence_parallel = tp > 1;
  l.dp = s.total_gpus() / (tp * pp);
  l.ep = ep; l.dispatcher = d;
  EXPECT_EQ(layout_problem(s, l, p.framework), "") << "the fixed layout must be one AutoModel runs";
  p.env = synthesize_env(s, p.framework, l, 60);
  return p;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  Scenario s8 = automodel_on("llama3-8b", 1, 128);
  out.push_back({"llama3-8b 1x8 advised", s8, advise(s8)});
  Scenario s70 = automodel_on("llama3-70b", 8, 512);
  out.push_back({"llama3-70b 8x8 advised", s70, advise(s70)});
  Scenario q30 = automodel_on("qwen3-30b-a3b", 2, 512);
  out.push_back({"qwen3-30b-a3b 2x8 advised (MoE)", q30, advise(q30)});
  Scenario c70 = s70;
  c70.training.compile = true;
  out.push_back({"70b tp8 pp4 vpp2 compile", c70, fixed(c70, 8, 4, 2, 3, Recompute::Full)});
  out.push_back({"70b tp2 pp4 vpp5 selective", s70, fixed(s70, 2, 4, 5, 3, Recompute::Selective)});
  out.push_back({"8b ddp", s8, fixed(s8, 1, 1, 1, 0, Recompute::Full)});
  Scenario h8 = automodel_on("llama3-8b", 2, 128);
  Plan hsdp = fixed(h8, 1, 1, 1, 2, Recompute::None);
  hsdp.layout.shard_group = 8;
  EXPECT_EQ(layout_problem(h8, hsdp.layout, Framework::Automodel), "");
  out.push_back({"8b zero2 hsdp over nodes", h8, hsdp});
  Scenario v3 = automodel_on("deepseek-v3", 64, 4096);
  out.push_back({"deepseek-v3 ep8 flex", v3, fixed(v3, 1, 1, 1, 3, Recompute::Full, 8, Dispatcher::Flex)});
  out.push_back({"qwen3-30b-a3b ep8 allgather", q30, fixed(q30, 1, 1, 1, 3, Recompute::Selective, 8)});
  return out;
}

}  // namespace

TEST(AutomodelContract, EveryOverrideIsAKeyWithAnAcceptedValueAndPassesTheRules) {
  const json c = contract("automodel--v0.5.0");
  EXPECT_EQ(c["source"]["ref"], "v0.5.0");
  int checked = 0;
  for (const Case& k : cases()) {
    SCOPED_TRACE(k.name);
    ASSERT_EQ(k.plan.framework, Framework::Automodel);
    const FrameworkArgs a = framework_args(k.s, k.plan);
    ASSERT_EQ(a.files.at(0).name, "automodel.args");
    const Overrides o = overrides(a.files[0].content);
    check_keys(c, o);
    check_rules(c, k.s, k.plan, o);
    EXPECT_EQ(o.count("model.backend.dispatcher"), k.s.model.is_moe() ? 1u : 0u);
    // Nothing of the recipe's left in force against the price: compile both ways (FSDP2Config.enable_compile,
    // config.py:224; the whole-model compile section, train_ft.py:788), dp_replicate_size for ddp too
    // (mesh_utils.py:69-74), and the pipeline's schedule file and explicit layout (functional.py:690-695, :529).
    const bool compiled = k.s.training.compile.value_or(false);
    if (o.at("distributed.strategy") == "fsdp2") {
      EXPECT_EQ(o.at("distributed.enable_compile"), compiled ? "true" : "false");
    }
    EXPECT_EQ(o.at("compile.enabled"), "false");
    // The dtype the memory model assumed (fp32 state, 4 + 4 + 8 bytes) is said, against AutoModel's default "auto"
    // -> bf16 (_transformers/auto_model.py:792).
    EXPECT_NE(std::find_if(a.notes.begin(), a.notes.end(),
                           [](const std::string& n) { return n.find("model.torch_dtype: float32") != n.npos; }),
              a.notes.end());
    EXPECT_EQ(o.count("distributed.dp_replicate_size"), 1u);
    if (k.plan.layout.pp > 1) {
      EXPECT_EQ(o.at("distributed.pipeline.pp_schedule_csv"), "None");
      EXPECT_EQ(o.at("distributed.pipeline.module_fqns_per_model_part"), "None");
    }
    if (k.plan.layout.ep > 1) {
      EXPECT_EQ(o.at("model.backend.dispatcher"), k.plan.layout.dispatcher == Dispatcher::Flex ? "deepep" : "torch");
    }
    ++checked;
  }
  EXPECT_EQ(checked, 9);
}

// What AutoModel refuses, refused by name before a job starts (and its controls accepted).
TEST(AutomodelContract, WhatThePinRefusesIsRefused) {
  Scenario q30 = automodel_on("qwen3-30b-a3b", 2, 512);
  Layout moe_tp;
  moe_tp.tp = 2; moe_tp.dp = 8; moe_tp.ep = 8; moe_tp.zero_stage = 3; moe_tp.sequence_parallel = true;
  moe_tp.dispatcher = Dispatcher::AllGather;
  EXPECT_NE(version_problem(q30, moe_tp, Framework::Automodel).find("Tensor parallelism not supported"),
            std::string::npos);
  moe_tp.tp = 1; moe_tp.dp = 16;
  EXPECT_EQ(version_problem(q30, moe_tp, Framework::Automodel), "");
  moe_tp.dispatcher = Dispatcher::AllToAll;
  EXPECT_NE(layout_problem(q30, moe_tp, Framework::Automodel).find("no alltoall dispatcher"), std::string::npos);
  Scenario s8 = automodel_on("llama3-8b", 1, 128);
  Layout ddp;
  ddp.tp = 2; ddp.dp = 4; ddp.zero_stage = 0;
  EXPECT_NE(version_problem(s8, ddp, Framework::Automodel).find("ddp"), std::string::npos);
  ddp.zero_stage = 3;
  EXPECT_EQ(version_problem(s8, ddp, Framework::Automodel), "");
  // Compile is FSDP2's enable_compile (config.py:224), no DDPConfig field: ddp with compile refused, FSDP2 not.
  Layout plain;
  plain.dp = 8; plain.zero_stage = 0;
  EXPECT_EQ(version_problem(s8, plain, Framework::Automodel), "") << "control: ddp without compile";
  s8.training.compile = true;
  EXPECT_NE(version_problem(s8, plain, Framework::Automodel).find("enable_compile is an FSDP2 option"),
            std::string::npos);
  plain.zero_stage = 3;
  EXPECT_EQ(version_problem(s8, plain, Framework::Automodel), "");
  s8.training.compile = false;
  s8.training.precision = Precision::Fp8;
  EXPECT_NE(stack_problem(s8).find("te_fp8"), std::string::npos);
}

// AutoModel's stage count from distributed.pipeline, as calculate_virtual_stages computes it: the settings found
// for 61 layers over pp 4 x 3 chunks (no exact layers_per_stage: the first found, 5, gives ceil(61 / 5) = 13 stages,
// rounded down to 12).
TEST(AutomodelContract, StageSettingsGiveTheStagesPlanned) {
  Overrides o{{"distributed.pp_size", "4"}};
  for (int chunks : {1, 2, 3, 5}) {
    const auto st = automodel_stages(61, 4, chunks);
    ASSERT_TRUE(st.has_value()) << chunks;
    const int per = st->layers_per_stage;
    o["distributed.pipeline.layers_per_stage"] = per > 0 ? std::to_string(per) : "None";
    o["distributed.pipeline.round_virtual_stages_to_pp_multiple"] = st->round.empty() ? "None" : st->round;
    EXPECT_EQ(stages_built(o, 61, chunks == 1), 4 * chunks) << chunks;
  }
  EXPECT_FALSE(automodel_stages(61, 4, 16).has_value()) << "64 stages of 61 layers";
  const auto three = automodel_stages(61, 4, 3);
  EXPECT_EQ(three->layers_per_stage, 5);
  EXPECT_EQ(three->round, "down");
}

// The MoE presets paratune calls AutoModel's own models are exactly those whose HF architecture the pinned
// registry lists (_transformers/registry.py MODEL_ARCH_MAPPING, extracted), and every MoE preset is classified.
TEST(AutomodelContract, CustomMoeModelsAreThoseInThePinnedRegistry) {
  const json c = contract("automodel--v0.5.0");
  const std::vector<std::string> names = c["custom_architectures"]["names"];
  ASSERT_GT(names.size(), 10u);
  const auto listed = [&](const std::string& a) { return std::find(names.begin(), names.end(), a) != names.end(); };
  const std::vector<std::string> table = automodel_moe_presets();
  int custom = 0, hf = 0;
  for (const std::string& key : model_preset_keys()) {
    if (!model_preset(key).is_moe()) continue;
    SCOPED_TRACE(key);
    ASSERT_NE(std::find(table.begin(), table.end(), key), table.end()) << "a MoE preset without its architecture";
    EXPECT_EQ(automodel_custom_moe(key), listed(automodel_architecture(key)));
    (automodel_custom_moe(key) ? custom : hf)++;
  }
  EXPECT_GT(custom, 0);
  EXPECT_GT(hf, 0);
}

// A MoE model AutoModel runs through HF (Mixtral): ep > 1 refused, ep 1 planned without model.backend.*; one of
// its own (Qwen3-MoE) keeps them.
TEST(AutomodelContract, HfMoeModelsGetNoExpertParallelismNorBackend) {
  Scenario mx = automodel_on("mixtral-8x7b", 2, 512);
  Layout l;
  l.dp = 16; l.ep = 8; l.zero_stage = 3; l.dispatcher = Dispatcher::AllGather;
  EXPECT_NE(version_problem(mx, l, Framework::Automodel).find("ep_size > 1"), std::string::npos);
  l.ep = 1;
  EXPECT_EQ(version_problem(mx, l, Framework::Automodel), "");
  // Planned at all: the search's ep 1 layouts must reach a framework without an alltoall dispatcher.
  const Plan p = advise(mx);
  EXPECT_EQ(p.layout.ep, 1);
  const Overrides o = overrides(framework_args(mx, p).files.at(0).content);
  EXPECT_EQ(o.count("model.backend.dispatcher") + o.count("model.backend.experts"), 0u);
  Scenario q30 = automodel_on("qwen3-30b-a3b", 2, 512);
  l.ep = 8;
  EXPECT_EQ(version_problem(q30, l, Framework::Automodel), "") << "positive control";
  const Overrides oq = overrides(framework_args(q30, advise(q30)).files.at(0).content);
  EXPECT_EQ(oq.count("model.backend.dispatcher"), 1u);
}

// The ep 1 dispatcher waiver is AutoModel's alone (it lacks the alltoall dispatcher the search's ep 1 layouts name):
// torchtitan, without an allgather dispatcher, still has an ep 1 allgather layout refused.
TEST(AutomodelContract, OnlyAutomodelWaivesTheDispatcherAtOneExpertWay) {
  Scenario q30 = automodel_on("qwen3-30b-a3b", 2, 512);
  Layout l;
  l.dp = 16; l.ep = 1; l.zero_stage = 3; l.dispatcher = Dispatcher::AllToAll;
  EXPECT_EQ(layout_problem(q30, l, Framework::Automodel), "");
  q30.training.framework = Framework::Torchtitan;
  l.dispatcher = Dispatcher::AllGather;
  EXPECT_NE(layout_problem(q30, l, Framework::Torchtitan).find("no allgather dispatcher"), std::string::npos);
  l.dispatcher = Dispatcher::AllToAll;
  EXPECT_EQ(layout_problem(q30, l, Framework::Torchtitan), "") << "control";
}
