// Scenario TOML reader (TOML++). Every error names FILE:LINE:COL, the field, and what would be valid.
#include "paratune/advisor/scenario_toml.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>
#include <toml++/toml.h>

#include "paratune/advisor/catalog.h"
#include "paratune/advisor/framework_kernels.h"
#include "paratune/advisor/toml_guard.h"

namespace paratune::advisor {

namespace {

struct Ctx {
  std::string origin;
  std::string pos(const toml::source_region& r) const {
    return origin + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column);
  }
  [[noreturn]] void fail(const toml::node& n, const std::string& field, const std::string& what) const {
    throw std::invalid_argument(pos(n.source()) + ": " + field + ": " + what);
  }
};

void check_keys(const Ctx& c, const toml::table& t, const std::string& prefix, std::initializer_list<const char*> valid) {
  for (const auto& [k, v] : t) {
    bool ok = false;
    for (const char* name : valid) ok = ok || k.str() == name;
    if (!ok) {
      std::string list;
      for (const char* name : valid) list += (list.empty() ? "" : ", ") + std::string(name);
      c.fail(v, prefix + std::string(k.str()), "unknown key; valid: " + list);
    }
  }
}

const toml::table* sub(const Ctx& c, const toml::table& root, const char* name) {
  const toml::node* n = root.get(name);
  if (!n) return nullptr;
  if (!n->is_table()) c.fail(*n, name, "must be a table ([" + std::string(name) + "])");
  return n->as_table();
}

bool get_int(const Ctx& c, const toml::table& t, const std::string& prefix, const char* key, int& out, long lo = 0,
             long hi = 1L << 30) {
  const toml::node* n = t.get(key);
  if (!n) return false;
  if (!n->is_integer()) c.fail(*n, prefix + key, "must be an integer");
  const long v = long(n->as_integer()->get());
  if (v < lo || v > hi)
    c.fail(*n, prefix + key, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + "; got " +
                                 std::to_string(v));
  out = int(v);
  return true;
}

bool get_opt_int(const Ctx& c, const toml::table& t, const std::string& prefix, const char* key, std::optional<int>& out,
                 long lo, long hi) {
  int v = 0;
  if (!get_int(c, t, prefix, key, v, lo, hi)) return false;
  out = v;
  return true;
}

bool get_num(const Ctx& c, const toml::table& t, const std::string& prefix, const char* key, double& out) {
  const toml::node* n = t.get(key);
  if (!n) return false;
  if (n->is_integer()) out = double(n->as_integer()->get());
  else if (n->is_floating_point()) out = n->as_floating_point()->get();
  else c.fail(*n, prefix + key, "must be a number");
  if (out < 0) c.fail(*n, prefix + key, "must be >= 0");
  return true;
}

bool get_bool(const Ctx& c, const toml::table& t, const std::string& prefix, const char* key, bool& out) {
  const toml::node* n = t.get(key);
  if (!n) return false;
  if (!n->is_boolean()) c.fail(*n, prefix + key, "must be true or false");
  out = n->as_boolean()->get();
  return true;
}

bool get_str(const Ctx& c, const toml::table& t, const std::string& prefix, const char* key, std::string& out) {
  const toml::node* n = t.get(key);
  if (!n) return false;
  if (!n->is_string()) c.fail(*n, prefix + key, "must be a string");
  out = n->as_string()->get();
  return true;
}

template <class E, class F>
bool get_enum(const Ctx& c, const toml::table& t, const std::string& prefix, const char* key, E& out, F parse) {
  std::string v;
  if (!get_str(c, t, prefix, key, v)) return false;
  try {
    out = parse(v);
  } catch (const std::invalid_argument& e) {
    c.fail(*t.get(key), prefix + key, e.what());
  }
  return true;
}

// Where a field lives in the file (for validate()'s errors), else the table, else line 1.
std::string locate(const Ctx& c, const toml::table& root, const std::string& field) {
  const toml::node* best = nullptr;
  std::string path;
  const toml::table* t = &root;
  std::stringstream ss(field);
  std::string part;
  while (std::getline(ss, part, '.')) {
    if (!t) break;
    const toml::node* n = t->get(part);
    if (!n) break;
    best = n;
    t = n->as_table();
  }
  if (best) return c.pos(best->source());
  return c.origin + ":1:1";
}

}  // namespace

