// Contract tests: what paratune emits for each supported framework version, checked against the definitions
// extracted from that version's own source (tests/contracts/*.json, scripts/contracts/extract.py): every flag, key
// and variable exists there, every value is one of its choices, and every emitted combination passes the rules
// transcribed below — each of which must still be found in the extract (so a rule that moves or changes is noticed).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "paratune/advisor/advisor.h"
#include "paratune/advisor/catalog.h"
#include "paratune/advisor/env.h"
#include "paratune/advisor/framework_args.h"
#include "paratune/advisor/framework_versions.h"
#include "contract_json.h"

using namespace paratune::advisor;
using nlohmann::json;
using paratune::contracts::contract;

namespace {

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// --flag [value] pairs of a command line.
std::vector<std::pair<std::string, std::string>> flags(const std::string& line) {
  std::vector<std::pair<std::string, std::string>> out;
  const auto w = words(line);
  for (size_t i = 0; i < w.size(); ++i) {
    if (w[i].rfind("--", 0) != 0) continue;
    const auto eq = w[i].find('=');
    if (eq != std::string::npos) out.emplace_back(w[i].substr(0, eq), w[i].substr(eq + 1));
    else out.emplace_back(w[i], i + 1 < w.size() && w[i + 1].rfind("--", 0) != 0 ? w[i + 1] : "");
  }
  return out;
}

bool has(const std::string& line, const std::string& flag) {
  for (const auto& [f, v] : flags(line))
    if (f == flag) return true;
  return false;
}

std::string env_of(const Plan& p, const std::string& name) {
  for (const auto& e : p.env)
    if (e.name == name) return e.value;
  return "<unset>";
}

// A rule the tests transcribe must still be in the source: its assert test (and, when given, an enclosing `if`).
void expect_rule(const json& c, const std::string& id, const std::string& test, const std::string& within = "") {
  ASSERT_TRUE(c["rules"].contains(id)) << id;
  const json& r = c["rules"][id];
  ASSERT_FALSE(r.is_null()) << c["framework"] << " " << c["version"] << ": rule " << id << " not found in the source";
  const std::string text = r.value("test", "") + r.value("raise", "");
  EXPECT_NE(text.find(test), std::string::npos) << id << ": " << text;
  if (!within.empty()) {
    bool found = false;
    for (const auto& w : r["within"]) found = found || w.get<std::string>().find(within) != std::string::npos;
    EXPECT_TRUE(found) << id << " no longer inside `if " << within << "`";
  }
}

Scenario scenario(const std::string& preset, const std::string& gpu, int nodes, int gbs, Framework f,
                  const std::string& version = "") {
  Scenario s;
  s.model = model_preset(preset);
  s.training.global_batch = gbs;
  s.training.framework = f;
  s.training.framework_version = version;
  s.cluster.gpu = gpu;
  s.cluster.nodes = nodes;
  s.cluster.gpus_per_node = 8;
  s.cluster.nvlink_domain = 8;
  s.cluster.nic_count = 8;
  s.cluster.nic_gbps = 400;
  return s;
}

// The layouts the contract tests emit for: the advised plan plus fixed layouts that reach the special cases.
struct Case {
  std::string name;
  Scenario s;
  Plan plan;
};

Plan planned(const Scenario& s) { return advise(s); }

Plan fixed(const Scenario& s, int tp, int pp, int cp, int vpp, int zero, Recompute r) {
  Plan p;
  p.framework = s.training.framework;
  p.layout.tp = tp; p.layout.pp = pp; p.layout.cp = cp; p.layout.virtual_stages = vpp; p.layout.zero_stage = zero;
  p.layout.recompute = r; p.layout.sequence_parallel = tp > 1;
  p.layout.dp = s.total_gpus() / (tp * pp * cp);
  p.layout.micro_batch = 1;
  const std::string why = layout_problem(s, p.layout, p.framework);
  EXPECT_EQ(why, "") << "the fixed layout must be one the version runs";
  p.env = {};
  return p;
}

std::vector<Case> cases(Framework f, const std::string& version) {
  std::vector<Case> out;
  auto s8 = scenario("llama3-8b", "a100-sxm4-80gb", 1, 128, f, version);
  out.push_back({"llama3-8b 1x8 A100 advised", s8, planned(s8)});
  auto s70 = scenario("llama3-70b", "h100-sxm5-80gb", 8, 512, f, version);
  s70.training.precision = f == Framework::Fsdp || f == Framework::DeepSpeed ? Precision::Bf16 : Precision::Fp8;
  out.push_back({"llama3-70b 8x8 H100 advised", s70, planned(s70)});
  if (f == Framework::Megatron || f == Framework::Nemo) {
    auto s405 = scenario("llama3.1-405b", "h100-sxm5-80gb", 64, 1024, f, version);
    out.push_back({"405b uneven pp=8 vpp=4", s405, fixed(s405, 8, 8, 1, 4, 1, Recompute::Selective)});
    out.push_back({"8b megatron-fsdp tp=2", s8, fixed(s8, 2, 1, 1, 1, 3, Recompute::Full)});
    // 40 layers over pp 4 x vpp 10 with 11 / 11 / 11 / 7 a rank: the last rank's last three chunks are empty.
    auto s13 = scenario("llama2-13b", "h100-sxm5-80gb", 8, 512, f, version);
    Plan light = fixed(s13, 2, 4, 1, 10, 1, Recompute::Selective);
    light.layout.first_stage_layers = 11;
    light.layout.last_stage_layers = 7;
    EXPECT_EQ(layout_problem(s13, light.layout, f), "");
    light.env = synthesize_env(s13, f, light.layout, 60);
    out.push_back({"13b pp=4 vpp=10 planned 11/7 (empty chunks)", s13, light});
  }
  // Mixture of experts: an advised expert layout, and fixed ones that reach the flex dispatcher, expert TP, the
  // uneven DeepSeek-V3 pipeline (an explicit layout) and the all-to-all overlap.
  if (f == Framework::Megatron || f == Framework::Nemo || f == Framework::Torchtitan) {
    auto q30 = scenario("qwen3-30b-a3b", "h100-sxm5-80gb", 2, 512, f, version);
    out.push_back({"qwen3-30b-a3b 2x8 H100 advised (MoE)", q30, planned(q30)});
  }
  if (f == Framework::Megatron || f == Framework::Nemo) {
    auto v3 = scenario("deepseek-v3", "h100-sxm5-80gb", 64, 4096, f, version);
    v3.training.precision = Precision::Fp8;
    Plan p8 = fixed(v3, 2, 8, 1, 4, 1, Recompute::Selective);
    p8.layout.ep = 64; p8.layout.dispatcher = Dispatcher::Flex;
    EXPECT_EQ(layout_problem(v3, p8.layout, f), "");
    p8.env = synthesize_env(v3, f, p8.layout, 60);
    out.push_back({"deepseek-v3 tp2 pp8 vpp4 ep64 flex (MoE, uneven pipeline)", v3, p8});
    auto mx = scenario("mixtral-8x7b", "h100-sxm5-80gb", 2, 256, f, version);
    mx.model.moe_capacity_factor = 1.25;
    mx.model.moe_pad_to_capacity = true;
    Plan pe = fixed(mx, 4, 1, 1, 1, 1, Recompute::Full);
    pe.layout.ep = 2; pe.layout.etp = 4;
    EXPECT_EQ(layout_problem(mx, pe.layout, f), "");
    pe.env = synthesize_env(mx, f, pe.layout, 60);
    out.push_back({"mixtral-8x7b tp4 etp4 ep2 full recompute, capacity 1.25 padded (MoE)", mx, pe});
  }
  if (f == Framework::Torchtitan) {
    auto s70b = scenario("llama3-70b", "h100-sxm5-80gb", 8, 512, f, version);
    s70b.training.compile = true;
    out.push_back({"70b tp=8 pp=4 vpp=2 compile", s70b, fixed(s70b, 8, 4, 1, 2, 3, Recompute::Full)});
  }
  if (f == Framework::DeepSpeed && version == "megatron-deepspeed") {
    auto sds = scenario("llama3-70b", "a100-sxm4-80gb", 8, 512, f, version);
    out.push_back({"70b tp=8 pp=2 zero1", sds, fixed(sds, 8, 2, 1, 1, 1, Recompute::Full)});
  }
  for (auto& c : out) {
    if (c.plan.env.empty()) c.plan.env = advise(c.s).env;  // the fixed ones: env of the scenario's own plan kind
  }
  return out;
}

}  // namespace

