// predict() and advise(): the exhaustive, memory-pruned search over valid layouts.
#include "paratune/advisor/advisor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include "paratune/advisor/env.h"
#include "paratune/advisor/model.h"

namespace paratune::advisor {

namespace {

int default_zero(Framework f) {
  switch (f) {
    case Framework::Megatron:
    case Framework::Nemo: return 1;  // distributed optimizer
    case Framework::DeepSpeed: return 1;
    case Framework::Fsdp:
    case Framework::Torchtitan: return 3;
  }
  return 0;
}

Recompute default_recompute(Framework f) {
  return (f == Framework::Megatron || f == Framework::Nemo) ? Recompute::Selective : Recompute::None;
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

const char* kMemTerm[] = {"weights", "gradients", "optimizer states", "activations", "logits", "buffers"};

bool supports_zero(Framework f, int z, int pp) {
  switch (f) {
    case Framework::Megatron:
    case Framework::Nemo: return z == 0 || z == 1 || (z == 3 && pp == 1);
    case Framework::DeepSpeed: return pp == 1 ? (z >= 0 && z <= 3) : z <= 1;  // pipeline engine: ZeRO 0/1 only
    case Framework::Fsdp: return z == 0 || z == 2 || z == 3;
    case Framework::Torchtitan: return z == 0 || z == 3;
  }
  return false;
}

bool supports_recompute(Framework f, Recompute r) {
  return !(f == Framework::Fsdp && r == Recompute::Selective);
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
  l.virtual_stages = p.virtual_stages.value_or(1);
  l.micro_batch = p.micro_batch.value_or(1);
  l.zero_stage = p.zero_stage.value_or(default_zero(s.training.framework));
  l.recompute = p.recompute.value_or(default_recompute(s.training.framework));
  l.sequence_parallel = p.sequence_parallel.value_or(l.tp > 1);
  return l;
}

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
  if (l.virtual_stages > 1) {
    if (l.pp < 2) return "virtual_stages > 1 needs pp >= 2";
    if (f == Framework::DeepSpeed || f == Framework::Fsdp)
      return std::string("virtual_stages > 1 (interleaved schedule) is not supported by ") + to_string(f);
    const int per = (m.layers + l.pp - 1) / l.pp;
    if (m.layers % l.pp == 0 && per % l.virtual_stages != 0)
      return "virtual_stages = " + std::to_string(l.virtual_stages) + " must divide the layers per stage (" +
             std::to_string(per) + ")";
  }
  if (s.training.global_batch % (l.dp * l.micro_batch) != 0)
    return "micro_batch * dp = " + std::to_string(l.dp * l.micro_batch) + " must divide global_batch (" +
           std::to_string(s.training.global_batch) + ")";
  if (l.cp > 1 && m.seq_len % (2 * l.cp) != 0)
    return "cp = " + std::to_string(l.cp) + ": seq_len must be divisible by 2*cp (load-balanced chunks)";
  if (f == Framework::Fsdp && (l.tp > 1 || l.pp > 1 || l.cp > 1))
    return "fsdp: plain PyTorch FSDP has no tensor/pipeline/context parallelism here (use torchtitan)";
  if (f == Framework::DeepSpeed && l.cp > 1) return "deepspeed: context parallelism is not supported";
  if (!supports_zero(f, l.zero_stage, l.pp))
    return std::string("zero_stage ") + std::to_string(l.zero_stage) + " is not available in " + to_string(f) +
           (l.pp > 1 ? " with pipeline parallelism" : "");
  if (!supports_recompute(f, l.recompute)) return "fsdp: activation checkpointing is none or full";
  if (l.shard_group > 0) {
    if (l.zero_stage < 2) return "shard_group (hybrid sharding) needs zero_stage >= 2";
    if ((l.dp * l.cp) % l.shard_group != 0) return "shard_group must divide dp*cp";
  }
  return "";
}

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
  p.fits = r.fits;
  p.microbatches = r.microbatches;
  p.breakdown = r.br;
  if (!r.fits && r.overflow_term >= 0)
    p.overflow = std::string(kMemTerm[r.overflow_term]) + " (" + fmt("%.1f", std::vector<double>{
        r.mem.weights, r.mem.gradients, r.mem.optimizer, r.mem.activations, r.mem.logits, r.mem.buffers}[r.overflow_term]) +
                 " GiB) is the largest term; total " + fmt("%.1f", r.mem_gib) + " GiB > " +
                 fmt("%.1f", ev.capacity_gib()) + " GiB per GPU";
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
  return to_prediction(s, ev, ev.evaluate(layout));
}

// ---------------------------------------------------------------------------------------------------------------
namespace {

struct Ranked {
  double t;
  int complexity;
  Framework f;
  Layout l;
};

int recompute_rank(Recompute r) { return r == Recompute::None ? 0 : r == Recompute::Selective ? 1 : 2; }

// Documented tie-break (docs/model.md): simpler layouts first: fewer model-parallel ways (tp*pp*cp*v), then lower
// ZeRO stage, less recompute, no hybrid sharding, larger micro-batch; finally the enumeration order.
long simplicity_key(const Layout& l) {
  return (long(l.tp) * l.pp * l.cp * l.virtual_stages) * 100000L + l.zero_stage * 10000L +
         recompute_rank(l.recompute) * 1000L + (l.shard_group > 0 ? 100 : 0) + (99 - std::min(99, l.micro_batch));
}

bool better(const Ranked& a, const Ranked& b) {
  if (a.t != b.t) return a.t < b.t;
  return simplicity_key(a.l) < simplicity_key(b.l);
}

std::vector<int> divisors(int n) {
  std::vector<int> d;
  for (int i = 1; i <= n; ++i)
    if (n % i == 0) d.push_back(i);
  return d;
}

template <class T>
bool allowed(const std::vector<T>& v, T x) {
  return v.empty() || std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

Plan advise(const Scenario& s, const SearchLimits& limits) {
  const auto t0 = std::chrono::steady_clock::now();
  validate(s);
  const ModelParams& params = limits.params ? *limits.params : shipped_params();
  const ModelSpec& m = s.model;
  const ParallelSpec& c = s.parallel;
  const int N = s.total_gpus();
  const int B = s.training.global_batch;
  const int kv = m.kv_heads > 0 ? m.kv_heads : m.heads;

  std::vector<Framework> fws;
  if (limits.all_frameworks) {
    for (Framework f : {Framework::Megatron, Framework::DeepSpeed, Framework::Fsdp, Framework::Torchtitan,
                        Framework::Nemo})
      if (allowed(limits.frameworks, f) && (f != Framework::Nemo || s.training.framework == Framework::Nemo))
        fws.push_back(f);
  } else if (!allowed(limits.frameworks, s.training.framework)) {
    fws = limits.frameworks;
  } else {
    fws.push_back(s.training.framework);
  }

  const size_t keep = size_t(std::max(limits.top_n, 1)) + 32;
  std::vector<Ranked> best;  // bounded: the `keep` fastest so far
  best.reserve(keep + 1);
  long long evaluated = 0, pruned_memory = 0;
  double least_mem = 1e30;
  Layout least_layout;
  Framework least_fw = s.training.framework;

  for (Framework f : fws) {
    Evaluator ev(s, f, params);
    ev.headroom_gib = limits.memory_headroom_gib;
    const bool tp_ok = f != Framework::Fsdp;
    const bool pp_ok = f != Framework::Fsdp;
    const bool cp_ok = f == Framework::Megatron || f == Framework::Nemo || f == Framework::Torchtitan;
    const bool vpp_ok = f == Framework::Megatron || f == Framework::Nemo || f == Framework::Torchtitan;
    for (int tp : divisors(N)) {
      if (!tp_ok && tp > 1) break;
      if (c.tp && *c.tp != tp) continue;
      if (limits.max_tp && tp > limits.max_tp) continue;
      if (m.heads % tp || kv % tp) continue;
      const int domain = std::max(1, s.cluster.nvlink_domain);
      if (!limits.allow_tp_beyond_nvlink && tp > 1 && tp > domain) continue;
      for (int pp : divisors(N / tp)) {
        if (!pp_ok && pp > 1) break;
        if (c.pp && *c.pp != pp) continue;
        if (limits.max_pp && pp > limits.max_pp) continue;
        if (pp > m.layers) break;
        const bool even = m.layers % pp == 0;
        const bool emb_split = !even && (f == Framework::Megatron || f == Framework::Nemo) && (m.layers + 2) % pp == 0;
        if (!even && !emb_split) continue;
        for (int cp : divisors(N / tp / pp)) {
          if (!cp_ok && cp > 1) break;
          if (c.cp && *c.cp != cp) continue;
          if (limits.max_cp && cp > limits.max_cp) continue;
          if (cp > 1 && m.seq_len % (2 * cp)) continue;
          const int dp = N / tp / pp / cp;
          if (c.dp && *c.dp != dp) continue;
          if (B % dp) continue;
          const int per_replica = B / dp;
          // virtual stages: divisors of the layers per stage (interleaving needs pp >= 2)
          std::vector<int> vs{1};
          if (pp > 1 && vpp_ok) {
            const int per = even ? m.layers / pp : (m.layers + 2) / pp;
            for (int v = 2; v <= per; ++v)
              if (per % v == 0) vs.push_back(v);
          }
          for (int v : vs) {
            if (c.virtual_stages && *c.virtual_stages != v) continue;
            for (int z = 0; z <= 3; ++z) {
              if (!supports_zero(f, z, pp)) continue;
              if (c.zero_stage && *c.zero_stage != z) continue;
              if (!allowed(limits.zero_stages, z)) continue;
              std::vector<int> groups{0};
              if ((f == Framework::Fsdp || f == Framework::Torchtitan) && z >= 2 && dp * cp > s.cluster.gpus_per_node &&
                  (dp * cp) % s.cluster.gpus_per_node == 0)
                groups.push_back(s.cluster.gpus_per_node);
              for (int sg : groups) {
                for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full}) {
                  if (!supports_recompute(f, r)) continue;
                  if (c.recompute && *c.recompute != r) continue;
                  if (!allowed(limits.recompute_modes, r)) continue;
                  const bool sp = c.sequence_parallel ? *c.sequence_parallel : tp > 1;
                  if (sp && tp == 1 && c.sequence_parallel) continue;
                  for (int mb = std::max(1, limits.min_micro_batch); mb <= per_replica; ++mb) {
                    if (per_replica % mb) continue;
                    if (limits.max_micro_batch && mb > limits.max_micro_batch) break;
                    if (c.micro_batch && *c.micro_batch != mb) continue;
                    Layout l;
                    l.tp = tp; l.pp = pp; l.cp = cp; l.dp = dp; l.virtual_stages = v; l.micro_batch = mb;
                    l.zero_stage = z; l.recompute = r; l.sequence_parallel = sp && tp > 1; l.shard_group = sg;
                    const double mem = ev.memory_gib(l);
                    if (mem < least_mem) { least_mem = mem; least_layout = l; least_fw = f; }
                    if (mem > ev.capacity_gib()) {
                      ++pruned_memory;
                      break;  // a larger micro-batch needs more memory still
                    }
                    const Evaluator::Result res = ev.evaluate(l);
                    ++evaluated;
                    Ranked rk{res.step_s, 0, f, l};
                    if (best.size() < keep || better(rk, best.back())) {
                      auto it = std::upper_bound(best.begin(), best.end(), rk, better);
                      best.insert(it, rk);
                      if (best.size() > keep) best.pop_back();
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }

  if (best.empty()) {
    std::string msg = "nothing fits in " + fmt("%.1f", effective_gpu(s.cluster).memory_gib) + " GiB per GPU";
    if (least_mem < 1e29) {
      Evaluator ev(s, least_fw, params);
      MemoryBreakdown mb;
      ev.memory_gib(least_layout, &mb);
      const double need_nodes = std::ceil(s.cluster.nodes * least_mem / ev.capacity_gib());
      msg += "; the leanest layout (tp=" + std::to_string(least_layout.tp) + " pp=" + std::to_string(least_layout.pp) +
             " cp=" + std::to_string(least_layout.cp) + " micro_batch=" + std::to_string(least_layout.micro_batch) +
             " zero_stage=" + std::to_string(least_layout.zero_stage) + " recompute=" + to_string(least_layout.recompute) +
             ") needs " + fmt("%.1f", least_mem) + " GiB (weights+grads+optimizer " +
             fmt("%.1f", mb.weights + mb.gradients + mb.optimizer) + ", activations " +
             fmt("%.1f", mb.activations + mb.logits) + "). What would fit: about " +
             std::to_string(int(need_nodes)) + " nodes instead of " + std::to_string(s.cluster.nodes) +
             ", a GPU with more memory, full recompute and micro_batch 1 if a constraint excludes them, ZeRO-3/FSDP "
             "sharding, or a shorter sequence";
    } else {
      msg += "; no valid layout exists for these constraints (check that tp divides heads/kv_heads, pp divides "
             "layers, and dp divides global_batch)";
    }
    throw NothingFits(msg);
  }

  // Tie-break: among candidates within 1 % of the fastest, the simplest wins (deterministic).
  const double tmin = best.front().t;
  size_t win = 0;
  for (size_t i = 1; i < best.size(); ++i)
    if (best[i].t <= tmin * 1.01 && simplicity_key(best[i].l) < simplicity_key(best[win].l)) win = i;

  Plan plan;
  plan.framework = best[win].f;
  plan.layout = best[win].l;
  {
    Evaluator ev(s, plan.framework, params);
    ev.headroom_gib = limits.memory_headroom_gib;
    plan.prediction = to_prediction(s, ev, ev.evaluate(plan.layout));
  }
  for (size_t i = 0; i < best.size() && int(plan.alternatives.size()) < limits.top_n; ++i) {
    if (i == win) continue;
    Evaluator ev(s, best[i].f, params);
    ev.headroom_gib = limits.memory_headroom_gib;
    plan.alternatives.push_back({best[i].f, best[i].l, to_prediction(s, ev, ev.evaluate(best[i].l))});
  }
  plan.env = synthesize_env(s, plan.framework, plan.layout, plan.prediction.memory_gib_per_gpu);
  plan.candidates_evaluated = evaluated;
  plan.search_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  plan.notes.push_back(std::to_string(evaluated) + " layouts evaluated, " + std::to_string(pruned_memory) +
                       " pruned by memory");
  if (win != 0)
    plan.notes.push_back("tie-break: within 1 % of the fastest (" + fmt("%.3f", tmin) +
                         " s), the simpler layout was preferred");
  if (!plan.alternatives.empty()) {
    const auto& a = plan.alternatives.front();
    const Breakdown& w = plan.prediction.breakdown;
    const Breakdown& o = a.prediction.breakdown;
    const char* names[] = {"compute", "recompute", "tp_comm", "cp_comm", "pp_bubble", "pp_comm", "dp_comm_exposed",
                           "optimizer", "other"};
    const double dw[] = {w.compute, w.recompute, w.tp_comm, w.cp_comm, w.pp_bubble, w.pp_comm, w.dp_comm_exposed,
                         w.optimizer, w.other};
    const double dox[] = {o.compute, o.recompute, o.tp_comm, o.cp_comm, o.pp_bubble, o.pp_comm, o.dp_comm_exposed,
                          o.optimizer, o.other};
    int k = 0;
    for (int i = 1; i < 9; ++i)
      if (dox[i] - dw[i] > dox[k] - dw[k]) k = i;
    plan.notes.push_back("runner-up is " + fmt("%.1f", 100 * (a.prediction.step_time_s / plan.prediction.step_time_s - 1)) +
                         " % slower, mostly " + names[k] + " (+" + fmt("%.3f", dox[k] - dw[k]) + " s)");
  }
  if ((plan.framework == Framework::Fsdp || plan.framework == Framework::Torchtitan) && plan.layout.zero_stage >= 2)
    plan.notes.push_back("CUDA_DEVICE_MAX_CONNECTIONS left unset: FSDP prefetching overlaps best with several queues");
  return plan;
}

}  // namespace paratune::advisor
