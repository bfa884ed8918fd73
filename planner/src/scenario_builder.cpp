#include "paratune/planner/scenario_builder.h"

#include <algorithm>
#include <optional>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "paratune/advisor/catalog.h"
#include "paratune/advisor/framework_checkpoint.h"
#include "paratune/advisor/scenario_toml.h"
#include "paratune/tuning/scenario_json.h"

namespace paratune::planner {

namespace {

// Rank NCCL path classes so "worst" is well defined (PIX best ... SYS worst).
int path_rank(const std::string& p) {
  static const char* order[] = {"NVL", "PIX", "PXB", "PHB", "SYS"};
  for (int i = 0; i < 5; ++i)
    if (p == order[i]) return i;
  return 5;  // unknown / no NIC
}

// The fabric a NIC is on, from facts only: PCI vendor (0x1d0f Amazon EFA, 0x17db HPE Slingshot), link layer (PCI
// class 0x0207 or ibverbs), a name the node reported. A placeholder name with neither (AWS p5's file lists bare
// PCI addresses) says nothing: nullopt.
std::optional<advisor::Fabric> fabric_of(const probe::Nic& nic) {
  const bool named = nic.name_reported;
  if (nic.vendor_id == 0x1d0f || (named && nic.name.rfind("rdmap", 0) == 0)) return advisor::Fabric::Efa;
  if (nic.vendor_id == 0x17db || (named && (nic.name.rfind("cxi", 0) == 0 || nic.name.rfind("bxi", 0) == 0)))
    return advisor::Fabric::Slingshot;
  if (named && nic.name.rfind("hfi1", 0) == 0) return advisor::Fabric::OmniPath;
  // A <net> that is an IP interface (NCCL's socket transport: "eth0" in Azure NCv4's file), not an RDMA device.
  if (named && !nic.netdev.empty() && nic.name == nic.netdev && !nic.link_layer) return advisor::Fabric::Ethernet;
  if (nic.link_layer && *nic.link_layer == "ethernet") return advisor::Fabric::RoCE;
  if (nic.link_layer && *nic.link_layer == "infiniband") return advisor::Fabric::InfiniBand;
  if (named) return advisor::Fabric::InfiniBand;  // an OpenFabrics device whose link layer the source leaves out
  return std::nullopt;
}

bool compute_nic(const probe::Nic& nic) { return nic.role != "storage" && nic.role != "management"; }
bool active_nic(const probe::Nic& nic) { return !nic.state || *nic.state == "active"; }

// NCCL runs one transport: the fabric of most active compute NICs (the first seen on a tie). nullopt: no fact says.
std::optional<advisor::Fabric> node_fabric(const probe::Topology& topo) {
  std::vector<std::pair<advisor::Fabric, int>> counts;
  for (const auto& nic : topo.nics) {
    const auto f = compute_nic(nic) && active_nic(nic) ? fabric_of(nic) : std::nullopt;
    if (!f) continue;
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == *f; });
    if (it == counts.end()) counts.push_back({*f, 1});
    else ++it->second;
  }
  if (counts.empty()) return std::nullopt;
  return std::max_element(counts.begin(), counts.end(), [](const auto& a, const auto& b) { return a.second < b.second; })
      ->first;
}

