// Memory per GPU for the generalised layer (docs/model.md §9): non-expert weights split by TP with their optimizer
// states over the dp x cp ranks, expert weights split over ep x etp with theirs over the experts' own data-parallel
// group (edp = tp cp dp / (ep etp), Megatron-Core "parallel folding"), activations of the dispatched rows (the
// busiest rank's share, or the capacity when tokens are dropped), MTP on the last stage, dispatcher buffers.
#include <algorithm>

#include "terms.h"

namespace paratune::advisor::terms {

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct Bytes {
  double w = 0, g = 0, o = 0;  // per parameter held, after sharding over `n`
  double step = 0;             // optimizer bytes that exist only inside the optimizer step
};

// Model states per parameter (memory.cpp's table) for a sharding group of n ranks.
Bytes state_bytes(const Resolved& R, const Layout& l, double n) {
  Bytes b;
  const int z = l.zero_stage;
  switch (R.stack.framework) {
    case Framework::Megatron:
    case Framework::Nemo: {
      const OptimizerBytes ob = mcore_optimizer_bytes(R, l);
      b = {2, R.stack.grad_bytes(), ob.persistent, ob.step_only};
      if (z >= 1) { b.o /= n; b.step /= n; }
      if (z >= 3) { b.w /= n; b.g /= n; }
      break;
    }
    case Framework::DeepSpeed:
      b = {2, 4, 12};
      if (z >= 1) b.o /= n;
      if (z >= 2) b.g /= n;
      if (z >= 3) b.w /= n;
      break;
    default:  // FSDP / torchtitan: fp32 sharded parameters
      b = {4, 4, 8};
      if (z >= 2) { b.w = 4 / n + 2; b.g /= n; b.o /= n; }
      if (z >= 3) b.w = 4 / n;
      break;
  }
  const bool fp8 = R.s.training.precision == Precision::Fp8;
  if (R.stack.fp8_params) b.w = z >= 3 ? 1.0 / n : 1.0;
  else if (fp8 && R.stack.megatron_core) b.w += z >= 3 ? 1.0 / n : 1.0;
  return b;
}

// Bytes one layer of each kind keeps for the backward pass, one micro-batch (Korthikanti et al. 2022 Table 2
// generalised as in counts.cpp, with the heads' own widths; ℓ = bytes of a saved linear-layer input).
struct LayerActs {
  double attn = 0, dense = 0, moe = 0, input = 0;
};
LayerActs layer_acts(const Resolved& R, const ModelParams& p, const Layout& l) {
  const ModelDims& d = R.m;
  const MoeDims& x = R.moe;
  const double t = l.tp, tok = double(l.micro_batch) * d.s / l.cp;
  const bool sp = l.sequence_parallel && l.tp > 1;
  const double hs = sp ? t : 1.0, lin = R.s.training.precision == Precision::Fp8 ? 1 : 2;
  const double kv = x.kv_lora > 0 ? d.a : d.g;
  LayerActs a;
  a.input = 2 * tok * d.h / hs;
  if (l.recompute == Recompute::Full) return a;
  // Selective recompute rebuilds the modules of recompute_module_set() in the backward pass instead of keeping
  // their outputs (default: Megatron-Core's MoE recipe set core_attn, layernorm, mla_up_proj, moe_act):
  // layernorm the norm outputs, mla_up_proj MLA's up-projected Q/K/V, moe_act the experts' (and shared experts')
  // activation-function outputs, mlp the dense layers' MLP, moe the MoE block, shared_experts the shared experts
  // (each a checkpoint of its input, which the norm output already is).
  using namespace recompute_module;
  const unsigned mods = recompute_module_set(R.s, l, true);
  const double replicated =
      (4 + ((mods & kLayernorm) ? 0 : 2 * lin) + (d.dropout ? 2 : 0)) * d.h + 2 * (x.q_lora + x.kv_lora + x.rope);
  const bool up_proj_kept = !((mods & kMlaUpProj) && x.kv_lora > 0);
  const double split = (up_proj_kept ? 2 * d.a * x.dqk + 2 * kv * x.dqk + 2 * kv * x.dv : 0) + 2 * d.a * x.dv;
  a.attn = tok * (replicated / hs + split / t);
  if (!R.stack.flash && !(mods & kCoreAttn)) a.attn += 5 * (d.a / t) * d.s * tok;
  const double glu = d.gated ? 4 : 2;
  const double act = glu + ((mods & kMoeAct) ? 0 : lin);
  a.dense = (mods & kMlp) ? 0 : tok * (glu + lin) * d.f / t;
  if (x.moe && !(mods & kMoe)) {
    const double load = x.cf > 0 ? x.cf : moe_imbalance_factor(R, p, l);
    const double rows = l.etp * moe_tokens_in(R, l) * x.k * load;
    // Per expert row: its fc1 input, fc1 output(s) and activation output, and the expert output the un-permutation
    // weights by the router probability (its backward needs it).
    const double shared = (mods & kSharedExperts) ? 0 : tok * act * x.fs / t;
    a.moe = rows * (lin * d.h + act * x.fe / l.etp + 2 * d.h) + 8 * moe_tokens_in(R, l) * x.E + shared;
  }
  return a;
}

}  // namespace

double moe_layer_activation_bytes(const Resolved& R, const ModelParams& p, const Layout& l) {
  const LayerActs a = layer_acts(R, p, l);
  return l.recompute == Recompute::Full ? a.input : a.attn + (1 - R.moe.mix) * a.dense + R.moe.mix * a.moe;
}