void apply_cluster_defaults(Scenario& s, bool nvlink_domain_given) {
  if (!is_gpu_key(s.cluster.gpu)) return;
  const GpuSpec& g = gpu_spec(s.cluster.gpu);
  if (!nvlink_domain_given) {
    const bool sxm = g.nvswitch || g.key.find("sxm") != std::string::npos || g.key == "mi250x" || g.key == "mi300x";
    s.cluster.nvlink_domain = sxm && g.nvlink_gbps > 0 ? s.cluster.gpus_per_node : 1;
  }
}

// [model]: mixture of experts, latent attention, multi-token prediction (docs/model.md §9).
static void parse_moe_model(const Ctx& c, const toml::table& m, ModelSpec& x) {
  get_int(c, m, "model.", "head_dim", x.head_dim, 1, 1 << 16);
  get_int(c, m, "model.", "moe_experts", x.moe_experts, 2, 1 << 16);
  get_int(c, m, "model.", "moe_top_k", x.moe_top_k, 1, 1 << 16);
  get_int(c, m, "model.", "moe_ffn_hidden", x.moe_ffn_hidden, 1, 1 << 22);
  get_int(c, m, "model.", "moe_shared_experts", x.moe_shared_experts, 0, 1 << 10);
  get_int(c, m, "model.", "moe_shared_ffn_hidden", x.moe_shared_ffn_hidden, 1, 1 << 22);
  get_int(c, m, "model.", "moe_dense_layers", x.moe_dense_layers, 0, 100000);
  if (get_num(c, m, "model.", "moe_capacity_factor", x.moe_capacity_factor) && x.moe_capacity_factor > 0 &&
      x.moe_capacity_factor < 1)
    c.fail(*m.get("moe_capacity_factor"), "model.moe_capacity_factor", "must be 0 (dropless) or >= 1");
  get_enum(c, m, "model.", "moe_router", x.moe_router, moe_router_from_string);
  get_int(c, m, "model.", "q_lora_rank", x.q_lora_rank, 0, 1 << 20);
  get_int(c, m, "model.", "kv_lora_rank", x.kv_lora_rank, 0, 1 << 20);
  get_int(c, m, "model.", "qk_head_dim", x.qk_head_dim, 1, 1 << 16);
  get_int(c, m, "model.", "qk_rope_head_dim", x.qk_rope_head_dim, 0, 1 << 16);
  get_int(c, m, "model.", "v_head_dim", x.v_head_dim, 1, 1 << 16);
  get_int(c, m, "model.", "mtp_layers", x.mtp_layers, 0, 16);
}

// [cluster.placement]: nodes per leaf switch in rank order, and the oversubscription above the leaves.
static void parse_placement(const Ctx& c, const toml::node& node, ClusterSpec& k) {
  if (!node.is_table()) c.fail(node, "cluster.placement", "must be a table ([cluster.placement])");
  const toml::table& t = *node.as_table();
  check_keys(c, t, "cluster.placement.", {"nodes_per_leaf", "oversubscription"});
  Placement p;
  const toml::node* per_leaf = t.get("nodes_per_leaf");
  if (!per_leaf || !per_leaf->is_array())
    c.fail(per_leaf ? *per_leaf : node, "cluster.placement.nodes_per_leaf", "must be an array of node counts, e.g. [2, 2]");
  for (const auto& e : *per_leaf->as_array()) {
    const auto v = e.value<int64_t>();
    if (!v || *v < 1 || *v > (1 << 20)) c.fail(e, "cluster.placement.nodes_per_leaf", "each entry must be 1 ... 1048576");
    p.nodes_per_leaf.push_back(static_cast<int>(*v));
  }
  if (p.nodes_per_leaf.empty() || p.nodes_per_leaf.size() > 65536)
    c.fail(*per_leaf, "cluster.placement.nodes_per_leaf", "must list 1 ... 65536 leaf switches");
  get_num(c, t, "cluster.placement.", "oversubscription", p.oversubscription);
  if (!(p.oversubscription >= 1 && p.oversubscription <= 64))
    c.fail(node, "cluster.placement.oversubscription", "must be 1 ... 64 (1 = non-blocking)");
  k.placement = p;
}