// Compute NICs: active (or of unknown state, as in XML dumps) and not storage/management, on the node's fabric.
void add_compute_nics(const probe::Topology& topo, const std::vector<const probe::Gpu*>& gpus, advisor::ClusterSpec& c,
                      std::vector<std::string>& notes) {
  const auto fabric = node_fabric(topo);
  c.fabric = fabric.value_or(advisor::Fabric::InfiniBand);
  c.fabric_known = fabric.has_value();
  double min_rate = 0;
  int other_fabric = 0;
  for (const auto& nic : topo.nics) {
    if (!compute_nic(nic)) continue;
    const auto f = fabric_of(nic);
    if (f && fabric && *f != *fabric) {
      other_fabric += active_nic(nic);
      continue;
    }
    const bool active = active_nic(nic);
    advisor::NicFacts n;
    n.name = nic.name;
    n.name_reported = nic.name_reported;
    n.port = nic.port;
    n.active = active;
    n.netdev = nic.netdev;
    n.gid_index = nic.gid_index;
    n.gbps = nic.rate_gbps.value_or(0);
    // The path class from this NIC to its nearest allocated GPU.
    std::string best;
    for (auto* g : gpus)
      if (std::find(g->nearest_nics.begin(), g->nearest_nics.end(), nic.name) != g->nearest_nics.end() &&
          (best.empty() || path_rank(g->nic_path) < path_rank(best)))
        best = g->nic_path;
    n.gpu_path = best;
    c.nics.push_back(n);
    if (!active) continue;
    ++c.nic_count;
    if (nic.rate_gbps) min_rate = min_rate == 0 ? *nic.rate_gbps : std::min(min_rate, *nic.rate_gbps);
  }
  if (other_fabric > 0)
    notes.push_back(std::to_string(other_fabric) + " active NIC(s) of another fabric left out: NCCL's traffic runs on " +
                    advisor::to_string(c.fabric) + " (most of the node's compute NICs)");
  if (c.nic_count > 0 && min_rate == 0) {
    min_rate = 100;
    notes.push_back("NIC rate unknown in the topology source; assumed 100 Gb/s per NIC");
  }
  c.nic_gbps = min_rate;
  if (c.nodes > 1 && c.nic_count == 0)
    notes.push_back("no compute NIC found: inter-node traffic modelled over a 25 Gb/s Ethernet fallback");
  if (c.nodes > 1 && c.nic_count == 0) {
    c.fabric = advisor::Fabric::Ethernet;
    c.nic_count = 1;
    c.nic_gbps = 25;
  }
}

}  // namespace

int default_global_batch(int seq_len, int total_gpus) {
  const long tokens = 4L * 1024 * 1024;
  long gbs = std::max<long>(1, tokens / std::max(1, seq_len));
  // Round up to a multiple of the GPU count so that pure data parallelism is possible.
  gbs = std::max<long>(gbs, total_gpus);
  gbs = ((gbs + total_gpus - 1) / total_gpus) * total_gpus;
  return static_cast<int>(std::min<long>(gbs, 1 << 24));
}

advisor::ClusterSpec cluster_from_topology(const probe::Topology& topo, const Allocation& alloc,
                                           std::vector<std::string>& notes) {
  // GPUs of the allocation: the topology marks them (in_allocation) when the probe was given the indexes.
  std::vector<const probe::Gpu*> gpus;
  for (const auto& g : topo.gpus)
    if (g.in_allocation) gpus.push_back(&g);
  if (gpus.empty()) throw std::runtime_error("the node has no GPU in the job's allocation (probe found " +
                                             std::to_string(topo.gpus.size()) + " GPUs)");
  if (alloc.gpus_on_node > 0 && alloc.gpus_on_node < static_cast<int>(gpus.size())) gpus.resize(alloc.gpus_on_node);
  std::set<std::string> models;
  for (auto* g : gpus) models.insert(g->model);
  if (models.size() > 1) throw std::runtime_error("the allocation mixes GPU models (" + *models.begin() + ", " +
                                                  *models.rbegin() + "); paratune plans for one model");

  advisor::ClusterSpec c;
  c.gpu = gpus.front()->model;
  c.nodes = alloc.nodes;
  c.gpus_per_node = static_cast<int>(gpus.size());

  std::set<int> allocated;
  for (auto* g : gpus) allocated.insert(g->index);
  c.nvlink_domain = 1;
  for (const auto& domain : topo.nvlink_domains) {
    int n = 0;
    for (int i : domain) n += allocated.count(i);
    c.nvlink_domain = std::max(c.nvlink_domain, n);
  }
  if (topo.nvlink_gbps_per_gpu) c.nvlink_gbps = *topo.nvlink_gbps_per_gpu;
  if (topo.nvlink_domain_span > c.gpus_per_node)
    notes.push_back("NVLink spans " + std::to_string(topo.nvlink_domain_span) + " GPUs across nodes (" + c.gpu +
                    "); planned with this node's " + std::to_string(c.nvlink_domain) +
                    " (whether the job's nodes share one NVLink domain is not known here)");

  add_compute_nics(topo, gpus, c, notes);
  std::string worst;
  for (auto* g : gpus)
    if (!g->nic_path.empty() && (worst.empty() || path_rank(g->nic_path) > path_rank(worst))) worst = g->nic_path;
  c.gpu_nic_path = worst;
  c.cloud = topo.cloud;
  c.topology_nccl_file = topo.nccl_topo_file;
  if (alloc.memory_mb > 0) {  // what the job may use of the node's host memory (bounds CPU activation offload)
    c.host_memory_gib = static_cast<double>(alloc.memory_mb) / 1024.0;
    notes.push_back("host memory: the job's " + std::to_string(alloc.memory_mb) + " MB per node (Slurm's allocation)");
  }
  return c;
}