// The value of `flag` on a command line.
std::string value_of(const std::string& line, const std::string& flag) {
  for (const auto& [f, v] : flags(line))
    if (f == flag) return v;
  return "";
}

// Megatron's pipeline layout string: pp x vpp stages separated by '|', every transformer layer once ('t'), the
// embedding first ('E'), MTP ('m') and the loss ('L') last. A stage may be empty (the pinned
// docs/source/api-guide/pipeline_parallel_layout.md at core_v0.14/0.15: "it is legal to have empty stages"), but every
// rank -- stages r, r + pp, r + 2 pp, ... -- holds a transformer layer. Returns the number of stages without one.
int check_layout_string(const Scenario& s, const Layout& l, const std::string& line, const std::string& flag) {
  std::string v = value_of(line, flag);
  v.erase(std::remove(v.begin(), v.end(), '"'), v.end());
  EXPECT_EQ(std::count(v.begin(), v.end(), '|') + 1, l.pp * std::max(1, l.virtual_stages)) << v;
  EXPECT_EQ(std::count(v.begin(), v.end(), 't'), s.model.layers) << v;
  EXPECT_EQ(std::count(v.begin(), v.end(), 'm'), s.model.mtp_layers) << v;
  EXPECT_EQ(v.front(), 'E') << v;
  EXPECT_EQ(v.back(), 'L') << v;
  std::vector<int> rank_layers(std::max(1, l.pp), 0);
  std::vector<int> stage_layers(1, 0);
  for (char c : v) {
    if (c == '|') stage_layers.push_back(0);
    else if (c == 't') ++stage_layers.back(), ++rank_layers[(stage_layers.size() - 1) % rank_layers.size()];
  }
  for (size_t r = 0; r < rank_layers.size(); ++r) EXPECT_GT(rank_layers[r], 0) << "rank " << r << " is empty: " << v;
  EXPECT_FALSE(has(line, "--num-virtual-stages-per-pipeline-rank")) << "one virtual-pipeline option only";
  return int(std::count(stage_layers.begin(), stage_layers.end(), 0));
}

