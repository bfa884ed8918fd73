// predict() and advise(): the exhaustive, memory-pruned search over valid layouts.
#include "paratune/advisor/advisor.h"
#include "paratune/advisor/breakdown_terms.h"
#include "paratune/advisor/framework_checkpoint.h"
#include "paratune/advisor/framework_kernels.h"
#include "paratune/advisor/framework_traits.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "paratune/advisor/env.h"
#include "paratune/advisor/framework_versions.h"
#include "paratune/advisor/model.h"
#include "divisors.h"
#include "obstacle.h"
#include "pipeline_schedule.h"
#include "torchtitan_split.h"

namespace paratune::advisor {

namespace {

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

const char* kMemTerm[] = {"weights", "gradients", "optimizer states", "activations", "logits", "buffers"};

// Expert parallelism (docs/model.md §9): "parallel folding" — the experts' etp x ep x edp ranks are the attention's
// tp x cp x dp; what each framework's MoE runs.
std::string moe_layout_problem(const Scenario& s, const Layout& l, Framework f) {
  const ModelSpec& m = s.model;
  if (l.ep < 1 || l.etp < 1) return "ep and etp must be >= 1";
  if (!m.is_moe()) return l.ep > 1 || l.etp > 1 ? "ep/etp > 1 needs a mixture-of-experts model (moe_experts)" : "";
  const bool mcore = traits(f).megatron_core;
  if (!traits(f).expert_parallel && (l.ep > 1 || l.etp > 1))
    return std::string(to_string(f)) +
           ": expert parallelism is planned for megatron, nemo, torchtitan and automodel only";
  if (m.moe_experts % l.ep) return "ep = " + std::to_string(l.ep) + " must divide moe_experts (" +
                                   std::to_string(m.moe_experts) + ")";
  const long folded = long(l.tp) * l.cp * l.dp;
  if (folded % (long(l.ep) * l.etp))
    return "ep*etp = " + std::to_string(l.ep * l.etp) + " must divide tp*cp*dp = " + std::to_string(folded) +
           " (the experts fold into the attention's ranks)";
  const int fe = m.moe_ffn_hidden > 0 ? m.moe_ffn_hidden : m.ffn_hidden;
  if (fe > 0 && fe % l.etp) return "etp = " + std::to_string(l.etp) + " must divide moe_ffn_hidden";
  // Megatron-Core splits the experts' data-parallel group into the distributed-optimizer instances too
  // (parallel_state.py: intra_partial_expert_data_parallel_size).
  if (const int instances = l.optimizer_instances(); instances > 1 && l.expert_dp() % instances != 0)
    return "expert data-parallel size " + std::to_string(l.expert_dp()) + " must be divisible by the " +
           std::to_string(instances) + " distributed-optimizer instances (dp*cp / shard_group)";
  if (l.tp > 1 && !l.sequence_parallel && mcore)
    return "Megatron-Core MoE with tp > 1 needs sequence_parallel (the dispatcher takes the SP shards)";
  // The others replicate the experts; with one expert way nothing is dispatched, but only AutoModel, which lacks
  // the alltoall dispatcher the search's ep 1 layouts name, needs the check waived there.
  if (traits(f).expert_parallel && (l.ep * l.etp > 1 || f != Framework::Automodel) &&
      !runs_dispatcher(f, l.dispatcher))
    return std::string(to_string(f)) + ": its expert parallelism has no " + to_string(l.dispatcher) + " dispatcher";
  if (f == Framework::Torchtitan && l.etp != 1 && l.etp != l.tp)
    return "torchtitan: expert_tensor_parallel_degree must be 1 or tensor_parallel_degree";
  if (l.dispatcher == Dispatcher::Flex && !hopper_or_blackwell(s.cluster.gpu))
    return "dispatcher flex (DeepEP / HybridEP kernels) needs Hopper or Blackwell GPUs";
  if (l.zero_stage >= 3 && mcore) return "zero_stage 3 (Megatron-FSDP) with experts is not modelled; use 0 or 1";
  if (m.moe_pad_to_capacity) {
    if (!mcore)
      return std::string(to_string(f)) + ": no padding to capacity (moe_pad_to_capacity is Megatron-Core's "
                                         "--moe-pad-expert-input-to-capacity)";
    // Megatron-Core's TransformerConfig: "Flex token dispatcher with deepep backend does not support
    // moe_pad_expert_input_to_capacity" (transformer_config.py __post_init__); HybridEP pads.
    if (l.dispatcher == Dispatcher::Flex && flex_backend(s, f).value_or(Kernel::DeepEP) == Kernel::DeepEP)
      return "moe_pad_to_capacity: Megatron-Core refuses padding with the flex dispatcher's DeepEP backend; use "
             "alltoall or allgather (or HybridEP where the version has it)";
  }
  return "";
}

}  // namespace

Layout layout_from_scenario(const Scenario& s) {
  const ParallelSpec& p = s.parallel;
  Layout l;
  l.tp = p.tp.value_or(1);
  l.pp = p.pp.value_or(1);
  l.cp = p.cp.value_or(1);
  const int rest = l.tp * l.pp * l.cp;
  l.dp = p.dp.value_or(rest > 0 ? std::max(1, s.total_gpus() / rest) : 1);
  l.schedule = p.pipeline_schedule;
  l.virtual_stages = p.virtual_stages.value_or(p.pipeline_schedule ? default_virtual_stages(*p.pipeline_schedule) : 1);
  l.micro_batch = p.micro_batch.value_or(1);
  l.zero_stage = p.zero_stage.value_or(traits(s.training.framework).default_zero);
  l.recompute = p.recompute.value_or(traits(s.training.framework).default_recompute);
  l.sequence_parallel = p.sequence_parallel.value_or(l.tp > 1);
  l.ep = p.ep.value_or(1);
  l.etp = p.etp.value_or(1);
  l.dispatcher = p.dispatcher.value_or(Dispatcher::AllToAll);
  l.first_stage_layers = p.first_stage_layers.value_or(0);
  l.last_stage_layers = p.last_stage_layers.value_or(0);
  l.shard_group = p.shard_group.value_or(0);
  l.optimizer_moments = p.optimizer_moments.value_or(StateDtype::Fp32);
  l.main_params = p.main_params.value_or(StateDtype::Fp32);
  l.recompute_modules = p.recompute_modules.value_or(0);
  if (p.recompute_modules && !p.recompute) l.recompute = Recompute::Selective;
  l.offload_layers = p.offload_layers.value_or(0);
  if (l.offload_layers > 0 && !p.recompute) l.recompute = Recompute::None;  // Megatron-Core: offload or recompute
  return l;
}

namespace {

// A stage layout (first/last ranks' layers): Megatron and NeMo take it (--pipeline-model-parallel-layout), with at
// least one layer on every rank. A rank may hold fewer layers than virtual chunks: Megatron-Core's layout accepts
// empty stages (docs/source/api-guide/pipeline_parallel_layout.md at core_v0.14/0.15: "it is legal to have empty
// stages").
std::string stage_layout_problem(const Scenario& s, const Layout& l, Framework f) {
  if (f == Framework::Torchtitan) return torchtitan_split_problem(s, l);
  if (l.first_stage_layers <= 0 && l.last_stage_layers <= 0) return "";
  if (!traits(f).stage_layout)
    return std::string("a pipeline stage layout (first/last_stage_layers) is planned for megatron, nemo and "
                       "torchtitan only, not ") +
           to_string(f);
  const int L = s.model.layers;
  const int left = L - l.first_stage_layers - l.last_stage_layers;
  if (l.pp < 2 || l.first_stage_layers < 1 || l.last_stage_layers < 1 ||
      (l.pp == 2 ? left != 0 : left < l.pp - 2))
    return "first_stage_layers " + std::to_string(l.first_stage_layers) + " and last_stage_layers " +
           std::to_string(l.last_stage_layers) + " do not split " + std::to_string(L) + " layers over pp " +
           std::to_string(l.pp) + " with at least one layer on every rank";
  return "";
}

// Megatron-Core's interleaved schedule runs the micro-batches in groups of pp per virtual stage
// (microbatch_group_size_per_vp_stage, default pp: model_parallel_config.py) and refuses a step whose micro-batch
// count is below pp or leaves a last group of 1..pp-1 (pipeline_parallel/schedules.py,
// forward_backward_pipelining_with_interleaving: ValueError / RuntimeError at the first step).
std::string interleaved_microbatch_problem(const Scenario& s, const Layout& l, Framework f) {
  if (l.virtual_stages <= 1 || l.pp < 2 || !traits(f).megatron_core) return "";
  const int m = s.training.global_batch / std::max(1, l.dp * l.micro_batch);
  if (m >= l.pp && m % l.pp == 0) return "";
  return "virtual_stages = " + std::to_string(l.virtual_stages) + " (interleaved 1F1B) needs the micro-batches per "
         "step (global_batch / (dp * micro_batch) = " + std::to_string(m) + ") to be a multiple of pp = " +
         std::to_string(l.pp) + " (Megatron-Core runs them in groups of pp)";
}

}  // namespace

std::string layout_problem(const Scenario& s, const Layout& l, Framework f) {
  const ModelSpec& m = s.model;
  const int kv = m.kv_heads > 0 ? m.kv_heads : m.heads;
  if (l.tp < 1 || l.pp < 1 || l.dp < 1 || l.cp < 1 || l.virtual_stages < 1 || l.micro_batch < 1)
    return "tp, pp, dp, cp, virtual_stages and micro_batch must all be >= 1";
  if (long(l.tp) * l.pp * l.dp * l.cp != s.total_gpus())
    return "tp*pp*dp*cp = " + std::to_string(long(l.tp) * l.pp * l.dp * l.cp) + " but the allocation has " +
           std::to_string(s.total_gpus()) + " GPUs";
  if (m.heads % l.tp != 0) return "tp = " + std::to_string(l.tp) + " must divide heads (" + std::to_string(m.heads) + ")";
  if (kv % l.tp != 0) return "tp = " + std::to_string(l.tp) + " must divide kv_heads (" + std::to_string(kv) + ")";
  if (l.pp > m.layers) return "pp = " + std::to_string(l.pp) + " exceeds the layer count";
  if (const std::string why = schedule_problem(l, f); !why.empty()) return why;
  if (l.virtual_stages > 1) {
    if (l.pp < 2) return "virtual_stages > 1 needs pp >= 2";
    if (!traits(f).interleaving)
      return std::string("virtual_stages > 1 (interleaved schedule) is not supported by ") + to_string(f);
    const int per = (m.layers + l.pp - 1) / l.pp;  // torchtitan's own rule: torchtitan_split_problem
    if (f != Framework::Torchtitan && m.layers % l.pp == 0 && per % l.virtual_stages != 0)
      return "virtual_stages = " + std::to_string(l.virtual_stages) + " must divide the layers per stage (" +
             std::to_string(per) + ")";
  }
  if (s.training.global_batch % (l.dp * l.micro_batch) != 0)
    return "micro_batch * dp = " + std::to_string(l.dp * l.micro_batch) + " must divide global_batch (" +
           std::to_string(s.training.global_batch) + ")";
  if (const std::string why = interleaved_microbatch_problem(s, l, f); !why.empty()) return why;
  if (l.cp > 1 && m.seq_len % (2 * l.cp) != 0)
    return "cp = " + std::to_string(l.cp) + ": seq_len must be divisible by 2*cp (load-balanced chunks)";
  if (!traits(f).tensor_pipeline && (l.tp > 1 || l.pp > 1 || l.cp > 1))
    return std::string(to_string(f)) + ": no tensor/pipeline/context parallelism here (use torchtitan)";
  if (!traits(f).context_parallel && l.cp > 1)
    return std::string(to_string(f)) + ": context parallelism is not supported";
  if (!runs_zero(f, l.zero_stage, l.pp))
    return std::string("zero_stage ") + std::to_string(l.zero_stage) + " is not available in " + to_string(f) +
           (l.pp > 1 ? " with pipeline parallelism" : "");
  if (!runs_recompute(f, l.recompute)) return std::string(to_string(f)) + ": activation checkpointing is none or full";
  if (l.shard_group > 0) {
    if (l.zero_stage < 1) return "shard_group (a sharding scope) needs zero_stage >= 1";
    // Megatron-Core asserts the same for ZeRO-1 (parallel_state.py: "Data parallel size should be divisible by
    // partial DistOpt shard factor"), FSDP's and torchtitan's meshes for ZeRO >= 2.
    if ((l.dp * l.cp) % l.shard_group != 0) return "shard_group must divide dp*cp";
    if (l.zero_stage == 1 && !runs_shard_scope(f, 1))
      return std::string("shard_group with zero_stage 1 (distributed-optimizer instances, "
                         "--num-distributed-optimizer-instances) is planned for megatron and nemo only, not ") +
             to_string(f);
    if (l.zero_stage >= 2 && !runs_shard_scope(f, l.zero_stage))
      return std::string("shard_group (hybrid sharding) is planned for fsdp, torchtitan and automodel only, not ") +
             to_string(f);
  }
  if (const std::string why = moe_layout_problem(s, l, f); !why.empty()) return why;
  if (const std::string why = stage_layout_problem(s, l, f); !why.empty()) return why;
  return version_problem(s, l, f);  // what the framework version itself cannot run (framework_versions.h)
}

namespace {
// Where the host memory a GPU may pin for offloaded activations comes from (four fifths of the GPU's share), for the
// messages that refuse an offload: the site's or job's figure, the reference system's, or none known.
std::string host_memory_source(const Scenario& s, const Evaluator& ev) {
  const std::string share = "four fifths of its share of ";
  if (s.cluster.host_memory_gib > 0) return share + "[cluster] host_memory_gib or the job's memory Slurm allocated";
  if (ev.host_capacity_gib() > 0) return share + "its reference system's host memory; state [cluster] host_memory_gib";
  return "host memory unknown for " + s.cluster.gpu + ": state [cluster] host_memory_gib";
}
}  // namespace

Prediction to_prediction(const Scenario& s, const Evaluator& ev, const Evaluator::Result& r) {
  Prediction p;
  p.step_time_s = r.step_s;
  const double tokens = double(s.training.global_batch) * s.model.seq_len;
  const int n = s.total_gpus();
  p.tokens_per_s = tokens / r.step_s;
  p.tokens_per_s_per_gpu = p.tokens_per_s / n;
  p.model_tflops_per_gpu = r.model_flops_step / r.step_s / n / 1e12;
  p.hardware_tflops_per_gpu = r.hw_flops_step / r.step_s / n / 1e12;
  const double peak = s.training.precision == Precision::Fp16 ? ev.gpu().fp16_tflops : ev.gpu().bf16_tflops;
  p.mfu = peak > 0 ? p.model_tflops_per_gpu / peak : 0;
  p.memory = r.mem;
  p.memory_gib_per_gpu = r.mem_gib;
  p.memory_capacity_gib = ev.capacity_gib();
  p.host_memory_gib_per_gpu = r.host_gib;
  p.host_capacity_gib = ev.host_capacity_gib();
  p.fits = r.fits;
  p.microbatches = r.microbatches;
  p.breakdown = r.br;
  if (!r.fits && r.overflow_term >= 0)
    p.overflow = std::string(kMemTerm[r.overflow_term]) + " (" + fmt("%.1f", std::vector<double>{
        r.mem.weights, r.mem.gradients, r.mem.optimizer, r.mem.activations, r.mem.logits, r.mem.buffers}[r.overflow_term]) +
                 " GiB) is the largest term; total " + fmt("%.1f", r.mem_gib) + " GiB > " +
                 fmt("%.1f", ev.capacity_gib()) + " GiB per GPU";
  if (!r.host_fits)
    p.overflow += std::string(p.overflow.empty() ? "" : "; ") + "the offloaded activations (" +
                  fmt("%.1f", r.host_gib) + " GiB per GPU) exceed the " + fmt("%.1f", ev.host_capacity_gib()) +
                  " GiB of host memory a GPU may pin (" + host_memory_source(s, ev) + ")";
  return p;
}

Prediction predict(const Scenario& s) {
  validate(s);
  return predict(s, layout_from_scenario(s));
}

Prediction predict(const Scenario& s, const Layout& layout) { return predict(s, layout, shipped_params()); }

Prediction predict(const Scenario& s, const Layout& layout, const ModelParams& params) {
  validate(s);
  const std::string problem = layout_problem(s, layout, s.training.framework);
  if (!problem.empty()) throw std::invalid_argument("parallel: " + problem);
  Evaluator ev(s, s.training.framework, params);
  // torchtitan splits the stages itself: price its split, not an even one.
  return to_prediction(s, ev, ev.evaluate(with_torchtitan_split(s, s.training.framework, layout)));
}

// ---------------------------------------------------------------------------------------------------------------
namespace {

struct Ranked {
  double t;
  int complexity;
  Framework f;
  Layout l;
};

// Layouts predicted within this share of each other are ties (the simpler one wins: docs/model.md).
constexpr double kTieBreakMargin = 0.01;

int recompute_rank(Recompute r) { return r == Recompute::None ? 0 : r == Recompute::Selective ? 1 : 2; }

// Documented tie-break (docs/model.md): simpler layouts first: fewer model-parallel ways (tp*pp*cp*v), then lower
// ZeRO stage, less recompute, no hybrid sharding, larger micro-batch; finally the enumeration order.
// MoE: expert ways (ep * etp) count as model-parallel ways, and the plain all-to-all dispatcher is the simplest.
long simplicity_key(const Layout& l) {
  const int dispatcher = l.dispatcher == Dispatcher::AllToAll ? 0 : l.dispatcher == Dispatcher::AllGather ? 1 : 2;
  // CPU activation offload pins host memory the job may need elsewhere and rests on one measured kind of run:
  // within the tie margin a plan without it is simpler.
  const long offload = l.offload_layers > 0 ? 500000L : 0;
  return (long(l.tp) * l.pp * l.cp * l.virtual_stages * l.ep * l.etp) * 1000000L + offload + dispatcher * 100000L +
         l.zero_stage * 10000L + recompute_rank(l.recompute) * 1000L + (l.shard_group > 0 ? 100 : 0) +
         (99 - std::min(99, l.micro_batch));
}

bool better(const Ranked& a, const Ranked& b) {
  if (a.t != b.t) return a.t < b.t;
  return simplicity_key(a.l) < simplicity_key(b.l);
}

template <class T>
bool allowed(const std::vector<T>& v, T x) {
  return v.empty() || std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

namespace {

// What the search keeps while it walks the layouts: the `keep` fastest so far, counts, the leanest layout seen
// (for "nothing fits"), and the time budget.
struct SearchState {
  size_t keep = 0;
  std::vector<Ranked> best;
  long long evaluated = 0, pruned_memory = 0;
  // A fixed offload_layers whose activations exceed the host memory a GPU may pin (the least such need, GiB).
  long long pruned_host = 0;
  double least_host_gib = 1e30;
  double least_mem = 1e30;
  Layout least_layout;
  Framework least_fw = Framework::Megatron;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  bool out_of_time = false;
  double margin = kMemoryMargin;  // share of the GPU's memory kept free (SearchLimits::memory_margin)
  // Adam's moments in 16 bits change the numerics, not only the memory: the search uses them only where no layout
  // fits with fp32 optimizer states (a second pass), unless the scenario fixes them.
  bool lean_optimizer = false;

  void offer(const Ranked& rk) {
    if (best.size() < keep || better(rk, best.back())) {
      best.insert(std::upper_bound(best.begin(), best.end(), rk, better), rk);
      if (best.size() > keep) best.pop_back();
    }
  }
  // Checked every 1024 candidates: the clock costs more than a candidate does.
  bool time_is_up() {
    if (!out_of_time && (evaluated & 1023) == 0 && std::chrono::steady_clock::now() > deadline) out_of_time = true;
    return out_of_time;
  }
};

// The scenario resolved once per framework searched (resolved.h): the search, the ranked predictions and the
// "nothing fits" message all read the same evaluator.
struct Evaluators {
  std::map<Framework, Evaluator> by_framework;
  const Evaluator& get(const Scenario& s, Framework f, const ModelParams& params, double headroom_gib) {
    auto it = by_framework.find(f);
    if (it == by_framework.end()) {
      it = by_framework.emplace(f, Evaluator(s, f, params)).first;
      it->second.headroom_gib = headroom_gib;
    }
    return it->second;
  }
};

// One (tp, pp, cp) split of the GPUs, as the search enumerates it.
struct Split {
  int tp, pp, cp, dp, per_replica;
  bool even_layers;
};

// Micro-batch sizes for a data-parallel replica: divisors of its share of the batch within the limits.
std::vector<int> micro_batches(int per_replica, const ParallelSpec& c, const SearchLimits& limits) {
  std::vector<int> out;
  for (int mb : divisors(per_replica)) {
    if (mb < std::max(1, limits.min_micro_batch)) continue;
    if (limits.max_micro_batch && mb > limits.max_micro_batch) break;
    if (c.micro_batch && *c.micro_batch != mb) continue;
    out.push_back(mb);
  }
  return out;
}

// Virtual pipeline stages: divisors of the layers per stage (interleaving needs pp >= 2 and a framework that has it).
std::vector<int> virtual_stage_counts(const Scenario& s, Framework f, const Split& d) {
  std::vector<int> vs{1};
  if (d.pp < 2 || !traits(f).interleaving) return vs;
  const int L = s.model.layers;
  if (f == Framework::Torchtitan) {  // what torchtitan's own split builds with its default weights
    for (int v = 2; v * d.pp <= L; ++v) {
      const auto split = torchtitan_default_split(L, d.pp, v);
      if (split && *std::min_element(split->rank_layers.begin(), split->rank_layers.end()) >= v) vs.push_back(v);
    }
    return vs;
  }
  const bool layout = !d.even_layers && (L + 2) % d.pp != 0;  // an explicit MoE layout: no empty virtual stage
  const int per = d.even_layers ? L / d.pp : layout ? (L + d.pp - 1) / d.pp : (L + 2) / d.pp;
  for (int v = 2; v <= per; ++v)
    if (per % v == 0 && (!layout || d.pp * v <= L)) vs.push_back(v);
  return vs;
}

// Sharding-scope sizes: none, or one node's GPUs for FSDP-style ZeRO >= 2 across nodes. The ZeRO-1 scope (Megatron's
// distributed-optimizer instances) only where the scenario fixes it: the model prices it at best level with full
// sharding (docs/model.md, ZeRO-1 sharding scope), so offering it would only fill the alternatives with near-copies.
std::vector<int> shard_groups(const Scenario& s, Framework f, int z, const Split& d) {
  const int g = s.cluster.gpus_per_node, replicas = d.dp * d.cp;
  if (const auto& want = s.parallel.shard_group) {  // the scenario fixes the scope: that one, where it can be
    const bool ok = *want == 0 || (runs_shard_scope(f, z) && replicas % *want == 0);
    return ok ? std::vector<int>{*want} : std::vector<int>{};
  }
  std::vector<int> groups{0};
  if (traits(f).hybrid_shard && z >= 2 && replicas > g && replicas % g == 0) groups.push_back(g);
  return groups;
}

// What a plan may use: the GPU's memory less the margin, of which the evaluator's headroom (policy, OOM history) is
// already part of the model's reserve.
double usable_gib(const Evaluator& ev, double margin) {
  return ev.capacity_gib() - std::max(0.0, margin * ev.capacity_gib() - ev.headroom_gib);
}

// Every micro-batch of one fully chosen layout but the micro-batch, smallest first, until memory runs out.
// Megatron and NeMo take an explicit stage layout (--pipeline-model-parallel-layout): the search balances the
// stages when the scenario leaves the split open, and keeps the framework's own split where that is as fast or the
// balanced one does not fit.
bool plans_stages(const Scenario& s, Framework f, const Layout& l) {
  return traits(f).stage_layout && l.pp > 1 && !s.parallel.first_stage_layers &&
         !s.parallel.last_stage_layers;
}

Ranked best_split(const Scenario& s, const Evaluator& ev, Framework f, const Layout& l, double usable) {
  const Evaluator::Result r = ev.evaluate(l);
  Ranked out{r.step_s, 0, f, l};
  if (torchtitan_splits_stages(s, f, l) && schedule_of(l) == PipelineSchedule::Zbv) return out;  // a V: not planned
  if (torchtitan_splits_stages(s, f, l) && !s.parallel.first_stage_layers && !s.parallel.last_stage_layers) {
    // torchtitan takes no layout, only the weights of its ends: the weights nearest a cost balance, where that is
    // faster beyond the search's 1 % tie-break (its defaults are the least surprising arguments).
    const Layout balanced = ev.with_planned_stages(l, r);
    if (balanced.first_stage_layers <= 0) return out;
    const std::optional<Layout> near =
        torchtitan_split_near(s, l, balanced.first_stage_layers, balanced.last_stage_layers);
    if (!near || ev.memory_gib(*near) > usable) return out;
    const double t = ev.evaluate(*near).step_s;
    if (t < out.t * (1 - kTieBreakMargin)) out = Ranked{t, 0, f, *near};
    return out;
  }
  if (!plans_stages(s, f, l)) return out;
  const Layout planned = ev.with_planned_stages(l, r);
  if (planned.first_stage_layers <= 0 || ev.memory_gib(planned) > usable) return out;
  const double t = ev.evaluate(planned).step_s;
  if (t < out.t) out = Ranked{t, 0, f, planned};
  return out;
}

// What the plan's memory features are and cost (plan notes; plan.json carries the notes).
std::string memory_features_note(const Scenario& s, const Layout& l, const Prediction& p) {
  std::string out;
  auto add = [&](const std::string& part) { out += (out.empty() ? "memory features: " : "; ") + part; };
  if (l.precision_aware_optimizer())
    add(std::string("Adam's moments in ") + to_string(l.optimizer_moments) + " and main parameters in " +
        to_string(l.main_params) + " (Megatron-Core's precision-aware optimizer; the model charges no time for it: "
        "the same optimizer step, no measurement says otherwise)");
  if (l.recompute == Recompute::Selective && l.recompute_modules != 0)
    add("selective recompute of " + recompute_modules_to_string(l.recompute_modules) + " (" +
        fmt("%.3f", p.breakdown.recompute) + " s a step)");
  if (l.offload_layers > 0)
    add("the activations of " + std::to_string(l.offload_layers) + " of " + std::to_string(s.model.layers) +
        " layers offloaded to host memory (" + fmt("%.1f", p.host_memory_gib_per_gpu) + " GiB pinned per GPU of " +
        fmt("%.1f", p.host_capacity_gib) + " it may take; " + fmt("%.3f", p.breakdown.offload) +
        " s a step of the copies the neighbouring layers' compute does not hide)");
  return out;
}

// A layout that does not fit as it is, with the memory features the scenario leaves open (docs/model.md §3), in
// the order of what they cost: Adam's moments in bf16 (no time in the model), then either more modules
// recomputed (selective layouts: the norms, the MLP, the shared experts' and experts' activations too) or the
// fewest layers whose activations go to host memory (layouts without recompute, pp 1). Each variant that fits is
// offered; false when none does.
bool offer_memory_features(const Scenario& s, const Evaluator& ev, Framework f, const Layout& l, double usable,
                           SearchState& st) {
  using namespace recompute_module;
  const ParallelSpec& c = s.parallel;
  auto fits = [&](const Layout& x) { return version_problem(s, x, f).empty() && ev.memory_gib(x) <= usable; };
  Layout base = l;
  if (st.lean_optimizer && !c.optimizer_moments && !c.main_params && l.zero_stage == 1) {
    Layout lean = l;
    lean.optimizer_moments = StateDtype::Bf16;
    if (version_problem(s, lean, f).empty()) base = lean;
    if (fits(lean)) {
      st.offer(best_split(s, ev, f, lean, usable));
      return true;
    }
  }
  bool offered = false;
  if (l.recompute == Recompute::Selective && !c.recompute_modules) {
    Layout more = base;
    more.recompute_modules = recompute_module_set(s, base, s.model.generalised_layer()) | kLayernorm | kMlp |
                             (s.model.is_moe() ? kMoeAct | kSharedExperts : 0u);
    if (fp8_refuses_output_recompute(s)) more.recompute_modules &= ~(kLayernorm | kMoeAct);
    if (fits(more)) st.offer(best_split(s, ev, f, more, usable)), offered = true;
  }
  if (l.recompute == Recompute::None && l.pp == 1 && !c.offload_layers) {
    Layout off = base;
    for (int n = 1; n < s.model.layers; ++n) {
      off.offload_layers = n;
      if (!version_problem(s, off, f).empty() || ev.host_offload_gib(off) > ev.host_capacity_gib()) break;
      if (ev.memory_gib(off) <= usable) {
        st.offer(best_split(s, ev, f, off, usable));
        offered = true;
        break;
      }
    }
  }
  return offered;
}

void search_micro_batches(const Scenario& s, const Evaluator& ev, Framework f, Layout l, const std::vector<int>& mbs,
                          SearchState& st) {
  for (int mb : mbs) {
    l.micro_batch = mb;
    // Offloaded activations are pinned host memory; a larger micro-batch pins more.
    if (const double host = ev.host_offload_gib(l); host > ev.host_capacity_gib()) {
      ++st.pruned_host;
      st.least_host_gib = std::min(st.least_host_gib, host);
      return;
    }
    const double mem = ev.memory_gib(l);
    if (mem < st.least_mem) {
      st.least_mem = mem;
      st.least_layout = l;
      st.least_fw = f;
    }
    const double usable = usable_gib(ev, st.margin);
    if (mem > usable) {
      ++st.pruned_memory;
      if (!offer_memory_features(s, ev, f, l, usable, st)) return;  // a larger micro-batch needs more memory still
      ++st.evaluated;
      if (st.time_is_up()) return;
      continue;
    }
    st.offer(best_split(s, ev, f, l, usable));
    ++st.evaluated;
    if (st.time_is_up()) return;
  }
}

// Expert layouts of one split (MoE): ep over the divisors of the experts that fold into tp x cp x dp, expert TP 1
// or the attention's TP, and the dispatchers the framework and GPUs have (all-gather only inside an island, where
// sending every token to every rank is cheap). A dense model has one: no experts.
struct ExpertLayout {
  int ep, etp;
  Dispatcher dispatcher;
};
std::vector<ExpertLayout> expert_layouts(const Scenario& s, Framework f, const Split& d) {
  const ParallelSpec& c = s.parallel;
  if (!s.model.is_moe()) return {{1, 1, Dispatcher::AllToAll}};
  if (!traits(f).expert_parallel) return {{1, 1, Dispatcher::AllToAll}};
  const long folded = long(d.tp) * d.cp * d.dp;
  const int island = std::max(std::max(1, s.cluster.nvlink_domain), s.cluster.gpus_per_node);
  std::vector<int> etps{1};
  if (d.tp > 1) etps.push_back(d.tp);
  std::vector<ExpertLayout> out;
  for (int etp : etps) {
    if (c.etp && *c.etp != etp) continue;
    for (int ep : divisors(s.model.moe_experts)) {
      if (folded % (long(ep) * etp) || (c.ep && *c.ep != ep)) continue;
      // One expert way dispatches nothing: one layout, "alltoall" by convention, even for a framework without that
      // dispatcher (AutoModel), whose HF MoE models run only so (its own ones too, when ep 1 is best).
      if (ep * etp == 1 && !c.dispatcher) {
        out.push_back({1, 1, Dispatcher::AllToAll});
        continue;
      }
      for (Dispatcher disp : traits(f).dispatchers) {
        if (c.dispatcher && *c.dispatcher != disp) continue;
        if (ep * etp == 1 && disp != Dispatcher::AllToAll && !c.dispatcher) continue;  // nothing to dispatch
        if (disp == Dispatcher::AllGather && ep * etp > island && !c.dispatcher) continue;
        out.push_back({ep, etp, disp});
      }
    }
  }
  return out;
}

// The inner loops for one split: expert layout, virtual stages, ZeRO stage, hybrid-sharding group, recompute,
// micro-batch.
void search_split(const Scenario& s, Framework f, const Evaluator& ev, const SearchLimits& limits, const Split& d,
                  SearchState& st) {
  const ParallelSpec& c = s.parallel;
  const std::vector<int> mbs = micro_batches(d.per_replica, c, limits);
  if (mbs.empty()) return;
  const bool sp = c.sequence_parallel ? *c.sequence_parallel : d.tp > 1;
  if (sp && d.tp == 1 && c.sequence_parallel) return;
  for (const ExpertLayout& x : expert_layouts(s, f, d))
  for (int v : virtual_stage_counts(s, f, d)) {
    if (limits.max_ep > 0 && x.ep > limits.max_ep) continue;  // the site's caps on expert parallelism
    if (x.ep * x.etp > 1 && !allowed(limits.dispatchers, x.dispatcher)) continue;
    if (c.virtual_stages && *c.virtual_stages != v) continue;
    // A fixed schedule: only the chunk counts it runs, and no pipeline-less layout for the schedules that need one.
    if (c.pipeline_schedule && (!schedule_takes(*c.pipeline_schedule, v) ||
                                (d.pp > 1 && !runs_schedule(f, *c.pipeline_schedule))))
      continue;
    for (int z = 0; z <= 3; ++z) {
      if (!runs_zero(f, z, d.pp) || (c.zero_stage && *c.zero_stage != z) || !allowed(limits.zero_stages, z))
        continue;
      for (int sg : shard_groups(s, f, z, d)) {
        for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full}) {
          if (!runs_recompute(f, r) || (c.recompute && *c.recompute != r) || !allowed(limits.recompute_modes, r))
            continue;
          if ((c.recompute_modules && r != Recompute::Selective) || (c.offload_layers.value_or(0) > 0 && r != Recompute::None))
            continue;
          Layout l;
          l.tp = d.tp; l.pp = d.pp; l.cp = d.cp; l.dp = d.dp; l.virtual_stages = v; l.schedule = c.pipeline_schedule;
          l.zero_stage = z; l.recompute = r; l.sequence_parallel = sp && d.tp > 1; l.shard_group = sg;
          l.ep = x.ep; l.etp = x.etp; l.dispatcher = x.dispatcher;
          l.first_stage_layers = c.first_stage_layers.value_or(0);
          l.last_stage_layers = c.last_stage_layers.value_or(0);
          l = with_torchtitan_split(s, f, l);
          l.optimizer_moments = c.optimizer_moments.value_or(StateDtype::Fp32);
          l.main_params = c.main_params.value_or(StateDtype::Fp32);
          l.recompute_modules = r == Recompute::Selective ? c.recompute_modules.value_or(0) : 0;
          l.offload_layers = c.offload_layers.value_or(0);
          if (s.model.is_moe() && !moe_layout_problem(s, l, f).empty()) continue;
          if (!version_problem(s, l, f).empty()) continue;  // the framework version would refuse it at launch
          if (!cuda_connections_problem(s, l, f, limits.cuda_device_max_connections).empty()) continue;
          search_micro_batches(s, ev, f, l, mbs, st);
          if (st.out_of_time) return;
        }
      }
    }
  }
}

// Pipeline degrees that split the layers evenly (or, in Megatron/NeMo, with the embedding and head as stages).
bool pipeline_split_ok(const Scenario& s, Framework f, int pp, bool* even) {
  *even = s.model.layers % pp == 0;
  if (f == Framework::Torchtitan) {  // torchtitan splits any layer count (torchtitan_stages.h)
    const std::vector<int> ranks = torchtitan_rank_layers(s.model.layers, pp, 1, {}, nullptr);
    return !ranks.empty() && *std::min_element(ranks.begin(), ranks.end()) >= 1;
  }
  const bool mcore = traits(f).megatron_core;
  const bool emb_split = !*even && mcore && (s.model.layers + 2) % pp == 0;
  // MoE models (DeepSeek-V3's 61 layers) split unevenly with Megatron's first/last-stage layer counts
  // (--decoder-first/last-pipeline-num-layers), at least two layers a stage; the model charges every stage the
  // largest stage's layers.
  const bool uneven_moe = !*even && !emb_split && mcore && s.model.is_moe() && s.model.layers >= 2 * pp;
  return *even || emb_split || uneven_moe;
}

// The outer loops for one framework: tensor, pipeline and context-parallel degrees; data parallelism is the rest.
void search_framework(const Scenario& s, Framework f, const Evaluator& ev, const SearchLimits& limits,
                      SearchState& st) {
  const ParallelSpec& c = s.parallel;
  const int N = s.total_gpus(), B = s.training.global_batch;
  const int kv = s.model.kv_heads > 0 ? s.model.kv_heads : s.model.heads;
  const int domain = std::max(1, s.cluster.nvlink_domain);
  const bool model_parallel_ok = traits(f).tensor_pipeline;
  const bool cp_ok = traits(f).context_parallel;
  for (int tp : divisors(N)) {
    if ((!model_parallel_ok && tp > 1) || st.out_of_time) break;
    if ((c.tp && *c.tp != tp) || (limits.max_tp && tp > limits.max_tp) || s.model.heads % tp || kv % tp) continue;
    // TP inside a node is searched at its real cost (NVLink, or PCIe / bridges where the domain is smaller);
    // across nodes only when the limits allow it.
    if (!limits.allow_tp_beyond_nvlink && tp > 1 && tp > std::max(domain, s.cluster.gpus_per_node)) continue;
    for (int pp : divisors(N / tp)) {
      if ((!model_parallel_ok && pp > 1) || pp > s.model.layers || st.out_of_time) break;
      bool even = true;
      if ((c.pp && *c.pp != pp) || (limits.max_pp && pp > limits.max_pp) || !pipeline_split_ok(s, f, pp, &even))
        continue;
      for (int cp : divisors(N / tp / pp)) {
        if ((!cp_ok && cp > 1) || st.out_of_time) break;
        if ((c.cp && *c.cp != cp) || (limits.max_cp && cp > limits.max_cp) || (cp > 1 && s.model.seq_len % (2 * cp)))
          continue;
        const int dp = N / tp / pp / cp;
        if ((c.dp && *c.dp != dp) || B % dp) continue;
        search_split(s, f, ev, limits, Split{tp, pp, cp, dp, B / dp, even}, st);
      }
    }
  }
}

// Why the scenario itself rules framework f out, whatever the layout ("" if it does not): the scenario as stated
// for f at f's default version (a stated fused loss, FP8 or fp16 the framework has no setting for, a kernel the
// site lacks). tp_comm_overlap is left out: it acts at tp > 1 only, and the per-layout checks drop just the layouts
// that would need it.
std::string scenario_refuses(const Scenario& s, Framework f) {
  Scenario other = s;
  other.training.framework = f;
  other.training.framework_version.clear();
  other.training.tp_comm_overlap.reset();
  try {
    validate(other);
  } catch (const std::exception& e) {
    std::string why = e.what();
    // validate() files the stack's refusals under training.framework_version; the version is f's default here.
    const std::string prefix = "training.framework_version: ";
    if (why.rfind(prefix, 0) == 0) why.erase(0, prefix.size());
    return why;
  }
  return "";
}

// The frameworks to search: the scenario's, or with --all-frameworks (or a policy that replaces it) the others the
// scenario does not rule out; those it does, with the reason, in `refused` (a plan must say why a framework never
// entered the comparison).
std::vector<Framework> frameworks_to_search(const Scenario& s, const SearchLimits& limits,
                                            std::vector<std::string>* refused = nullptr) {
  std::vector<Framework> candidates;
  if (limits.all_frameworks) {
    // NeMo and AutoModel are priced as the stack they run on (Megatron-Core, torchtitan's PyTorch-native one): each
    // joins the comparison only when the scenario names it.
    for (Framework f : known_frameworks())
      if (allowed(limits.frameworks, f) && (f != Framework::Nemo || s.training.framework == Framework::Nemo) &&
          (f != Framework::Automodel || s.training.framework == Framework::Automodel))
        candidates.push_back(f);
  } else if (!allowed(limits.frameworks, s.training.framework)) {
    candidates = limits.frameworks;
  } else {
    return {s.training.framework};
  }
  std::vector<Framework> fws;
  for (Framework f : candidates) {
    const std::string why = f == s.training.framework ? "" : scenario_refuses(s, f);
    if (why.empty()) fws.push_back(f);
    else if (refused) refused->push_back(std::string(to_string(f)) + " not searched: " + why);
  }
  return fws;
}

// "Nothing fits": what the leanest layout needs, split into what memory and what batch divisibility stand in the way.
std::string nothing_fits_message(const Scenario& s, const Evaluator& ev, const SearchState& st) {
  if (st.least_mem >= 1e29 && st.pruned_host > 0)
    return "nothing fits: the fixed offload_layers=" + std::to_string(s.parallel.offload_layers.value_or(0)) +
           " pins at least " + fmt("%.1f", st.least_host_gib) + " GiB of host memory per GPU, and a GPU may pin " +
           fmt("%.1f", ev.host_capacity_gib()) + " (" + host_memory_source(s, ev) +
           "): offload fewer layers or give the job more memory";
  if (st.least_mem >= 1e29) {  // not memory: no layout was valid to begin with
    const std::string why = no_valid_layout_reason(s, st.least_fw);
    return "nothing fits: no valid layout for these constraints: " +
           (why.empty() ? std::string("every valid layout is outside the search limits (the site policy's caps on "
                                      "tp, pp, cp, ep, ZeRO stages, recomputation, dispatchers or the micro-batch, or the "
                                      "CUDA_DEVICE_MAX_CONNECTIONS it imposes, under which the framework would not "
                                      "start)")
                        : why);
  }
  std::string msg = "nothing fits in " + fmt("%.1f", usable_gib(ev, st.margin)) + " GiB per GPU (" +
                    fmt("%.1f", ev.capacity_gib()) + " less the " + fmt("%.0f", 100 * st.margin) +
                    " % memory margin)";
  MemoryBreakdown mb;
  ev.memory_gib(st.least_layout, &mb);
  // Capped: a model far too large for the cluster must not print "about -2147483648 nodes".
  const double need_nodes = std::min(1e9, std::ceil(s.cluster.nodes * st.least_mem / usable_gib(ev, st.margin)));
  const Layout& l = st.least_layout;
  return msg + "; the leanest layout (tp=" + std::to_string(l.tp) + " pp=" + std::to_string(l.pp) +
         " cp=" + std::to_string(l.cp) + (l.ep > 1 ? " ep=" + std::to_string(l.ep) : std::string()) +
         " micro_batch=" + std::to_string(l.micro_batch) +
         " zero_stage=" + std::to_string(l.zero_stage) + " recompute=" + to_string(l.recompute) + ") needs " +
         fmt("%.1f", st.least_mem) + " GiB (weights+grads+optimizer " +
         fmt("%.1f", mb.weights + mb.gradients + mb.optimizer) + ", activations " +
         fmt("%.1f", mb.activations + mb.logits) + "). What would fit: about " + fmt("%.0f", need_nodes) +
         " nodes instead of " + std::to_string(s.cluster.nodes) +
         ", a GPU with more memory, full recompute and micro_batch 1 if a constraint excludes them, ZeRO-3/FSDP "
         "sharding, or a shorter sequence";
}

// Tie-break: among candidates within 1 % of the fastest, the simplest wins (deterministic).
size_t tie_break_winner(const std::vector<Ranked>& best) {
  const double tmin = best.front().t;
  size_t win = 0;
  for (size_t i = 1; i < best.size(); ++i)
    if (best[i].t <= tmin * (1 + kTieBreakMargin) && simplicity_key(best[i].l) < simplicity_key(best[win].l)) win = i;
  return win;
}

// "runner-up is X % slower, mostly <term>": the step-time term that differs most.
std::string runner_up_note(const Prediction& winner, const Prediction& runner_up) {
  const Breakdown& w = winner.breakdown;
  const Breakdown& o = runner_up.breakdown;
  // The tie-break may put a faster layout second (within 1 %, the simpler one wins): say so, never "-0.4 % slower".
  if (runner_up.step_time_s < winner.step_time_s)
    return "runner-up is " + fmt("%.1f", 100 * (1 - runner_up.step_time_s / winner.step_time_s)) +
           " % faster by the model, within the 1 % tie-break margin: the simpler layout was chosen";
  const auto gap = [&](const BreakdownTerm& t) { return o.*t.field - w.*t.field; };
  const BreakdownTerm* k = &kBreakdownTerms[0];
  for (const auto& t : kBreakdownTerms)
    if (gap(t) > gap(*k)) k = &t;
  return "runner-up is " + fmt("%.1f", 100 * (runner_up.step_time_s / winner.step_time_s - 1)) + " % slower, mostly " +
         k->name + " (+" + fmt("%.3f", gap(*k)) + " s)";
}

// The stage layout the search balanced, and the split it replaced.
std::string stage_layout_note(const Scenario& s, const Layout& l) {
  const int L = s.model.layers, p = l.pp;
  const int rest = L - l.first_stage_layers - l.last_stage_layers;
  std::string mid = p > 2 ? std::to_string(rest / (p - 2)) + (rest % (p - 2) ? "-" + std::to_string(rest / (p - 2) + 1) : "")
                          : std::string();
  return "pipeline stages balanced by cost: " + std::to_string(l.first_stage_layers) + " layers and the embedding on "
         "the first rank, " + (p > 2 ? mid + " on each middle rank, " : std::string()) +
         std::to_string(l.last_stage_layers) + " and the LM head, loss" + (s.model.mtp_layers > 0 ? " and MTP" : "") +
         " on the last (instead of " + std::to_string((L + p - 1) / p) + " a rank; the framework arguments carry "
         "the layout)";
}

// Which memory margin the plan kept, and why (the model's own error).
std::string margin_note(const Evaluator& ev, double margin, double plan_gib) {
  const double usable = usable_gib(ev, margin);
  return "memory margin: plans were kept to " + fmt("%.1f", usable) + " of " + fmt("%.1f", ev.capacity_gib()) +
         " GiB per GPU (" + fmt("%.0f", 100 * margin) + " % kept free for the memory model's own error" +
         (ev.headroom_gib > 0 ? ", the policy's or the site's OOM-history headroom of " + fmt("%.1f", ev.headroom_gib) +
                                    " GiB counted in it"
                              : std::string()) +
         "); this plan needs " + fmt("%.1f", plan_gib) + " GiB";
}

Prediction evaluate_ranked(const Scenario& s, const Evaluator& ev, const Ranked& r) {
  return to_prediction(s, ev, ev.evaluate(r.l));
}

}  // namespace

Plan advise(const Scenario& s, const SearchLimits& limits) {
  const auto t0 = std::chrono::steady_clock::now();
  validate(s);
  const ModelParams& params = limits.params ? *limits.params : shipped_params();
  SearchState st;
  st.keep = size_t(std::max(limits.top_n, 1)) + 32;
  st.least_fw = s.training.framework;
  st.margin = std::clamp(limits.memory_margin.value_or(kMemoryMargin), 0.0, 0.9);
  if (limits.time_budget_s > 0)
    st.deadline = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(limits.time_budget_s));
  Evaluators evs;
  auto ev_for = [&](Framework f) -> const Evaluator& { return evs.get(s, f, params, limits.memory_headroom_gib); };
  std::vector<std::string> refused;
  const std::vector<Framework> searched = frameworks_to_search(s, limits, &refused);
  if (searched.empty() && !refused.empty()) {
    std::string why = "nothing fits: no framework the search may use runs this scenario";
    for (const auto& r : refused) why += "; " + r;
    throw NothingFits(why);
  }
  for (Framework f : searched) search_framework(s, f, ev_for(f), limits, st);
  const bool lean_pass = st.best.empty() && !st.out_of_time && !s.parallel.optimizer_moments && !s.parallel.main_params;
  if (lean_pass) {  // nothing fits with fp32 optimizer states: again, with Adam's moments in bf16 where they fit
    const SearchState first = st;
    st.lean_optimizer = true;
    for (Framework f : frameworks_to_search(s, limits)) search_framework(s, f, ev_for(f), limits, st);
    st.least_mem = first.least_mem, st.least_layout = first.least_layout, st.least_fw = first.least_fw;
  }
  if (st.best.empty() && st.out_of_time)
    throw NothingFits("the search stopped at its time budget of " + fmt("%.1f", limits.time_budget_s) + " s after " +
                      std::to_string(st.evaluated) + " layouts, none of which fit; fix more of the layout (tp, pp, "
                      "micro_batch) to narrow the search");
  if (st.best.empty()) throw NothingFits(nothing_fits_message(s, ev_for(st.least_fw), st));