advisor::Scenario build_scenario(const OptionSpec& spec, const PluginConfig& config, const Allocation& alloc,
                                 const probe::Topology& topo, const std::string& scenario_text,
                                 std::vector<std::string>& notes) {
  advisor::Scenario s;
  if (!spec.scenario_file.empty()) {
    s = advisor::parse_scenario_toml(scenario_text, spec.scenario_file, advisor::ClusterSource::Caller);
    notes.push_back("scenario from " + spec.scenario_file + "; [cluster] replaced by the probed node and allocation");
  } else {
    const std::string preset = spec.model.value_or(config.default_model);
    s.model = advisor::model_preset(preset);
  }
  s.cluster = cluster_from_topology(topo, alloc, notes);
  notes.insert(notes.end(), spec.notes.begin(), spec.notes.end());
  if (spec.seq) s.model.seq_len = *spec.seq;
  if (spec.framework) advisor::set_framework(s.training, *spec.framework);
  if (spec.framework_version) s.training.framework_version = *spec.framework_version;
  if (spec.precision) s.training.precision = advisor::precision_from_string(*spec.precision);
  plan_precision(s, spec.precision.has_value(), notes);
  if (spec.attention) s.training.attention = advisor::attention_from_string(*spec.attention);
  if (spec.fp8_recipe) s.training.fp8_recipe = advisor::fp8_recipe_from_string(*spec.fp8_recipe);
  if (spec.compile) s.training.compile = *spec.compile;
  if (spec.tp_comm_overlap) s.training.tp_comm_overlap = *spec.tp_comm_overlap;
  if (spec.gbs) s.training.global_batch = *spec.gbs;
  if (s.training.global_batch <= 0) {
    s.training.global_batch = default_global_batch(s.model.seq_len, s.total_gpus());
    notes.push_back("global batch not given: " + std::to_string(s.training.global_batch) +
                    " sequences (about 4 Mi tokens per step)");
  }
  if (spec.tp) s.parallel.tp = *spec.tp;
  if (spec.pp) s.parallel.pp = *spec.pp;
  if (spec.cp) s.parallel.cp = *spec.cp;
  if (spec.ep) s.parallel.ep = *spec.ep;  // mixture of experts: validate() refuses them for a dense model
  if (spec.etp) s.parallel.etp = *spec.etp;
  if (spec.dispatcher) s.parallel.dispatcher = advisor::dispatcher_from_string(*spec.dispatcher);
  if (spec.pipeline_schedule)
    s.parallel.pipeline_schedule = advisor::pipeline_schedule_from_string(*spec.pipeline_schedule);
  if (spec.mbs) s.parallel.micro_batch = *spec.mbs;
  if (spec.zero) s.parallel.zero_stage = *spec.zero;
  if (spec.recompute) s.parallel.recompute = advisor::recompute_from_string(*spec.recompute);
  // Memory features (docs/model.md §3): validate() refuses what the framework or the layout cannot have.
  if (spec.optimizer_moments) s.parallel.optimizer_moments = advisor::state_dtype_from_string(*spec.optimizer_moments);
  if (spec.main_params) s.parallel.main_params = advisor::state_dtype_from_string(*spec.main_params);
  if (spec.recompute_modules) s.parallel.recompute_modules = advisor::recompute_modules_from_string(*spec.recompute_modules);
  if (spec.offload_layers) s.parallel.offload_layers = *spec.offload_layers;
  // Validated once, after the site policy, whose facts.gpu may name a GPU the probe could not (decide()).
  return s;
}

void plan_precision(advisor::Scenario& s, bool given, std::vector<std::string>& notes) {
  if (given || s.training.precision != advisor::Precision::Bf16 || !advisor::is_gpu_key(s.cluster.gpu) ||
      advisor::gpu_spec(s.cluster.gpu).bf16)
    return;
  // No precision on the command line, BF16 by default or from a scenario file written for another machine:
  // plan for what this GPU can do (V100, T4 have FP16 but no BF16 tensor cores).
  s.training.precision = advisor::Precision::Fp16;
  notes.push_back(s.cluster.gpu + " has no BF16 tensor cores: planning for FP16 mixed precision");
}