// The expert layout as the plan says it (Megatron names: --expert-model-parallel-size, ...).
void check_moe_flags(const Scenario& s, const Plan& p, const std::string& line) {
  EXPECT_EQ(value_of(line, "--num-experts"), std::to_string(s.model.moe_experts));
  EXPECT_EQ(value_of(line, "--moe-router-topk"), std::to_string(s.model.moe_top_k));
  EXPECT_EQ(value_of(line, "--expert-model-parallel-size"), std::to_string(p.layout.ep));
  EXPECT_EQ(value_of(line, "--expert-tensor-parallel-size"), std::to_string(p.layout.etp));
  EXPECT_EQ(value_of(line, "--moe-token-dispatcher-type"), to_string(p.layout.dispatcher));
  EXPECT_TRUE(has(line, "--moe-grouped-gemm"));
  if (s.model.moe_dense_layers > 0) {
    EXPECT_TRUE(has(line, "--moe-layer-freq"));
  }
  if (s.model.moe_capacity_factor > 0) {
    EXPECT_TRUE(has(line, "--moe-expert-capacity-factor"));
  }
  EXPECT_EQ(has(line, "--moe-pad-expert-input-to-capacity"), s.model.moe_pad_to_capacity);
  // Group-limited routing as the model card sets it (DeepSeek-V3 config.json: n_group 8, topk_group 4); the Qwen3
  // plans route unrestricted and carry neither flag.
  const bool groups = s.model.moe_router_groups > 0;
  EXPECT_EQ(groups, s.model.name == "deepseek-v3") << "the presets' group settings changed: " << s.model.name;
  EXPECT_EQ(has(line, "--moe-router-num-groups"), groups) << s.model.name;
  EXPECT_EQ(has(line, "--moe-router-group-topk"), groups) << s.model.name;
  if (groups) {
    EXPECT_EQ(value_of(line, "--moe-router-num-groups"), std::to_string(s.model.moe_router_groups));
    EXPECT_EQ(value_of(line, "--moe-router-group-topk"), std::to_string(s.model.moe_router_group_topk));
  }
}

