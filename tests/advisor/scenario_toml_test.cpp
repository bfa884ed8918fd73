// Scenario TOML: good input, and bad input with exact FILE:LINE:COL: field: what-is-valid messages.
#include <gtest/gtest.h>

#include "paratune/advisor/advisor.h"
#include "paratune/advisor/scenario_toml.h"

using namespace paratune::advisor;

namespace {
const char* kGood = R"(# the issue's example
[model]
preset = "llama3-70b"
seq_len = 8192

[training]
global_batch = 1024
precision = "bf16"
framework = "megatron"

[cluster]
gpu = "h100-sxm5-80gb"
nodes = 64
gpus_per_node = 8
nvlink_domain = 8
nic_count = 8
nic_gbps = 400
fabric = "infiniband"

[parallel]
tp = 8
pp = 4
dp = 16
cp = 1
virtual_stages = 1
micro_batch = 1
zero_stage = 1
recompute = "selective"
sequence_parallel = true
)";

std::string error_of(const std::string& text) {
  try {
    parse_scenario_toml(text, "s.toml");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "<no error>";
}
}  // namespace

TEST(ScenarioToml, GoodFile) {
  const Scenario s = parse_scenario_toml(kGood, "s.toml");
  EXPECT_EQ(s.model.layers, 80);
  EXPECT_EQ(s.model.kv_heads, 8);
  EXPECT_EQ(s.training.global_batch, 1024);
  EXPECT_EQ(s.cluster.nodes, 64);
  EXPECT_EQ(s.cluster.nic_gbps, 400);
  EXPECT_EQ(*s.parallel.tp, 8);
  EXPECT_EQ(*s.parallel.recompute, Recompute::Selective);
  const Prediction p = predict(s);
  EXPECT_TRUE(p.fits);
}

TEST(ScenarioToml, ExplicitFieldsOverridePreset) {
  std::string t = kGood;
  t.replace(t.find("seq_len = 8192"), 14, "seq_len = 4096\nkv_heads = 64");
  const Scenario s = parse_scenario_toml(t, "s.toml");
  EXPECT_EQ(s.model.seq_len, 4096);
  EXPECT_EQ(s.model.kv_heads, 64);
  EXPECT_EQ(s.model.hidden, 8192);
}

TEST(ScenarioToml, TopologyIsKeptForTheCaller) {
  const Scenario s = parse_scenario_toml(
      "[model]\npreset = \"llama3-8b\"\n[training]\nglobal_batch = 64\n[cluster]\nnodes = 2\ntopology = \"node.xml\"\n",
      "s.toml");
  EXPECT_EQ(s.cluster.topology_file, "node.xml");
}

TEST(ScenarioToml, BadInputMessages) {
  std::string t = kGood;
  t.replace(t.find("seq_len = 8192"), 14, "layrs = 3");
  EXPECT_EQ(error_of(t), "s.toml:4:9: model.layrs: unknown key; valid: preset, name, layers, hidden, heads, kv_heads, "
                         "ffn_hidden, vocab, seq_len, gated_mlp, tied_embeddings, dropout, head_dim, moe_experts, moe_top_k, "
           "moe_ffn_hidden, moe_shared_experts, moe_shared_ffn_hidden, moe_dense_layers, moe_capacity_factor, "
            "moe_pad_to_capacity, "
           "moe_router, moe_router_groups, moe_router_group_topk, q_lora_rank, kv_lora_rank, qk_head_dim, qk_rope_head_dim, v_head_dim, mtp_layers");
  t = kGood;
  t.replace(t.find("\"bf16\""), 6, "\"fp4\"");
  EXPECT_EQ(error_of(t), "s.toml:8:13: training.precision: 'fp4' is not a precision; valid: bf16, fp16, fp8");
  t = kGood;
  t.replace(t.find("nodes = 64"), 10, "nodes = \"64\"");
  EXPECT_EQ(error_of(t), "s.toml:13:9: cluster.nodes: must be an integer");
  t = kGood;
  t.replace(t.find("dp = 16"), 7, "dp = 8");
  EXPECT_EQ(error_of(t), "s.toml:23:6: parallel.dp: tp*pp*dp*cp must equal the GPU count 512 (nodes * gpus_per_node); "
                         "dp = 16 would");
  t = kGood;
  t.replace(t.find("\"h100-sxm5-80gb\""), 16, "\"h100\"");
  EXPECT_EQ(error_of(t).substr(0, 44), "s.toml:12:7: cluster.gpu: unknown GPU 'h100'");
  t = kGood;
  t.replace(t.find("zero_stage = 1"), 14, "zero_stage = 4");
  EXPECT_EQ(error_of(t), "s.toml:27:14: parallel.zero_stage: must be between 0 and 3; got 4");
  EXPECT_EQ(error_of("[model\npreset = 1"), "s.toml:1:7: syntax: Error while parsing table header: expected ']', saw '\\n'");
  EXPECT_EQ(error_of("[training]\nglobal_batch = 1\n[cluster]\ngpu = \"t4\"\n"),
            "s.toml:1:1: model: missing [model] table (give preset = \"llama3-70b\" or layers/hidden/heads/vocab/seq_len)");
  EXPECT_EQ(error_of("[model]\npreset = \"llama3-8b\"\nkv_heads = 7\n[training]\nglobal_batch = 8\n[cluster]\ngpu = \"t4\"\n"
                     "precision = 1\n"),
            "s.toml:8:13: cluster.precision: unknown key; valid: gpu, nodes, gpus_per_node, nvlink_domain, host_memory_gib, nic_count, "
            "nic_gbps, fabric, topology, nccl_topo_file, rail_aligned, nvls, socket_ifname, gpu_nic_path, cloud, "
            "gpu_spec, nic, placement, te_version, kernels");
  EXPECT_EQ(error_of("[model]\npreset = \"llama3-8b\"\nkv_heads = 7\n[training]\nglobal_batch = 8\n[cluster]\n"
                     "gpu = \"a100-sxm4-80gb\"\n"),
            "s.toml:3:12: model.kv_heads: must divide model.heads (32); got 7");
  EXPECT_EQ(error_of("[model]\npreset = \"llama3-8b\"\n[training]\nglobal_batch = 8\nprecision = \"fp8\"\n[cluster]\n"
                     "gpu = \"a100-sxm4-80gb\"\n"),
            "s.toml:5:13: training.precision: fp8 needs FP8 tensor cores (Hopper, Ada, Blackwell, MI300X); "
            "a100-sxm4-80gb has none; valid here: bf16, fp16");
  EXPECT_EQ(error_of("[model]\npreset = \"llama3-8b\"\n[training]\nglobal_batch = 8\n[cluster]\ngpu = \"a100-sxm4-80gb\"\n"
                     "nodes = 4\n"),
            "s.toml:5:1: cluster.nic_count: a multi-node allocation needs nic_count >= 1 and nic_gbps > 0 (compute NICs "
            "per node)");
}