  const size_t win = tie_break_winner(st.best);
  Plan plan;
  plan.framework = st.best[win].f;
  plan.layout = st.best[win].l;
  plan.prediction = evaluate_ranked(s, ev_for(st.best[win].f), st.best[win]);
  for (size_t i = 0; i < st.best.size() && int(plan.alternatives.size()) < limits.top_n; ++i)
    if (i != win)
      plan.alternatives.push_back({st.best[i].f, st.best[i].l, evaluate_ranked(s, ev_for(st.best[i].f), st.best[i])});
  plan.env = synthesize_env(s, plan.framework, plan.layout, plan.prediction.memory_gib_per_gpu);
  for (auto& n : network_notes(s)) plan.notes.push_back(std::move(n));
  plan.candidates_evaluated = st.evaluated;
  plan.search_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  plan.notes.push_back(std::to_string(st.evaluated) + " layouts evaluated, " + std::to_string(st.pruned_memory) +
                       " pruned by memory");
  for (auto& n : refused) plan.notes.push_back(std::move(n));
  plan.notes.push_back(margin_note(ev_for(plan.framework), st.margin, plan.prediction.memory_gib_per_gpu));
  if (plan.framework == Framework::Torchtitan && plan.layout.pp > 1)
    plan.notes.push_back(torchtitan_split_note(s, plan.layout));
  else if (plan.layout.first_stage_layers > 0 && !s.parallel.first_stage_layers)
    plan.notes.push_back(stage_layout_note(s, plan.layout));
  if (std::string n = memory_features_note(s, plan.layout, plan.prediction); !n.empty()) plan.notes.push_back(n);
  if (lean_pass)
    plan.notes.push_back("no layout fits with fp32 optimizer states (Adam's moments and main parameters); with the "
                         "moments in bf16 (Megatron-Core's precision-aware optimizer) this one does: a numerics "
                         "change, used only because nothing else fits");
  if (st.out_of_time)
    plan.notes.push_back("the search stopped at its time budget of " + fmt("%.1f", limits.time_budget_s) +
                         " s: this plan is the best of the layouts evaluated, not of all");
  if (win != 0)
    plan.notes.push_back("tie-break: within 1 % of the fastest (" + fmt("%.3f", st.best.front().t) +
                         " s), the simpler layout was preferred");
  if (!plan.alternatives.empty()) plan.notes.push_back(runner_up_note(plan.prediction, plan.alternatives.front().prediction));
  if (s.training.pipeline_split == PipelineSplit::Balanced && plan.layout.pp > 1) {
    // The emitted arguments of every framework paratune writes split layers evenly: say what the plan assumed.
    const StageSplit split = pipeline_stages(s.model, PipelineSplit::Balanced, plan.layout.pp);
    std::string counts;
    for (int n : split.layers) counts += (counts.empty() ? "" : ",") + std::to_string(n);
    plan.notes.push_back("pipeline_split = balanced: the prediction assumes " + counts + " layers per stage (LM head "
                         "on stage " + std::to_string(split.head_rank) + "); the " + to_string(plan.framework) +
                         " arguments do not set per-stage layer counts, so the stack must split them itself");
  }
  if ((plan.framework == Framework::Fsdp || plan.framework == Framework::Torchtitan ||
       plan.framework == Framework::Automodel) && plan.layout.zero_stage >= 2)
    plan.notes.push_back("CUDA_DEVICE_MAX_CONNECTIONS left unset: FSDP prefetching overlaps best with several queues");
  for (auto& n : kernel_notes(s, plan)) plan.notes.push_back(std::move(n));  // optional kernels the plan uses
  plan.notes.push_back(checkpoint_note(plan));  // the format its checkpoints have, what a resumed run may change
  return plan;
}

}  // namespace paratune::advisor