// Megatron-Core's TransformerConfig asserts for --overlap-moe-expert-parallel-comm (extracted as the
// moe_a2a_overlap_* rules of each version, transformer_config.py __post_init__), each checked on the plan.
void check_moe_overlap(const json& c, const Scenario& s, const Plan& p, const std::string& line) {
  EXPECT_TRUE(c["arguments"].contains("--overlap-moe-expert-parallel-comm"));
  expect_rule(c, "moe_a2a_overlap_needs_ep", "expert_model_parallel_size > 1", "overlap_moe_expert_parallel_comm");
  EXPECT_GT(p.layout.ep, 1);
  expect_rule(c, "moe_a2a_overlap_needs_alltoall_or_flex", "moe_token_dispatcher_type in ['alltoall', 'flex']");
  EXPECT_NE(p.layout.dispatcher, Dispatcher::AllGather);
  expect_rule(c, "moe_a2a_overlap_no_full_recompute", "recompute_granularity != 'full'");
  EXPECT_NE(value_of(line, "--recompute-granularity"), "full");
  expect_rule(c, "moe_a2a_overlap_needs_vpp_with_pp", "virtual_pipeline_model_parallel_size is not None",
              "pipeline_model_parallel_size > 1");
  if (p.layout.pp > 1) {
    EXPECT_GT(p.layout.virtual_stages, 1);
  }
  // core_v0.14/0.15 allow one MTP layer with the overlap; main dropped the assert (null in its extract).
  if (!c["rules"]["moe_a2a_overlap_one_mtp_layer"].is_null()) {
    expect_rule(c, "moe_a2a_overlap_one_mtp_layer", "mtp_num_layers == 1");
  }
  EXPECT_LE(s.model.mtp_layers, 1);
}