double moe_memory_gib(const Resolved& R, const ModelParams& p, const Layout& l, double headroom_gib,
                      MemoryBreakdown* out) {
  const ModelDims& d = R.m;
  const MoeDims& x = R.moe;
  const int t = l.tp, pp = l.pp;
  int Lf, Lm, Ll;
  stage_layers(R, l, &Lf, &Lm, &Ll);
  const int m = std::max(1, R.s.training.global_batch / std::max(1, l.dp * l.micro_batch));
  const double ee = double(l.ep) * l.etp;
  const double n_d = l.shard_group > 0 ? l.shard_group : double(l.dp) * l.cp;
  // Megatron's distributed-optimizer instances shard the experts' state within edp / instances ranks too
  // (parallel_state.py: intra_partial_expert_data_parallel_size).
  const double n_e = std::max(1.0, double(t) * l.cp * l.dp / ee / l.optimizer_instances());

  // Parameters on the first and last stages: non-expert (TP-split) and expert (ep x etp-split) parts.
  const double ne = x.avg_layer_nonexpert() / t, ex = x.avg_layer_expert() / ee;
  const double mtp_ne = x.mtp * (x.P_attn + x.P_shared + x.P_router + 2 * d.h * d.h + 2 * d.h) / t;
  const double mtp_ex = x.mtp * x.E * x.P_expert / ee;
  const double emb = d.P_emb / t;
  const double ne_first = pp == 1 ? d.L * ne + emb * (d.tied ? 1 : 2) + mtp_ne : Lf * ne + emb;
  const double ex_first = pp == 1 ? d.L * ex + mtp_ex : Lf * ex;
  const double ne_last = pp == 1 ? ne_first : Ll * ne + emb + mtp_ne;
  const double ex_last = pp == 1 ? ex_first : Ll * ex + mtp_ex;
  const Bytes bd = state_bytes(R, l, n_d), be = state_bytes(R, l, n_e);

  const LayerActs a = layer_acts(R, p, l);
  const double a_layer = l.recompute == Recompute::Full ? a.input
                                                        : a.attn + (1 - x.mix) * a.dense + x.mix * a.moe;
  const double a_moe_layer = a.attn + (x.moe ? a.moe : a.dense);
  const double inflight = inflight_microbatches(l, m, true), inflight_last = inflight_microbatches(l, m, false);
  Layout full = l;
  full.recompute = Recompute::None;
  const LayerActs w = layer_acts(R, p, full);
  const double work = l.recompute == Recompute::Full ? w.attn + std::max(w.dense, w.moe) : 0;
  const double act_first = resident_layers(l, Lf) * a_layer * inflight + work + a.input * inflight;
  const double act_last = resident_layers(l, Ll) * a_layer * inflight_last + work + x.mtp * a_moe_layer;
  const double tok = double(l.micro_batch) * d.s / l.cp;
  const double logits = R.stack.loss_bytes * tok * d.V / t * (1 + x.mtp);

  const double st_first = ne_first * (bd.w + bd.g + bd.o) + ex_first * (be.w + be.g + be.o);
  const double st_last = ne_last * (bd.w + bd.g + bd.o) + ex_last * (be.w + be.g + be.o);
  const bool last = pp > 1 && st_last + act_last + logits > st_first + act_first;
  const double ne_s = last ? ne_last : ne_first, ex_s = last ? ex_last : ex_first;

  MemoryBreakdown mb;
  mb.weights = (ne_s * bd.w + ex_s * be.w) / kGiB;
  mb.gradients = (ne_s * bd.g + ex_s * be.g) / kGiB;
  mb.activations = (last ? act_last : act_first) / kGiB;
  mb.logits = (pp == 1 || last ? logits : 0) / kGiB;
  mb.optimizer = optimizer_peak((ne_s * bd.o + ex_s * be.o) / kGiB, (ne_s * bd.step + ex_s * be.step) / kGiB,
                                mb.activations + mb.logits);
  // Buffers: context and workspaces, NCCL buffers per communicator kind (the EP and expert-TP groups are two more),
  // NVLS, the flex dispatcher's preallocated NVLink/RDMA buffers (DeepEP's default ~1 GiB each), ZeRO-3/FSDP layer
  // gathers.
  const int groups = (t > 1) + (l.cp > 1) + (pp > 1) + (l.dp * l.cp > 1) + (l.ep > 1) + (l.etp > 1);
  double buf = 0.8 + 0.2 * groups;
  if (t > 1 && R.gpu.nvls && R.s.cluster.nvls) buf += 1.0;
  if (l.ep > 1 && l.dispatcher == Dispatcher::Flex) buf += 2.0;
  // AutoModel's "torch" dispatcher sums the gathered tokens' expert outputs into an fp32 buffer of all ep ranks'
  // rows (moe/experts.py:420 / :490 at v0.5.0) and all-reduces a copy of it (:399; torch.distributed.nn
  // _AllReduce clones its input): two fp32 buffers of ep x tokens x hidden during the layer.
  if (l.ep > 1 && l.dispatcher == Dispatcher::AllGather && R.stack.framework == Framework::Automodel)
    buf += 2 * 4.0 * l.ep * tok * d.h / kGiB;
  if (l.zero_stage >= 3) buf += (2 * 2 + 4) * moe_layer_params_per_gpu(R, l) / kGiB;
  mb.buffers = buf;
  mb.reserve = 0.5 + 0.07 * (mb.activations + mb.logits) + headroom_gib;
  if (out) *out = mb;
  return mb.total();
}

}  // namespace paratune::advisor::terms
