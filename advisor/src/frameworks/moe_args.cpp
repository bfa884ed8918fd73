// Mixture-of-experts arguments of the Megatron, NeMo 2 and torchtitan adapters (docs/model.md §9): the expert
// layout (EP, expert TP, dispatcher), what the layout depends on (experts, top-k, expert and shared FFN sizes, the
// dense-layer pattern, capacity), the all-to-all overlap under Megatron-Core's own asserts, and an explicit
// pipeline layout where the layers split unevenly. Names: tests/contracts/*.json.
#include "adapters.h"
#include "paratune/advisor/framework_kernels.h"
#include "paratune/advisor/model.h"

namespace paratune::advisor::frameworks {

namespace {

int expert_ffn(const ModelSpec& m) { return m.moe_ffn_hidden > 0 ? m.moe_ffn_hidden : m.ffn_hidden; }
int shared_ffn(const ModelSpec& m) {
  return m.moe_shared_experts * (m.moe_shared_ffn_hidden > 0 ? m.moe_shared_ffn_hidden : expert_ffn(m));
}

// Megatron's --moe-layer-freq pattern: the leading dense layers, then MoE layers (a Python list expression).
std::string layer_pattern(const ModelSpec& m) {
  return "([0]*" + std::to_string(m.moe_dense_layers) + "+[1]*" + std::to_string(m.layers - m.moe_dense_layers) + ")";
}

}  // namespace

bool moe_uneven_pipeline(const Scenario& s, const Layout& l) {
  const int L = s.model.layers;
  return s.model.is_moe() && l.pp > 1 && L % l.pp != 0 && (L + 2) % l.pp != 0;
}

bool explicit_pipeline_layout(const Scenario& s, const Layout& l) {
  return moe_uneven_pipeline(s, l) || (l.pp > 1 && l.first_stage_layers > 0 && l.last_stage_layers > 0);
}

namespace {

// Layers of each of the pp x vpp chunks (chunk c p + r is rank r's c-th): the plan's first and last ranks, the
// middle ranks sharing the rest (the earlier ones one more), each rank's layers spread over its chunks; without a
// planned split, every chunk the same with the remainder on the middle chunks first.
std::vector<int> chunk_layers(const Scenario& s, const Layout& l) {
  const int p = l.pp, v = std::max(1, l.virtual_stages), stages = p * v, L = s.model.layers;
  std::vector<int> n(stages, 0);
  if (l.first_stage_layers > 0 && l.last_stage_layers > 0) {
    std::vector<int> rank(p, 0);
    rank.front() = l.first_stage_layers;
    rank.back() = l.last_stage_layers;
    const int rest = L - l.first_stage_layers - l.last_stage_layers;
    for (int r = 1; r < p - 1; ++r) rank[r] = rest / (p - 2) + (r - 1 < rest % (p - 2) ? 1 : 0);
    for (int r = 0; r < p; ++r)
      for (int c = 0; c < v; ++c) n[c * p + r] = rank[r] / v + (c < rank[r] % v ? 1 : 0);
    return n;
  }
  n.assign(stages, L / stages);
  int rest = L % stages;
  for (int i = 1; i < stages - 1 && rest > 0; ++i, --rest) ++n[i];
  for (int i = 0; rest > 0; i = (i + 1) % stages, --rest) ++n[i];
  return n;
}

}  // namespace

std::string pipeline_layout(const Scenario& s, const Layout& l) {
  // pp x vpp stages; the embedding on the first, MTP and the loss on the last.
  const std::vector<int> n = chunk_layers(s, l);
  std::string out;
  for (size_t i = 0; i < n.size(); ++i) {
    if (i) out += "|";
    if (i == 0) out += "E";
    out += std::string(n[i], 't');
    if (i + 1 == n.size()) out += std::string(std::max(0, s.model.mtp_layers), 'm') + "L";
  }
  return out;
}

void megatron_moe(const PlanView& v, const std::function<void(std::string, std::string)>& add) {
  const ModelSpec& m = v.s.model;
  const Layout& l = v.l;
  if (!m.is_moe()) return;
  add("--num-experts", std::to_string(m.moe_experts));
  add("--moe-router-topk", std::to_string(m.moe_top_k));
  add("--moe-ffn-hidden-size", std::to_string(expert_ffn(m)));
  if (m.moe_shared_experts > 0) add("--moe-shared-expert-intermediate-size", std::to_string(shared_ffn(m)));
  if (m.moe_dense_layers > 0) add("--moe-layer-freq", layer_pattern(m));
  add("--expert-model-parallel-size", std::to_string(l.ep));
  add("--expert-tensor-parallel-size", std::to_string(l.etp));
  add("--moe-token-dispatcher-type", to_string(l.dispatcher));
  if (l.dispatcher == Dispatcher::Flex) {
    // main names the backend: HybridEP where the NVLink domain spans nodes (GB200/GB300 NVL72), DeepEP else, or
    // the one the site has (framework_kernels.h).
    if (v.version.id == "main")
      add("--moe-flex-dispatcher-backend", to_string(flex_backend(v.s, Framework::Megatron).value_or(Kernel::DeepEP)));
    else add("--moe-enable-deepep", "");
  }
  add("--moe-grouped-gemm", "");
  add("--moe-permute-fusion", "");
  add("--moe-router-dtype", "fp32");
  if (m.moe_router_groups > 0) {
    add("--moe-router-num-groups", std::to_string(m.moe_router_groups));
    add("--moe-router-group-topk", std::to_string(m.moe_router_group_topk));
  }
  if (m.moe_router == MoeRouter::AuxLossFree) {
    add("--moe-router-score-function", "sigmoid");
    add("--moe-router-enable-expert-bias", "");
  }
  if (m.moe_capacity_factor > 0) {
    add("--moe-expert-capacity-factor", std::to_string(m.moe_capacity_factor).substr(0, 4));
    add("--moe-token-drop-policy", "probs");
    if (m.moe_pad_to_capacity) add("--moe-pad-expert-input-to-capacity", "");
  }
  if (v.s.training.moe_force_balance.value_or(false)) add("--moe-router-force-load-balancing", "");
  if (m.mtp_layers > 0) add("--mtp-num-layers", std::to_string(m.mtp_layers));
  if (moe_a2a_overlap(v.s, l, Framework::Megatron)) add("--overlap-moe-expert-parallel-comm", "");
}

void nemo_moe(const PlanView& v, const std::function<void(const std::string&, const std::string&)>& set) {
  const ModelSpec& m = v.s.model;
  const Layout& l = v.l;
  if (!m.is_moe()) return;
  set("trainer.strategy.expert_model_parallel_size", std::to_string(l.ep));
  set("trainer.strategy.expert_tensor_parallel_size", std::to_string(l.etp));
  set("model.config.num_moe_experts", std::to_string(m.moe_experts));
  set("model.config.moe_router_topk", std::to_string(m.moe_top_k));
  set("model.config.moe_ffn_hidden_size", std::to_string(expert_ffn(m)));
  if (m.moe_shared_experts > 0) set("model.config.moe_shared_expert_intermediate_size", std::to_string(shared_ffn(m)));
  set("model.config.moe_token_dispatcher_type", to_string(l.dispatcher));
  if (l.dispatcher == Dispatcher::Flex) set("model.config.moe_enable_deepep", "true");
  set("model.config.moe_grouped_gemm", "true");
  set("model.config.moe_permute_fusion", "true");
  if (m.moe_router_groups > 0) {
    set("model.config.moe_router_num_groups", std::to_string(m.moe_router_groups));
    set("model.config.moe_router_group_topk", std::to_string(m.moe_router_group_topk));
  }
  if (m.moe_capacity_factor > 0) {
    set("model.config.moe_expert_capacity_factor", std::to_string(m.moe_capacity_factor).substr(0, 4));
    if (m.moe_pad_to_capacity) set("model.config.moe_pad_expert_input_to_capacity", "true");
  }
  if (v.s.training.moe_force_balance.value_or(false)) set("model.config.moe_router_force_load_balancing", "true");
  if (moe_a2a_overlap(v.s, l, Framework::Nemo)) set("model.config.overlap_moe_expert_parallel_comm", "true");
}

void torchtitan_moe_toml(const PlanView& v, std::ostream& o) {
  if (!v.s.model.is_moe()) return;
  o << "expert_parallel_degree = " << v.l.ep << "\n";
  if (v.version.id != "main") o << "expert_tensor_parallel_degree = " << v.l.etp << "\n";
  if (v.l.dispatcher == Dispatcher::Flex) o << "expert_parallel_comm_backend = \"deepep\"\n";
}

void torchtitan_moe_cli(const PlanView& v, std::vector<std::string>& flags, std::vector<std::string>& notes) {
  if (!v.s.model.is_moe()) return;
  flags.push_back("--parallelism.expert_parallel_degree=" + std::to_string(v.l.ep));
  if (v.l.dispatcher == Dispatcher::Flex)  // main: the token dispatcher is model config, not a CLI option
    notes.push_back(std::string("torchtitan main: the flex dispatcher is the model's: model_registry(flavor, "
                                "moe_comm_backend=\"") +
                    to_string(flex_backend(v.s, Framework::Torchtitan).value_or(Kernel::DeepEP)) +
                    "\") in your config function");
}

}  // namespace paratune::advisor::frameworks