// [parallel] recompute_modules = ["layernorm", "moe_act"], or one string "layernorm,moe_act" (Megatron's names).
static unsigned parse_recompute_modules(const Ctx& c, const toml::node& node) {
  std::string names;
  if (const auto* str = node.as_string()) names = str->get();
  else if (const auto* arr = node.as_array()) {
    for (const toml::node& e : *arr) {
      const auto name = e.value<std::string>();
      if (!name) c.fail(e, "parallel.recompute_modules", "must be a list of module names");
      names += *name + ",";
    }
  } else {
    c.fail(node, "parallel.recompute_modules", "must be a list of module names, e.g. [\"layernorm\", \"moe_act\"]");
  }
  try {
    return recompute_modules_from_string(names);
  } catch (const std::invalid_argument& e) {
    c.fail(node, "parallel.recompute_modules", e.what());
  }
  return 0;
}

// [cluster] kernels = ["deepep", "te", ...]: the optional kernels installed ([] = none of them).
static void parse_kernels(const Ctx& c, const toml::node& node, ClusterSpec& k) {
  const char* valid = "a list of deepep, hybridep, te, flash3 (the optional kernels installed; [] = none)";
  if (!node.is_array()) c.fail(node, "cluster.kernels", std::string("must be ") + valid);
  k.kernels.emplace();
  for (const auto& e : *node.as_array()) {
    const auto name = e.value<std::string>();
    if (!name) c.fail(e, "cluster.kernels", std::string("must be ") + valid);
    try {
      k.kernels->push_back(kernel_from_string(*name));
    } catch (const std::invalid_argument& ex) {
      c.fail(e, "cluster.kernels", ex.what());
    }
  }
}

// [cluster]: the hardware, when the scenario file describes it.
static void parse_cluster(const Ctx& c, const toml::table& cl, Scenario& s) {
  check_keys(c, cl, "cluster.", {"gpu", "nodes", "gpus_per_node", "nvlink_domain", "nic_count", "nic_gbps", "fabric",
                                  "topology", "nccl_topo_file", "rail_aligned", "nvls", "socket_ifname", "gpu_nic_path",
                                  "cloud", "gpu_spec", "nic", "placement", "kernels"});
  ClusterSpec& k = s.cluster;
  if (get_str(c, cl, "cluster.", "gpu", k.gpu) && !is_gpu_key(k.gpu) && !cl.get("gpu_spec")) {
    std::string list;
    for (const auto& g : gpu_keys()) list += (list.empty() ? "" : ", ") + g;
    c.fail(*cl.get("gpu"), "cluster.gpu", "unknown GPU '" + k.gpu + "'; valid: " + list +
                                               " (or describe it in [cluster.gpu_spec])");
  }
  get_int(c, cl, "cluster.", "nodes", k.nodes, 1, 1 << 20);
  get_int(c, cl, "cluster.", "gpus_per_node", k.gpus_per_node, 1, 1024);
  const bool domain_given = get_int(c, cl, "cluster.", "nvlink_domain", k.nvlink_domain, 1, 1 << 16);
  get_int(c, cl, "cluster.", "nic_count", k.nic_count, 0, 1024);
  get_num(c, cl, "cluster.", "nic_gbps", k.nic_gbps);
  get_enum(c, cl, "cluster.", "fabric", k.fabric, fabric_from_string);
  get_str(c, cl, "cluster.", "topology", k.topology_file);
  get_str(c, cl, "cluster.", "nccl_topo_file", k.nccl_topo_file);
  k.rail_alignment_known = get_bool(c, cl, "cluster.", "rail_aligned", k.rail_aligned);
  get_bool(c, cl, "cluster.", "nvls", k.nvls);
  get_str(c, cl, "cluster.", "socket_ifname", k.socket_ifname);
  if (get_str(c, cl, "cluster.", "gpu_nic_path", k.gpu_nic_path)) {
    const std::string& p = k.gpu_nic_path;
    if (p != "PIX" && p != "PXB" && p != "PHB" && p != "SYS" && p != "P2C" && p != "NODE")
      c.fail(*cl.get("gpu_nic_path"), "cluster.gpu_nic_path", "must be one of PIX, PXB, P2C, PHB, NODE, SYS");
  }
  std::string cloud;
  if (get_str(c, cl, "cluster.", "cloud", cloud)) k.cloud = cloud;
  if (const toml::node* gs = cl.get("gpu_spec")) {
    if (!gs->is_table()) c.fail(*gs, "cluster.gpu_spec", "must be a table ([cluster.gpu_spec])");
    const toml::table& g = *gs->as_table();
    check_keys(c, g, "cluster.gpu_spec.", {"peak_tflops", "memory_gib", "hbm_tbps", "nvlink_gbps"});
    get_num(c, g, "cluster.gpu_spec.", "peak_tflops", k.peak_tflops);
    get_num(c, g, "cluster.gpu_spec.", "memory_gib", k.memory_gib);
    get_num(c, g, "cluster.gpu_spec.", "hbm_tbps", k.hbm_tbps);
    get_num(c, g, "cluster.gpu_spec.", "nvlink_gbps", k.nvlink_gbps);
  }
  if (const toml::node* ns = cl.get("nic")) {
    if (!ns->is_array_of_tables()) c.fail(*ns, "cluster.nic", "must be an array of tables ([[cluster.nic]])");
    for (const auto& e : *ns->as_array()) {
      const toml::table& n = *e.as_table();
      check_keys(c, n, "cluster.nic.", {"name", "port", "gbps", "active", "gpu_path", "netdev", "gid_index"});
      NicFacts f;
      if (!get_str(c, n, "cluster.nic.", "name", f.name)) c.fail(n, "cluster.nic.name", "missing (e.g. \"mlx5_0\")");
      get_int(c, n, "cluster.nic.", "port", f.port, 1, 255);
      get_num(c, n, "cluster.nic.", "gbps", f.gbps);
      get_bool(c, n, "cluster.nic.", "active", f.active);
      get_str(c, n, "cluster.nic.", "gpu_path", f.gpu_path);
      get_str(c, n, "cluster.nic.", "netdev", f.netdev);
      int gid = 0;
      if (get_int(c, n, "cluster.nic.", "gid_index", gid, 0, 255)) f.gid_index = gid;
      k.nics.push_back(f);
    }
  }
  if (const toml::node* pl = cl.get("placement")) parse_placement(c, *pl, k);
  if (const toml::node* ks = cl.get("kernels")) parse_kernels(c, *ks, k);
  apply_cluster_defaults(s, domain_given);
}