// ---- Megatron-LM ------------------------------------------------------------------------------------------------
TEST(Contract, MegatronEveryFlagExistsIsReadAndPassesTheRules) {
  for (const auto& v : {"core_v0.14", "core_v0.15", "main"}) {
    const json c = contract(std::string("megatron--") + v);
    expect_rule(c, "megatron_fsdp_needs_fsdp_dtensor", "args.ckpt_format == 'fsdp_dtensor'", "args.use_megatron_fsdp");
    expect_rule(c, "megatron_fsdp_needs_cuda_max_connections_not_1", "CUDA_DEVICE_MAX_CONNECTIONS') != '1'",
                "args.use_megatron_fsdp");
    expect_rule(c, "tp_cp_needs_cuda_max_connections_1", "CUDA_DEVICE_MAX_CONNECTIONS') == '1'");
    expect_rule(c, "tp_comm_overlap_needs_sequence_parallel", "args.sequence_parallel == True", "args.tp_comm_overlap");
    expect_rule(c, "layers_divisible_by_pipeline", "num_layers % args.transformer_pipeline_model_parallel_size == 0");
    expect_rule(c, "one_virtual_pipeline_option", "int(args.num_layers_per_virtual_pipeline_stage is not None)");
    // Megatron-LM main refuses Transformer Engine's fused loss; 0.14/0.15 run it (loss_fusion.h follows).
    const bool te_loss_refused = std::string(v) == "main";
    if (te_loss_refused) expect_rule(c, "te_cross_entropy_rejected", "cross_entropy_fusion_impl == 'te'");
    else EXPECT_TRUE(c["rules"]["te_cross_entropy_rejected"].is_null()) << v;
    Scenario fused = scenario("llama3-8b", "h100-sxm5-80gb", 1, 128, Framework::Megatron, v);
    fused.training.cross_entropy_fusion = LossFusion::Te;
    EXPECT_EQ(stack_problem(fused).empty(), !te_loss_refused) << v << ": " << stack_problem(fused);
    int checked = 0, empty_stages = 0;
    for (const auto& k : cases(Framework::Megatron, v)) {
      const FrameworkArgs a = framework_args(k.s, k.plan);
      EXPECT_EQ(a.version, v);
      const std::string& line = a.files.at(0).content;
      for (const auto& [flag, value] : flags(line)) {
        ++checked;
        ASSERT_TRUE(c["arguments"].contains(flag)) << v << " " << k.name << ": " << flag << " is no argument";
        const json& arg = c["arguments"][flag];
        EXPECT_FALSE(arg["readers"].is_number() && arg["readers"] == 0) << v << ": nothing reads " << flag;
        if (arg.contains("choices") && arg["choices"].is_array()) {
          const auto& ch = arg["choices"];
          EXPECT_NE(std::find(ch.begin(), ch.end(), value), ch.end()) << v << " " << flag << " " << value;
        }
        const bool takes_value = !arg.contains("action") || arg["action"] == "store";
        EXPECT_EQ(takes_value, !value.empty()) << v << " " << flag;
      }
      const bool fsdp = has(line, "--use-megatron-fsdp");
      const bool a2a_overlap = has(line, "--overlap-moe-expert-parallel-comm");
      if (a2a_overlap) check_moe_overlap(c, k.s, k.plan, line);
      if (k.s.model.is_moe()) check_moe_flags(k.s, k.plan, line);
      if (fsdp) {
        EXPECT_NE(line.find("--ckpt-format=fsdp_dtensor"), std::string::npos) << k.name;
        EXPECT_NE(env_of(k.plan, "CUDA_DEVICE_MAX_CONNECTIONS"), "1") << k.name;
      } else if (a2a_overlap) {
        // The "must be 1" assert sits inside `if not args.overlap_moe_expert_parallel_comm` (its `within`).
        bool exempt = false;
        for (const auto& w : c["rules"]["tp_cp_needs_cuda_max_connections_1"]["within"])
          exempt = exempt || w.get<std::string>().find("overlap_moe_expert_parallel_comm") != std::string::npos;
        EXPECT_TRUE(exempt) << v;
        EXPECT_NE(env_of(k.plan, "CUDA_DEVICE_MAX_CONNECTIONS"), "1") << k.name;
      } else if ((k.plan.layout.tp > 1 || k.plan.layout.cp > 1) &&
                 effective_gpu(k.s.cluster).arch != GpuArch::Blackwell) {
        EXPECT_EQ(env_of(k.plan, "CUDA_DEVICE_MAX_CONNECTIONS"), "1") << k.name;
      }
      if (has(line, "--tp-comm-overlap")) {
        EXPECT_TRUE(has(line, "--sequence-parallel")) << k.name;
      }
      const int pp = k.plan.layout.pp;
      const int counted = k.s.model.layers + (has(line, "--account-for-embedding-in-pipeline-split") ? 1 : 0) +
                          (has(line, "--account-for-loss-in-pipeline-split") ? 1 : 0);
      if (has(line, "--pipeline-model-parallel-layout")) {
        empty_stages += check_layout_string(k.s, k.plan.layout, line, "--pipeline-model-parallel-layout");
      } else if (!has(line, "--num-virtual-stages-per-pipeline-rank")) {
        EXPECT_EQ(counted % pp, 0) << k.name;
      }
      EXPECT_LE(int(has(line, "--num-virtual-stages-per-pipeline-rank")) +
                    int(has(line, "--num-layers-per-virtual-pipeline-stage")), 1);
    }
    EXPECT_GT(checked, 40) << "positive control: flags were emitted and checked";
    EXPECT_GT(empty_stages, 0) << "positive control: a layout with empty stages was checked";
  }
}