advisor::Scenario cluster_over_scenario(const advisor::Scenario& given, const probe::Topology& topo,
                                        std::vector<std::string>& notes) {
  Allocation alloc;
  alloc.nodes = given.cluster.nodes;
  advisor::Scenario s = given;
  const std::string where = "topology" + (given.cluster.topology_file.empty() ? "" : " " + given.cluster.topology_file);
  try {
    s.cluster = cluster_from_topology(topo, alloc, notes);
  } catch (const std::exception& e) {
    throw std::invalid_argument(where + ": " + e.what());
  }
  s.cluster.nodes = given.cluster.nodes;
  s.cluster.host_memory_gib = given.cluster.host_memory_gib;  // the topology does not say what the job may use
  s.cluster.topology_file = given.cluster.topology_file;
  s.cluster.placement = given.cluster.placement;
  // What the topology does not say, the scenario's [cluster] may: an NCCL file without device ids names no GPU
  // model, a node dump may list no NIC; the file's measured peak and memory stand over the catalog's.
  // A scenario that names no GPU keeps what the probe saw, so an unknown one is refused by name.
  if ((s.cluster.gpu.empty() || !advisor::is_gpu_key(s.cluster.gpu)) && !given.cluster.gpu.empty())
    s.cluster.gpu = given.cluster.gpu;
  if (s.cluster.nic_count == 0 && s.cluster.nics.empty()) {
    s.cluster.nic_count = given.cluster.nic_count;
    s.cluster.nic_gbps = given.cluster.nic_gbps;
  }
  if (given.cluster.peak_tflops > 0) s.cluster.peak_tflops = given.cluster.peak_tflops;
  if (given.cluster.memory_gib > 0) s.cluster.memory_gib = given.cluster.memory_gib;
  notes.push_back("cluster facts from " + where);
  return s;
}

void apply_resume(advisor::Scenario& s, const std::string& plan_text, const std::string& origin,
                  std::vector<std::string>& notes) {
  advisor::ResumeFrom r;
  r.origin = origin;
  try {
    const auto j = nlohmann::json::parse(plan_text);
    r.framework = advisor::framework_from_string(j.at("framework").at("name").get<std::string>());
    r.framework_version = j.at("framework").value("version", "");
    r.layout = tuning::layout_from_json(j.at("plan").at("layout"));
  } catch (const std::exception& e) {
    throw std::invalid_argument("resume=" + origin + ": not a paratune plan.json (" + e.what() + ")");
  }
  for (auto& n : advisor::keep_checkpoint(s, r)) notes.push_back(std::move(n));
}

void resolve_nvlink_assumption(const probe::Topology& topo, bool policy_sets_domain, advisor::ClusterSpec& c,
                               std::vector<std::string>& notes) {
  if (!topo.nvlink_unknown || policy_sets_domain) return;
  if (!advisor::is_gpu_key(c.gpu)) {
    notes.push_back("NVLink domain unknown (GPU model " + c.gpu +
                    "): planned as PCIe-only; the site policy's facts.gpu or facts.nvlink_domain would settle it");
    return;
  }
  // The catalog's view of the model (the policy's facts.gpu is a catalog key): NVSwitch parts link all the
  // node's GPUs, as do AMD's OAM parts through Infinity Fabric; anything else is planned as PCIe-only.
  const advisor::GpuSpec& g = advisor::gpu_spec(c.gpu);
  const bool xgmi = g.nvlink_gbps > 0 && (g.key == "mi250x" || g.key == "mi300x");
  if (g.nvswitch || xgmi) {
    c.nvlink_domain = c.gpus_per_node;
    notes.push_back("NVLink domain: the topology source does not say; assumed from the GPU model " + c.gpu + " (" +
                    (g.nvswitch ? "NVSwitch" : "xGMI") + "): all " + std::to_string(c.gpus_per_node) +
                    " GPUs of the node");
  } else {
    notes.push_back("NVLink domain: the topology source does not say; " + c.gpu +
                    " has no NVSwitch in the catalog: planned as PCIe-only");
  }
}

}  // namespace paratune::planner