Scenario parse_scenario_toml(std::string_view text, const std::string& origin, ClusterSource cluster) {
  Ctx c{origin};
  toml::table root;
  // Before TOML++, which recurses once per header/key segment and overflows the stack on deep ones.
  if (const auto deep = find_toml_too_deep(text))
    throw std::invalid_argument(origin + ":" + std::to_string(deep->line) + ":" + std::to_string(deep->column) +
                                ": syntax: " + toml_too_deep_problem());
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    throw std::invalid_argument(c.pos(e.source()) + ": syntax: " + std::string(e.description()));
  }
  check_keys(c, root, "", {"model", "training", "cluster", "parallel"});
  Scenario s;
  s.cluster.gpus_per_node = 8;

  const toml::table* m = sub(c, root, "model");
  if (!m) throw std::invalid_argument(origin + ":1:1: model: missing [model] table (give preset = \"llama3-70b\" or "
                                               "layers/hidden/heads/vocab/seq_len)");
  check_keys(c, *m, "model.", {"preset", "name", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab",
                               "seq_len", "gated_mlp", "tied_embeddings", "dropout", "head_dim", "moe_experts",
                               "moe_top_k", "moe_ffn_hidden", "moe_shared_experts", "moe_shared_ffn_hidden",
                               "moe_dense_layers", "moe_capacity_factor", "moe_router", "q_lora_rank", "kv_lora_rank",
                               "qk_head_dim", "qk_rope_head_dim", "v_head_dim", "mtp_layers"});
  std::string preset;
  if (get_str(c, *m, "model.", "preset", preset)) {
    if (!is_model_preset(preset)) {
      std::string list;
      for (const auto& k : model_preset_keys()) list += (list.empty() ? "" : ", ") + k;
      c.fail(*m->get("preset"), "model.preset", "unknown preset '" + preset + "'; valid: " + list);
    }
    s.model = model_preset(preset);
  }
  get_str(c, *m, "model.", "name", s.model.name);
  get_int(c, *m, "model.", "layers", s.model.layers, 1, 100000);
  get_int(c, *m, "model.", "hidden", s.model.hidden, 1, 1 << 20);
  get_int(c, *m, "model.", "heads", s.model.heads, 1, 1 << 16);
  get_int(c, *m, "model.", "kv_heads", s.model.kv_heads, 1, 1 << 16);
  get_int(c, *m, "model.", "ffn_hidden", s.model.ffn_hidden, 1, 1 << 22);
  get_int(c, *m, "model.", "vocab", s.model.vocab, 1, 1 << 24);
  get_int(c, *m, "model.", "seq_len", s.model.seq_len, 1, 1 << 24);
  get_bool(c, *m, "model.", "gated_mlp", s.model.gated_mlp);
  get_bool(c, *m, "model.", "tied_embeddings", s.model.tied_embeddings);
  get_bool(c, *m, "model.", "dropout", s.model.dropout);
  parse_moe_model(c, *m, s.model);
  if (s.model.name.empty()) s.model.name = preset.empty() ? "custom" : preset;

  const toml::table* t = sub(c, root, "training");
  if (!t) throw std::invalid_argument(origin + ":1:1: training: missing [training] table (global_batch is required)");
  check_keys(c, *t, "training.", {"global_batch", "precision", "framework", "framework_version", "overlap_dp_comm",
                                  "flash_attention", "attention", "fp8_recipe", "compile", "tp_comm_overlap",
                                  "grad_reduce_fp32", "fp8_param_gather", "moe_a2a_overlap", "moe_force_balance",
                                  "pipeline_split", "overlap_param_gather"});
  if (!get_int(c, *t, "training.", "global_batch", s.training.global_batch, 1, 1L << 30))
    c.fail(*t, "training.global_batch", "missing; give the sequences per optimizer step (e.g. 1024)");
  get_enum(c, *t, "training.", "precision", s.training.precision, precision_from_string);
  get_enum(c, *t, "training.", "framework", s.training.framework, framework_from_string);
  get_str(c, *t, "training.", "framework_version", s.training.framework_version);
  bool b = false;
  if (get_bool(c, *t, "training.", "overlap_dp_comm", b)) s.training.overlap_dp_comm = b;
  if (get_bool(c, *t, "training.", "flash_attention", b)) s.training.flash_attention = b;
  if (get_bool(c, *t, "training.", "compile", b)) s.training.compile = b;
  if (get_bool(c, *t, "training.", "tp_comm_overlap", b)) s.training.tp_comm_overlap = b;
  if (get_bool(c, *t, "training.", "grad_reduce_fp32", b)) s.training.grad_reduce_fp32 = b;
  if (get_bool(c, *t, "training.", "fp8_param_gather", b)) s.training.fp8_param_gather = b;
  if (get_bool(c, *t, "training.", "overlap_param_gather", b)) s.training.overlap_param_gather = b;
  if (get_bool(c, *t, "training.", "moe_a2a_overlap", b)) s.training.moe_a2a_overlap = b;
  if (get_bool(c, *t, "training.", "moe_force_balance", b)) s.training.moe_force_balance = b;
  Attention att{};
  if (get_enum(c, *t, "training.", "attention", att, attention_from_string)) s.training.attention = att;
  PipelineSplit split{};
  if (get_enum(c, *t, "training.", "pipeline_split", split, pipeline_split_from_string)) s.training.pipeline_split = split;
  Fp8Recipe recipe{};
  if (get_enum(c, *t, "training.", "fp8_recipe", recipe, fp8_recipe_from_string)) s.training.fp8_recipe = recipe;

  const toml::table* cl = sub(c, root, "cluster");
  if (!cl && cluster == ClusterSource::File)
    throw std::invalid_argument(origin + ":1:1: cluster: missing [cluster] table (gpu, nodes, gpus_per_node)");
  if (cl) parse_cluster(c, *cl, s);

  if (const toml::table* p = sub(c, root, "parallel")) {
    check_keys(c, *p, "parallel.", {"tp", "pp", "dp", "cp", "virtual_stages", "micro_batch", "zero_stage", "recompute",
                                    "sequence_parallel", "ep", "etp", "dispatcher", "shard_group", "first_stage_layers",
                                    "last_stage_layers", "optimizer_moments", "main_params", "recompute_modules",
                                    "offload_layers"});
    ParallelSpec& q = s.parallel;
    get_opt_int(c, *p, "parallel.", "tp", q.tp, 1, 1 << 16);
    get_opt_int(c, *p, "parallel.", "pp", q.pp, 1, 1 << 16);
    get_opt_int(c, *p, "parallel.", "dp", q.dp, 1, 1 << 24);
    get_opt_int(c, *p, "parallel.", "cp", q.cp, 1, 1 << 16);
    get_opt_int(c, *p, "parallel.", "virtual_stages", q.virtual_stages, 1, 1 << 10);
    get_opt_int(c, *p, "parallel.", "micro_batch", q.micro_batch, 1, 1 << 20);
    get_opt_int(c, *p, "parallel.", "zero_stage", q.zero_stage, 0, 3);
    Recompute r{};
    if (get_enum(c, *p, "parallel.", "recompute", r, recompute_from_string)) q.recompute = r;
    if (get_bool(c, *p, "parallel.", "sequence_parallel", b)) q.sequence_parallel = b;
    get_opt_int(c, *p, "parallel.", "ep", q.ep, 1, 1 << 16);
    get_opt_int(c, *p, "parallel.", "etp", q.etp, 1, 1 << 10);
    Dispatcher disp{};
    if (get_enum(c, *p, "parallel.", "dispatcher", disp, dispatcher_from_string)) q.dispatcher = disp;
    get_opt_int(c, *p, "parallel.", "shard_group", q.shard_group, 0, 1 << 20);
    get_opt_int(c, *p, "parallel.", "first_stage_layers", q.first_stage_layers, 1, 1 << 20);
    get_opt_int(c, *p, "parallel.", "last_stage_layers", q.last_stage_layers, 1, 1 << 20);
    StateDtype dt{};
    if (get_enum(c, *p, "parallel.", "optimizer_moments", dt, state_dtype_from_string)) q.optimizer_moments = dt;
    if (get_enum(c, *p, "parallel.", "main_params", dt, state_dtype_from_string)) q.main_params = dt;
    if (const toml::node* rm = p->get("recompute_modules")) q.recompute_modules = parse_recompute_modules(c, *rm);
    get_opt_int(c, *p, "parallel.", "offload_layers", q.offload_layers, 0, 1 << 20);
  }

  if (s.cluster.kernels) settle_kernel_defaults(s);  // a stack without TE / FA3 (framework_kernels.h)
  if (cluster == ClusterSource::Caller) return s;  // the caller fills [cluster] and validates
  try {
    validate(s);
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    const auto colon = msg.find(": ");
    const std::string field = colon == std::string::npos ? "" : msg.substr(0, colon);
    throw std::invalid_argument(locate(c, root, field) + ": " + msg);
  }
  return s;
}