// ---- NeMo 2 -----------------------------------------------------------------------------------------------------
TEST(Contract, NemoEveryOverrideIsAConfigKey) {
  const json c = contract("nemo--2.4");
  expect_rule(c, "uneven_pipeline_split_needs_accounting", "num_layers % config.pipeline_model_parallel_size == 0");
  int checked = 0, empty_stages = 0;
  for (const auto& k : cases(Framework::Nemo, "2.4")) {
    const FrameworkArgs a = framework_args(k.s, k.plan);
    std::map<std::string, std::string> kv;
    for (const auto& w : words(a.files.at(0).content)) {
      const auto eq = w.find('=');
      ASSERT_NE(eq, std::string::npos) << w;
      kv[w.substr(0, eq)] = w.substr(eq + 1);
      ++checked;
      EXPECT_TRUE(c["config_keys"].contains(w.substr(0, eq))) << k.name << ": " << w << " is no NeMo 2.4 key";
    }
    if (kv.count("trainer.strategy.fsdp")) {
      const auto& ok = c["strategy_fsdp_values"];
      EXPECT_NE(std::find(ok.begin(), ok.end(), kv["trainer.strategy.fsdp"]), ok.end());
    }
    const std::string prec = c["config_keys"]["trainer.plugins.precision"]["type"];
    EXPECT_NE(prec.find("'" + kv["trainer.plugins.precision"] + "'"), std::string::npos) << prec;
    // Megatron-Core: (layers + embedding + loss) % pp == 0.
    const int counted = k.s.model.layers + (kv["trainer.strategy.account_for_embedding_in_pipeline_split"] == "true") +
                        (kv["trainer.strategy.account_for_loss_in_pipeline_split"] == "true");
    if (kv.count("trainer.strategy.pipeline_model_parallel_layout")) {
      const std::string layout = kv["trainer.strategy.pipeline_model_parallel_layout"];
      empty_stages += check_layout_string(k.s, k.plan.layout, "--x " + layout, "--x");
    } else {
      EXPECT_EQ(counted % k.plan.layout.pp, 0) << k.name;
    }
    if (k.s.model.is_moe()) {
      EXPECT_EQ(kv["trainer.strategy.expert_model_parallel_size"], std::to_string(k.plan.layout.ep)) << k.name;
      EXPECT_EQ(kv["model.config.num_moe_experts"], std::to_string(k.s.model.moe_experts)) << k.name;
      EXPECT_EQ(kv["model.config.moe_token_dispatcher_type"], to_string(k.plan.layout.dispatcher)) << k.name;
      // NeMo 2.4's config types the key as a plain str; its Megatron-Core 0.14 lists the choices.
      const json mcore = contract("megatron--core_v0.14");
      const auto& ch = mcore["arguments"]["--moe-token-dispatcher-type"]["choices"];
      EXPECT_NE(std::find(ch.begin(), ch.end(), kv["model.config.moe_token_dispatcher_type"]), ch.end()) << k.name;
    }
    EXPECT_EQ(kv["data.seq_length"], std::to_string(k.s.model.seq_len));
  }
  EXPECT_GT(checked, 40);
  EXPECT_GT(empty_stages, 0) << "positive control: a layout with empty stages was checked";
}

// ---- DeepSpeed / Megatron-DeepSpeed -------------------------------------------------------------------------------
TEST(Contract, DeepSpeedKeysExistAndTheBatchAssertionHolds) {
  for (const auto& v : {"0.16", "0.19", "megatron-deepspeed"}) {
    const bool mds = std::string(v) == "megatron-deepspeed";
    const json c = contract(mds ? "deepspeed--0.16" : std::string("deepspeed--") + v);
    expect_rule(c, "batch_equals_micro_times_accum_times_world", "train_batch == micro_batch * grad_acc * self.world_size");
    if (std::string(v) == "0.19") {
      EXPECT_TRUE(c["rules"]["autotp_rejects_zero3"].is_null()) << "0.19 dropped the AutoTP + ZeRO-3 assert";
    } else {
      expect_rule(c, "autotp_rejects_zero3", "zero_optimization_stage() <= 2");
    }
    EXPECT_EQ(c["world_size_with_mpu"], "mpu.get_data_parallel_world_size()");
    const std::set<std::string> top = c["top_level_keys"];
    for (const auto& k : cases(Framework::DeepSpeed, v)) {
      const FrameworkArgs a = framework_args(k.s, k.plan);
      const json cfg = json::parse(a.files.at(0).content);
      for (const auto& [key, val] : cfg.items()) {
        EXPECT_TRUE(top.count(key)) << v << ": " << key;
        if (key == "zero_optimization") {
          for (const auto& [zk, zv] : val.items()) EXPECT_TRUE(c["zero_optimization"].contains(zk)) << zk;
        }
        if (key == "bf16" || key == "fp16") {
          for (const auto& [pk, pv] : val.items()) EXPECT_TRUE(c["precision"][key].contains(pk)) << pk;
        }
        if (key == "activation_checkpointing")
          for (const auto& [ak, av] : val.items()) {
            const auto& list = c["activation_checkpointing"];
            EXPECT_NE(std::find(list.begin(), list.end(), ak), list.end()) << ak;
          }
      }
      // world_size is the data-parallel size with Megatron-DeepSpeed's mpu, else every GPU.
      const int world = mds ? k.plan.layout.dp : k.s.total_gpus();
      EXPECT_EQ(cfg["train_batch_size"].get<int>(),
                cfg["train_micro_batch_size_per_gpu"].get<int>() * cfg["gradient_accumulation_steps"].get<int>() * world)
          << v << " " << k.name;
      if (!mds) {
        EXPECT_EQ(k.plan.layout.tp * k.plan.layout.pp, 1) << "plain DeepSpeed plans no model parallelism";
        continue;
      }
      ASSERT_EQ(a.files.size(), 2u);
      const json md = contract("megatron-deepspeed--main");
      for (const auto& [flag, value] : flags(a.files[1].content))
        EXPECT_TRUE(md["arguments"].contains(flag) || c["launcher_arguments"].contains(flag)) << flag;
    }
  }
}

// ---- torchtitan -------------------------------------------------------------------------------------------------
TEST(Contract, TorchtitanTomlSectionsAndCliOptionsExist) {
  const json c2 = contract("torchtitan--v0.2");
  expect_rule(c2, "async_tp_needs_compile", "Async TP requires", "compile.enable");
  expect_rule(c2, "ddp_only_1d", "DDP has not supported > 1D parallelism");
  for (const auto& k : cases(Framework::Torchtitan, "v0.2")) {
    const FrameworkArgs a = framework_args(k.s, k.plan);
    ASSERT_EQ(a.files.at(0).name, "torchtitan.toml");
    const toml::table t = toml::parse(a.files[0].content);
    for (const auto& [sec, tbl] : t) {
      const std::string section(sec.str());
      ASSERT_TRUE(c2["sections"].contains(section)) << section;
      for (const auto& [key, value] : *tbl.as_table()) {
        const std::string name(key.str());
        ASSERT_TRUE(c2["sections"][section].contains(name)) << section << "." << name;
        const json& field = c2["sections"][section][name];
        if (field.contains("choices") && value.is_string()) {
          const auto& ch = field["choices"];
          EXPECT_NE(std::find(ch.begin(), ch.end(), value.value<std::string>().value()), ch.end()) << name;
        }
      }
    }
    if (t["parallelism"]["enable_async_tensor_parallel"].value_or(false)) {
      EXPECT_TRUE(t["compile"]["enable"].value_or(false)) << "torchtitan raises: async TP requires compile";
    }
    if (auto conv = t["model"]["converters"].as_array())
      for (const auto& x : *conv) {
        const auto& known = c2["model_converters"];
        EXPECT_NE(std::find(known.begin(), known.end(), x.value<std::string>().value()), known.end());
      }
    EXPECT_FALSE(t["parallelism"]["data_parallel_shard_degree"].value_or(0) == 1 &&
                 t["parallelism"]["data_parallel_replicate_degree"].value_or(1) > 1 &&
                 (k.plan.layout.tp > 1 || k.plan.layout.pp > 1))
        << "DDP with > 1D parallelism raises";
  }
  const json cm = contract("torchtitan--main");
  const std::set<std::string> options = cm["cli_options"];
  ASSERT_GT(options.size(), 100u);
  for (const auto& k : cases(Framework::Torchtitan, "main")) {
    const FrameworkArgs a = framework_args(k.s, k.plan);
    ASSERT_EQ(a.files.at(0).name, "torchtitan.flags");
    for (const auto& [flag, value] : flags(a.files[0].content))
      EXPECT_TRUE(options.count(flag.substr(2))) << flag << " is not in torchtitan main's frozen CLI";
  }
}

// ---- PyTorch FSDP and torchrun ----------------------------------------------------------------------------------
TEST(Contract, FsdpSettingsUsePyTorchNamesAndTorchrunItsFlags) {
  const json c1 = contract("pytorch--1.13");
  for (const auto& k : cases(Framework::Fsdp, "1.13")) {
    const FrameworkArgs a = framework_args(k.s, k.plan);
    const json f = json::parse(a.files.at(0).content);
    const json& p = c1["FullyShardedDataParallel"];
    for (const auto& [key, val] : f["FullyShardedDataParallel"].items()) {
      EXPECT_TRUE(p["params"].contains(key)) << key;
      if (key == "sharding_strategy") {
        EXPECT_NE(std::find(p["ShardingStrategy"].begin(), p["ShardingStrategy"].end(), val), p["ShardingStrategy"].end())
            << val;
      }
      if (key == "backward_prefetch" && !val.is_null()) {
        EXPECT_NE(std::find(p["BackwardPrefetch"].begin(), p["BackwardPrefetch"].end(), val), p["BackwardPrefetch"].end());
      }
      if (key == "mixed_precision") {
        for (const auto& [mk, mv] : val.items())
          EXPECT_NE(std::find(p["MixedPrecision"].begin(), p["MixedPrecision"].end(), mk), p["MixedPrecision"].end());
      }
    }
    for (const auto& [flag, value] : flags(a.torchrun))
      EXPECT_TRUE(c1["torchrun_arguments"].contains(flag)) << flag << " is not a torchrun 1.13 flag";
  }
  const json c2 = contract("pytorch--2.x");
  for (const auto& k : cases(Framework::Fsdp, "2.x")) {
    const json f = json::parse(framework_args(k.s, k.plan).files.at(0).content);
    for (const auto& [key, val] : f["fully_shard"].items()) {
      EXPECT_TRUE(c2["fully_shard"]["params"].contains(key)) << key;
      if (key == "mp_policy")
        for (const auto& [mk, mv] : val.items()) {
          const auto& mp = c2["fully_shard"]["MixedPrecisionPolicy"];
          EXPECT_NE(std::find(mp.begin(), mp.end(), mk), mp.end()) << mk;
        }
    }
  }
}