Scenario load_scenario_toml(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(path + ":0:0: scenario: cannot open (" + std::strerror(errno) + ")");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_scenario_toml(ss.str(), path);
}

ParallelSpec parse_parallel_list(std::string_view list, const std::string& origin) {
  // Each KEY=VALUE becomes one line of a [parallel] table read by the file parser itself, so that its checks (keys,
  // ranges, enum names, messages) apply unchanged; a number or true/false stays bare, a name is quoted. The
  // placeholder [model] and [training] only satisfy the parser: the [parallel] checks do not depend on it, and no validate()
  // runs for ClusterSource::Caller.
  constexpr int kFirstLine = 6;  // after "[model]", "preset = ...", "[training]", "global_batch = 1", "[parallel]"
  std::vector<std::string> items;
  std::string text = "[model]\npreset = \"llama3-8b\"\n[training]\nglobal_batch = 1\n[parallel]\n";
  size_t from = 0;
  while (from <= list.size()) {
    size_t to = list.find(',', from);
    if (to == std::string_view::npos) to = list.size();
    std::string item(list.substr(from, to - from));
    from = to + 1;
    const size_t eq = item.find('=');
    auto name_ok = [](const std::string& v) {
      return !v.empty() && v.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.+") ==
                               std::string::npos;
    };
    if (eq == std::string::npos || !name_ok(item.substr(0, eq)) || !name_ok(item.substr(eq + 1)))
      throw std::invalid_argument(origin + ": '" + item + "': expected KEY=VALUE, e.g. tp=8,pp=2,recompute=selective");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    const bool bare = value == "true" || value == "false" || value.find_first_not_of("0123456789") == std::string::npos;
    items.push_back(item);
    text += key + " = " + (bare ? value : "\"" + value + "\"") + "\n";
  }
  try {
    return parse_scenario_toml(text, origin, ClusterSource::Caller).parallel;
  } catch (const std::invalid_argument& e) {
    // "ORIGIN:LINE:COL: what": name the item on that line instead of a line of text the user never saw.
    const std::string msg = e.what();
    const size_t a = msg.find(':', origin.size()), b = a == std::string::npos ? a : msg.find(": ", a);
    const long line = a == std::string::npos ? 0 : std::strtol(msg.c_str() + a + 1, nullptr, 10);
    const long k = line - kFirstLine;
    const std::string which = k >= 0 && k < long(items.size()) ? "'" + items[size_t(k)] + "'" : "the list";
    throw std::invalid_argument(origin + ": " + which + ": " + (b == std::string::npos ? msg : msg.substr(b + 2)));
  }
}

}  // namespace paratune::advisor