// ---- NCCL / aws-ofi-nccl ----------------------------------------------------------------------------------------
TEST(Contract, EveryNcclVariableIsInNcclsOwnParameterList) {
  const json nccl = contract("nccl--2.30");
  const json old = contract("nccl--2.21");
  const json ofi = contract("aws-ofi-nccl--1.21");
  const std::set<std::string> vars = nccl["variables"], old_vars = old["variables"];
  int checked = 0;
  for (const Fabric fabric : {Fabric::InfiniBand, Fabric::RoCE, Fabric::Efa, Fabric::Slingshot}) {
    Scenario s = scenario("llama3-70b", "h100-sxm5-80gb", 4, 512, Framework::Megatron);
    s.cluster.fabric = fabric;
    s.cluster.gpu_nic_path = "PXB";
    s.cluster.nccl_topo_file = "/etc/nccl/topo.xml";
    s.cluster.rail_alignment_known = true;
    for (int i = 0; i < 8; ++i) s.cluster.nics.push_back({"mlx5_" + std::to_string(i), 1, 400, true, "PIX", "ens" + std::to_string(i), 3});
    for (const auto& e : advise(s).env) {
      if (e.name == "FI_EFA_USE_DEVICE_RDMA") continue;  // libfabric's EFA provider reads it, not NCCL or the plugin
      ++checked;
      if (e.name.rfind("NCCL_", 0) == 0) {
        EXPECT_TRUE(vars.count(e.name)) << e.name << " is not an NCCL 2.30 parameter";
        EXPECT_TRUE(old_vars.count(e.name)) << e.name << " is not an NCCL 2.21 parameter";
      } else if (e.name.rfind("FI_", 0) == 0) {
        const auto& fi = ofi["fi_variables_set_or_read"];
        EXPECT_NE(std::find(fi.begin(), fi.end(), e.name), fi.end()) << e.name;
      }
      if (e.name == "NCCL_NET") {
        const auto& names = ofi["net_plugin_names"];
        EXPECT_NE(std::find(names.begin(), names.end(), e.value), names.end()) << e.value;
      }
      if (e.name == "NCCL_NET_GDR_LEVEL") {
        const auto& levels = old["path_types"];
        EXPECT_NE(std::find(levels.begin(), levels.end(), e.value), levels.end()) << e.value;
      }
    }
  }
  EXPECT_GT(checked, 10);
}

// The table itself: one default per framework, every contract file present and naming a pinned commit.
TEST(Contract, VersionTableHasOneDefaultPerFrameworkAndAPinnedSource) {
  std::map<Framework, int> defaults;
  for (const auto& v : framework_versions()) {
    defaults[v.framework] += v.is_default;
    const json c = contract(v.contract);
    EXPECT_FALSE(c["source"]["commit"].is_null()) << v.contract;
    EXPECT_FALSE(c["source"]["repository"].get<std::string>().empty());
  }
  for (const Framework f : {Framework::Megatron, Framework::Nemo, Framework::DeepSpeed, Framework::Torchtitan,
                            Framework::Fsdp, Framework::Automodel})
    EXPECT_EQ(defaults[f], 1) << to_string(f);
  EXPECT_THROW(resolve_version(Framework::Megatron, "core_v0.1"), std::invalid_argument);
}
