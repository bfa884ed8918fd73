// The performance model. Every term is derived in docs/model.md; the references are in the comments.
#include "paratune/advisor/model.h"

#include <algorithm>
#include <cmath>

namespace paratune::advisor {

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline double ceil_log2(double k) { return k <= 1 ? 0 : std::ceil(std::log2(k)); }

// The attention kernel against the framework's default, which the fitted attn_eff_rel describes: Megatron-Core and
// NeMo run cuDNN fused attention (FlashAttention-3 class on Hopper/Blackwell), the PyTorch stacks FlashAttention-2
// through SDPA. Only Hopper and Blackwell have the faster kernels.
double attention_factor(const TrainingSpec& t, Framework f, GpuArch arch, const ModelParams& p) {
  const bool fast_arch = arch == GpuArch::Hopper || arch == GpuArch::Blackwell;
  if (!fast_arch || !t.attention || *t.attention == Attention::None) return 1.0;
  const bool default_fast = f == Framework::Megatron || f == Framework::Nemo;
  const bool asks_fast = *t.attention == Attention::Flash3 || *t.attention == Attention::Cudnn;
  if (asks_fast == default_fast) return 1.0;
  return asks_fast ? p.fa3_gain : 1.0 / p.fa3_gain;
}

// The FP8 recipe against per-tensor scaling (which the fitted fp8_linear_gain describes).
double fp8_recipe_factor(const TrainingSpec& t, GpuArch arch, const ModelParams& p) {
  if (!t.fp8_recipe) return 1.0;
  if (*t.fp8_recipe == Fp8Recipe::Mxfp8 && arch != GpuArch::Blackwell) return p.mxfp8_emulated_gain;
  return p.fp8_recipe_gain[static_cast<int>(*t.fp8_recipe)];
}
}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// Counts.
double params_per_layer(const ModelSpec& m) {
  const double h = m.hidden, a = m.heads, g = m.kv_heads > 0 ? m.kv_heads : m.heads;
  const double f = m.ffn_hidden > 0 ? m.ffn_hidden : 4.0 * m.hidden;
  // QKV h*(h + 2h g/a), output h*h, MLP (2 or 3) h f, two norms 2h.
  return h * (h + 2 * h * g / a) + h * h + (m.gated_mlp ? 3 : 2) * h * f + 2 * h;
}

double total_params(const ModelSpec& m) {
  const double emb = double(m.vocab) * m.hidden;
  return m.layers * params_per_layer(m) + emb * (m.tied_embeddings ? 1 : 2) + m.hidden;
}

double model_flops_per_token(const ModelSpec& m) {
  // 6 x (transformer params + the logits GEMM's V*h) + 12*l*h*s for attention scores (no causal discount).
  const double n = m.layers * params_per_layer(m) + double(m.vocab) * m.hidden;
  return 6 * n + 12.0 * m.layers * m.hidden * double(m.seq_len);
}

double activation_bytes_per_layer(const ModelSpec& m, int b, int tp, int cp, bool sp, Recompute r, bool flash,
                                  bool fp8) {
  const double h = m.hidden, a = m.heads, g = m.kv_heads > 0 ? m.kv_heads : m.heads;
  const double f = m.ffn_hidden > 0 ? m.ffn_hidden : 4.0 * m.hidden;
  const double s = m.seq_len, t = tp, tok = double(b) * s / cp, drop = m.dropout ? 1 : 0;
  if (r == Recompute::Full) return 2 * tok * h / (sp ? t : 1);  // the layer input only
  // Replicated across TP ranks without SP: two norm inputs (4), QKV input (2), MLP input (2), two dropout masks.
  const double lin_in = fp8 ? 1 : 2;  // QKV input and MLP input as saved for the backward GEMMs
  const double replicated = 4 + 2 * lin_in + 2 * drop;
  // Split by t: Q (2), K and V (4 g/a), attention output = out-proj input (2), MLP: fc1 output(s) and activation
  // output ((gated ? 6 : 4) f/h).
  const double split = 2 + 4 * g / a + 2 + ((m.gated_mlp ? 4 : 2) + lin_in) * f / h;
  double bytes = tok * h * (replicated / (sp ? t : 1) + split / t);
  // Softmax input/output and dropout mask of the s x s scores (5 a s bytes per token), unless flash attention
  // or selective recompute of the attention core (Korthikanti et al. §4.2).
  if (!flash && r != Recompute::Selective) bytes += 5 * (a / t) * s * tok;
  return bytes;
}

// ---------------------------------------------------------------------------------------------------------------
Evaluator::Evaluator(const Scenario& s, Framework f, const ModelParams& p) : s_(s), fw_(f), p_(p) {
  gpu_ = effective_gpu(s.cluster);
  const int arch = static_cast<int>(gpu_.arch);
  const double eff = p_.gemm_eff[arch] * p_.stack_compute_eff[static_cast<int>(f)];
  const double peak16 = (s.training.precision == Precision::Fp16 ? gpu_.fp16_tflops : gpu_.bf16_tflops) * 1e12;
  peak_ = peak16 * eff;
  peak_lin_ = peak_;
  if (s.training.precision == Precision::Fp8 && gpu_.fp8_tflops > 0)
    peak_lin_ = peak_ * std::min(p_.fp8_linear_gain * fp8_recipe_factor(s.training, gpu_.arch, p_),
                                 gpu_.fp8_tflops * 1e12 / peak16);
  hbm_ = gpu_.hbm_tbps * 1e12 * p_.hbm_eff;
  capacity_gib_ = gpu_.memory_gib;
  G_ = std::max(1, s.cluster.gpus_per_node);
  D_ = std::max(1, s.cluster.nvlink_domain);
  nvl_gbps_ = gpu_.nvlink_gbps * p_.nvlink_eff;
  pcie_gbps_ = std::max(1.0, gpu_.pcie_gbps * p_.pcie_eff);
  // NIC aggregate per node (GB/s), achieved: line rate x fabric efficiency x GPU-NIC path penalty.
  double line = 0;
  if (!s.cluster.nics.empty()) {
    for (const auto& n : s.cluster.nics)
      if (n.active) line += (n.gbps > 0 ? n.gbps : s.cluster.nic_gbps) / 8.0;
  }
  if (line <= 0) line = s.cluster.nic_count * s.cluster.nic_gbps / 8.0;
  double path = 1.0;  // nccl #412: ~24 GB/s per HDR NIC with GPUDirect, ~16 GB/s through the CPU
  const std::string& gp = s.cluster.gpu_nic_path;
  if (gp == "PHB" || gp == "P2C") path = gp == "PHB" ? 0.67 : 1.0;
  if (gp == "SYS") path = 0.5;
  node_net_gbps_ = std::max(0.1, line * p_.fabric_eff[static_cast<int>(s.cluster.fabric)] * path *
                                     (s.cluster.rail_aligned ? 1.0 : 0.9));
  // FlashAttention exists only from Ampere on (and on CDNA2/3 through ROCm's port): on Volta, Turing or Pascal
  // attention is the unfused kernel whatever the scenario says (FlashAttention-2 README: Ampere, Ada, Hopper).
  flash_ = s.training.flash_attention.value_or(true) && has_flash_attention(gpu_.arch) &&
           s.training.attention != Attention::None;
  attn_gain_ = attention_factor(s.training, f, gpu_.arch, p_);
  elt_scale_ = p_.elt_scale * (s.training.compile.value_or(false) && (f == Framework::Fsdp || f == Framework::Torchtitan)
                                   ? p_.compile_elt_scale : 1.0);
  overlap_dp_ = s.training.overlap_dp_comm.value_or(true);
  // TP comm/GEMM overlap: Megatron-Core/NeMo (userbuffers) and torchtitan (async TP) on Hopper and Blackwell; on by
  // default where it exists unless the scenario says tp_comm_overlap = false.
  tp_overlap_ = (f == Framework::Megatron || f == Framework::Nemo || f == Framework::Torchtitan) &&
                (gpu_.arch == GpuArch::Hopper || gpu_.arch == GpuArch::Blackwell) &&
                s.training.tp_comm_overlap.value_or(overlap_dp_);
  const ModelSpec& m = s.model;
  h_ = m.hidden; a_ = m.heads; g_ = m.kv_heads > 0 ? m.kv_heads : m.heads;
  f_ = m.ffn_hidden > 0 ? m.ffn_hidden : 4.0 * m.hidden;
  V_ = m.vocab; s_len_ = m.seq_len; L_ = m.layers;
  P_layer_ = params_per_layer(m);
  P_emb_ = V_ * h_;
  gated_ = m.gated_mlp; dropout_ = m.dropout; tied_ = m.tied_embeddings;
}

double Evaluator::gemm_shape_factor(double M, double N, double K) {
  return 1.0 / (1.0 + 96.0 / N + 96.0 / K + 64.0 / M);
}

double Evaluator::gemm_s(double M, double N, double K, bool linear) const {
  const double flops = 2 * M * N * K;
  const double compute = flops / ((linear ? peak_lin_ : peak_) * gemm_shape_factor(M, N, K));
  const double bytes = 2 * (M * K + K * N + M * N);
  return std::max(compute, bytes / hbm_) + p_.gemm_t0_us * 1e-6;
}

double Evaluator::group_busbw_gbps(int k, int stride, bool allreduce) const {
  if (k <= 1) return 1e9;
  const long span = long(stride) * k;
  if (D_ > 1 && span <= D_) {  // inside one NVLink domain (assumes groups aligned to domains, as rank order gives)
    const bool nvls = allreduce && k > 2 && gpu_.nvls && s_.cluster.nvls;
    return nvl_gbps_ * (nvls ? p_.nvls_gain : 1.0);
  }
  const int per_node = stride >= G_ ? 1 : std::min(k, G_ / stride);
  const int nodes = (k + per_node - 1) / per_node;
  double intra = D_ > 1 && std::min<long>(span, G_) <= D_ ? nvl_gbps_ : pcie_gbps_;
  if (nodes <= 1) return intra;
  // Between nodes the G/per_node groups of this kind that run at once share the node's NICs (rail-aligned ring:
  // busbw = NIC aggregate when the whole node is in one group, nccl #812: 192 GB/s on 8x HDR).
  double net = node_net_gbps_ * per_node / G_;
  // Leaf switches of the allocation (placement.h): rings whose hops leave a leaf share its uplinks.
  if (s_.cluster.placement) net *= placement_bandwidth_factor(*s_.cluster.placement, nodes, std::max(1, stride / G_));
  return std::min(net, per_node > 1 ? intra : 1e9);
}

double Evaluator::collective_s(Coll c, double bytes, int k, int stride) const {
  if (k <= 1 || bytes <= 0) return 0;
  const bool ar = c == Coll::AllReduce;
  const double bw = group_busbw_gbps(k, stride, ar) * 1e9;
  const long span = long(stride) * k;
  const bool crosses = span > std::max(G_, D_) || stride >= G_;
  const double alpha = (crosses ? p_.alpha_net_us : p_.alpha_nvl_us) * 1e-6;
  double factor, steps;
  switch (c) {
    case Coll::AllReduce:  // ring 2(k-1) steps, tree 2 log2 k
      factor = 2.0 * (k - 1) / k;
      steps = std::min(2.0 * (k - 1), 2 * ceil_log2(k) + 2);
      break;
    case Coll::ReduceScatter:
    case Coll::AllGather: {
      // NCCL runs these as rings (no tree; PAT only with one rank per node): k-1 steps, of which one per node
      // boundary crosses the network and the rest stay on NVLink (src/graph/tuning.cc). At 1,536 GPUs this
      // latency, not bandwidth, bounds a ZeRO-3 layer gather of a small model.
      factor = double(k - 1) / k;
      const int per_node = stride >= G_ ? 1 : std::min(k, std::max(1, G_ / stride));
      const int nodes = (k + per_node - 1) / per_node;
      const double inter = nodes - 1, intra = (k - 1) - inter;
      return p_.launch_us * 1e-6 + inter * p_.alpha_net_us * 1e-6 + intra * p_.alpha_ring_intra_us * 1e-6 +
             bytes * factor / bw;
    }
    case Coll::SendRecv:
    default:
      factor = 1;
      steps = 1;
      break;
  }
  return p_.launch_us * 1e-6 + steps * alpha + bytes * factor / bw;
}

void Evaluator::stage_layers(const Layout& l, int* first, int* mid, int* last) const {
  const int L = s_.model.layers, p = std::max(1, l.pp);
  if (p == 1) {
    *first = *mid = *last = L;
  } else if (L % p == 0) {
    *first = *mid = *last = L / p;
  } else if ((L + 2) % p == 0) {
    // Megatron --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split: the embedding and
    // the loss count as one layer each, so the first and last stages hold one transformer layer fewer.
    *mid = (L + 2) / p;
    *first = *last = *mid - 1;
  } else {
    *first = *mid = *last = (L + p - 1) / p;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Memory per GPU (GiB): model states per ZeRO stage / framework (Rajbhandari et al. 2020; Megatron-LM distributed
// optimizer doc), activations (Korthikanti et al. 2022) with the 1F1B in-flight count, logits, buffers, reserve.
double Evaluator::memory_gib(const Layout& l, MemoryBreakdown* out) const {
  const int t = l.tp, p = l.pp, c = l.cp, v = std::max(1, l.virtual_stages), b = l.micro_batch;
  int Lf, Lm, Ll;
  stage_layers(l, &Lf, &Lm, &Ll);
  const int m = std::max(1, s_.training.global_batch / std::max(1, l.dp * b));
  const bool sp = l.sequence_parallel && t > 1;
  const int z = l.zero_stage;
  const double n_sh = double(l.shard_group > 0 ? l.shard_group : l.dp * c);
  const bool fp8 = s_.training.precision == Precision::Fp8;
  const double tok = double(b) * s_len_ / c;

  // Parameters held by this GPU on the first and last stages (embedding on the first, LM head on the last).
  double psi_first, psi_last;
  if (p == 1) {
    psi_first = psi_last = (L_ * P_layer_ + P_emb_ * (tied_ ? 1 : 2)) / t;
  } else {
    psi_first = (Lf * P_layer_ + P_emb_) / t;
    psi_last = (Ll * P_layer_ + P_emb_) / t;  // tied: a copy of the embedding; untied: the LM head
  }
  double wb, gb, ob;  // bytes per parameter: weights, gradients, optimizer
  bool layer_buffers = false;
  switch (fw_) {
    case Framework::Megatron:
    case Framework::Nemo:
      // bf16 params, fp32 main_grad buffer, fp32 master + Adam m, v (Megatron-LM docs: 6 + 12/d with the
      // distributed optimizer). zero_stage 3 = Megatron-FSDP.
      wb = 2; gb = 4; ob = 12;
      if (z >= 1) ob /= n_sh;
      if (z >= 3) { wb /= n_sh; gb /= n_sh; layer_buffers = true; }
      break;
    case Framework::DeepSpeed:
      // bf16 params, fp32 gradient accumulation (BF16_Optimizer / ZeRO partitions), fp32 master + Adam.
      wb = 2; gb = 4; ob = 12;
      if (z >= 1) ob /= n_sh;
      if (z >= 2) gb /= n_sh;
      if (z >= 3) { wb /= n_sh; layer_buffers = true; }
      break;
    case Framework::Fsdp:
    case Framework::Torchtitan:
    default:
      // fp32 sharded params, fp32 grads, Adam m, v: 16/n for full shard; DDP keeps all 16 bytes; shard-grad-op
      // keeps the unsharded bf16 params between forward and backward.
      wb = 4; gb = 4; ob = 8;
      if (z >= 2) { wb = 4 / n_sh + 2; gb /= n_sh; ob /= n_sh; }
      if (z >= 3) { wb = 4 / n_sh; layer_buffers = true; }
      break;
  }
  if (fp8 && fw_ != Framework::Fsdp && fw_ != Framework::DeepSpeed) wb += z >= 3 ? 1.0 / n_sh : 1.0;

  // Activations: in-flight micro-batches on the first stage under 1F1B (p of them, Narayanan et al. §2.2), times
  // 1 + (p-1)/(p v) with interleaving (Korthikanti et al. §4); the last stage keeps one.
  const double a_layer = activation_bytes_per_layer(s_.model, b, t, c, sp, l.recompute, flash_, fp8);
  double inflight_first = p == 1 ? 1 : std::min<double>(m, p);
  if (p > 1 && v > 1) inflight_first *= 1 + double(p - 1) / (p * v);
  double work = 0;  // full recompute: one layer's activations are rebuilt at a time
  if (l.recompute == Recompute::Full)
    work = activation_bytes_per_layer(s_.model, b, t, c, sp, Recompute::None, flash_, fp8);
  const double act_first = Lf * a_layer * inflight_first + work + 2 * tok * h_ / (sp ? t : 1) * inflight_first;
  const double act_last = Ll * a_layer * (p == 1 ? 1 : 1) + work;
  // Logits of one micro-batch on the last stage: bf16 logits + fp32 softmax for the loss, split by t.
  const double logits = 6 * tok * V_ / t;

  const double state_first = psi_first * (wb + gb + ob), state_last = psi_last * (wb + gb + ob);
  const bool last_worse = p > 1 && (state_last + act_last + logits > state_first + act_first);
  const double psi = p == 1 ? psi_first : (last_worse ? psi_last : psi_first);

  MemoryBreakdown mb;
  mb.weights = psi * wb / kGiB;
  mb.gradients = psi * gb / kGiB;
  mb.optimizer = psi * ob / kGiB;
  mb.activations = (p == 1 ? act_first : (last_worse ? act_last : act_first)) / kGiB;
  mb.logits = (p == 1 || last_worse ? logits : 0) / kGiB;
  // Buffers: CUDA context + library workspaces; NCCL buffers per communicator kind; NVLS; framework buckets;
  // unsharded layer parameters (current + prefetched) and one layer's gradients for ZeRO-3 / FSDP.
  double buf = 0.8;
  const int groups = (t > 1) + (c > 1) + (p > 1) + (l.dp * c > 1);
  buf += 0.2 * groups;
  if (t > 1 && gpu_.nvls && s_.cluster.nvls) buf += 1.0;
  if (fw_ == Framework::DeepSpeed && z >= 1) buf += 0.75;  // reduce / all-gather buckets (2e8 elements each)
  if (layer_buffers) buf += (2 * 2 + 4) * P_layer_ / t / kGiB;
  mb.buffers = buf;
  // Allocator fragmentation: 0.5 GiB plus 7 % of the dynamic (activation) memory; policy headroom on top.
  mb.reserve = 0.5 + 0.07 * (mb.activations + mb.logits) + headroom_gib;
  if (out) *out = mb;
  return mb.total();
}

// ---------------------------------------------------------------------------------------------------------------
Evaluator::Result Evaluator::evaluate(const Layout& l) const {
  Result r;
  const int t = l.tp, p = l.pp, c = l.cp, v = std::max(1, l.virtual_stages), b = l.micro_batch, dp = l.dp;
  const int m = std::max(1, s_.training.global_batch / std::max(1, dp * b));
  r.microbatches = m;
  const bool sp = l.sequence_parallel && t > 1;
  const double tok = double(b) * s_len_ / c;
  const double hs = sp ? double(t) : 1.0;

  // --- compute per layer, one micro-batch, one GPU ---------------------------------------------------------
  // (M tokens) x (K in) x (N out) after the TP split: QKV and fc1 split N, out-proj and fc2 split K.
  const double gemm_f = gemm_s(tok, (h_ + 2 * h_ * g_ / a_) / t, h_) + gemm_s(tok, h_, h_ / t) +
                        gemm_s(tok, f_ * (gated_ ? 2 : 1) / t, h_) + gemm_s(tok, h_, f_ / t);
  const double gemm_b = 2 * gemm_f;  // data-gradient and weight-gradient GEMM for each
  // Attention core: 4 b s^2 h / (t c) FLOPs; flash attention skips the masked half of causal scores and keeps
  // no s x s matrix; its backward does 5 matmuls for the forward's 2 (x 2.5). Unfused attention computes all
  // scores and streams softmax/mask/dropout through HBM (about 10 bytes per score forward, twice backward).
  const double F_att = 4.0 * b * s_len_ * s_len_ * h_ / (double(t) * c);
  const int arch = static_cast<int>(gpu_.arch);
  double attn_f, attn_b;
  if (flash_) {
    attn_f = 0.5 * F_att / (peak_ * p_.attn_eff_rel * attn_gain_) + 2 * p_.gemm_t0_us * 1e-6;
    attn_b = 2.5 * attn_f;
  } else {
    const double scores = double(b) * (a_ / t) * s_len_ * s_len_ / c;
    attn_f = F_att / peak_ + 2 * p_.gemm_t0_us * 1e-6 + 10 * scores / hbm_;
    attn_b = 2 * attn_f;
  }
  (void)arch;
  // Elementwise work streamed through HBM (norms, residuals, rotary, activation function, dropout): about 32
  // bytes per token per hidden unit (replicated without SP) and 4-6 per FFN unit, backward twice (docs/model.md).
  const double elt_bytes =
      elt_scale_ * (tok * h_ * (32 + (dropout_ ? 4 : 0)) / hs + tok * f_ * (gated_ ? 6 : 4) / t);
  const double elt_f = elt_bytes / hbm_, elt_b = 2 * elt_f;
  const double layer_f = gemm_f + attn_f + elt_f;
  const double layer_b = gemm_b + attn_b + elt_b;
  double layer_rc = 0;
  if (l.recompute == Recompute::Full) layer_rc = layer_f;
  else if (l.recompute == Recompute::Selective) layer_rc = attn_f;

  // --- TP: 2 all-reduces forward + 2 backward per layer (or reduce-scatter + all-gather pairs with SP,
  // same volume; Korthikanti et al. §4.2.2), +2 when the forward is recomputed. -----------------------------
  const double tp_one = collective_s(Coll::AllReduce, tok * h_ * 2, t, 1);
  const double tp_n = 4 + (l.recompute == Recompute::Full ? 2 : 0);
  const double tp_layer = tp_one * tp_n * (1 - (tp_overlap_ && sp ? p_.tp_overlap : 0));

  // --- CP: ring exchange of K and V blocks, c-1 steps forward, twice the bytes backward, overlapped with the
  // attention of the block already present. --------------------------------------------------------------------
  double cp_layer = 0;
  if (c > 1) {
    const double kv_heads_local = std::max(1.0, g_ / t);
    const double step_bytes = 2.0 * b * (s_len_ / c) * kv_heads_local * (h_ / a_) * 2;
    const double st_f = collective_s(Coll::SendRecv, step_bytes, c, t);
    const double st_b = collective_s(Coll::SendRecv, 2 * step_bytes, c, t);
    const double blk_f = attn_f / c, blk_b = attn_b / c;
    const double sig = p_.overlap_interference;
    cp_layer = (c - 1) * (std::max(0.0, st_f - blk_f) + sig * std::min(st_f, blk_f) + std::max(0.0, st_b - blk_b) +
                          sig * std::min(st_b, blk_b));
    if (l.recompute == Recompute::Full) cp_layer *= 1.5;
  }

  // --- ZeRO-3 / FSDP per-layer parameter all-gathers (forward and backward) and per-micro-batch gradient
  // reduce-scatters, prefetched one layer ahead: only what exceeds the layer's compute is exposed. -------------
  const int z = l.zero_stage;
  const int nsh = l.shard_group > 0 ? l.shard_group : dp * c;
  const double sig = p_.overlap_interference;
  auto exposed = [&](double comm, double window) {
    return overlap_dp_ ? std::max(0.0, comm - window) + sig * std::min(comm, window) : comm;
  };
  const double grad_bytes_mb = (fw_ == Framework::DeepSpeed) ? 2 : 4;  // per parameter in reduce-scatters
  double z_layer = 0;  // exposed per layer per micro-batch
  const bool per_mb_ag = z >= 3 || ((fw_ == Framework::Fsdp || fw_ == Framework::Torchtitan) && z == 2);
  const bool per_mb_rs =
      z >= 2 && fw_ != Framework::Megatron && fw_ != Framework::Nemo;  // gradients partitioned per micro-batch
  if (nsh > 1 && (per_mb_ag || per_mb_rs || z >= 3)) {
    const double layer_param = P_layer_ / t;
    const double ag = per_mb_ag ? collective_s(Coll::AllGather, layer_param * 2, nsh, t) : 0;
    const double rs = per_mb_rs || z >= 3 ? collective_s(Coll::ReduceScatter, layer_param * grad_bytes_mb, nsh, t) : 0;
    const double fwd_comp = layer_f + tp_layer / 2, bwd_comp = layer_b + layer_rc + tp_layer / 2;
    z_layer = exposed(ag, fwd_comp) + exposed((z >= 3 ? ag : 0) + rs, bwd_comp);
  }

  r.layer_fwd_s = layer_f + tp_layer * 2 / tp_n + cp_layer / 3;
  r.layer_bwd_s = layer_b + layer_rc + tp_layer * (tp_n - 2) / tp_n + cp_layer * 2 / 3;

  // --- per-stage time for one micro-batch (all v chunks of the stage) -----------------------------------------
  int Lf, Lm, Ll;
  stage_layers(l, &Lf, &Lm, &Ll);
  const double stack_layer = p_.layer_overhead_us[static_cast<int>(fw_)] * 1e-6;
  const double per_layer = layer_f + layer_b + layer_rc + tp_layer + cp_layer + z_layer + stack_layer;
  const double mb_over = p_.mb_overhead_us * 1e-6;
  const double emb = 3 * tok * h_ * 2 / hbm_ / hs;
  const double head = 3 * gemm_s(tok, V_ / t, h_, false) + 12 * tok * V_ / t / hbm_ + tok * h_ * 8 / hs / hbm_;
  double T_first, T_mid, T_last;
  if (p == 1) {
    T_first = T_mid = T_last = L_ * per_layer + emb + head + mb_over;
  } else {
    T_first = Lf * per_layer + emb + mb_over;
    T_mid = Lm * per_layer + mb_over;
    T_last = Ll * per_layer + head + mb_over;
  }
  const double T_max = std::max({T_first, T_mid, T_last});
  const double T_sum = p == 1 ? T_first : T_first + T_last + (p - 2) * T_mid;
  const double bubble = (T_sum - T_max) / v;

  // --- PP point-to-point: activations forward, gradients backward (split by t with scatter/gather or SP) ------
  double pp_comm = 0;
  if (p > 1) {
    const double bytes = tok * h_ * 2 / (t > 1 ? t : 1);
    const double one = collective_s(Coll::SendRecv, bytes, 2, t * c * dp);
    pp_comm = (2.0 * m * v + 2.0 * (p - 1)) * one * (1 - (v > 1 && overlap_dp_ ? p_.pp_overlap : 0));
  }

  // --- DP once per step: gradient all-reduce (ZeRO 0) or reduce-scatter + parameter all-gather (ZeRO 1/2),
  // overlapped with the last micro-batch's backward / the first micro-batch's forward. -----------------------------
  const double psi_stage = (std::max({Lf, Lm, Ll}) * P_layer_ + (p == 1 ? P_emb_ * (tied_ ? 1 : 2) : P_emb_)) / t;
  double dp_exposed = 0;
  const int ndp = dp * c;
  if (ndp > 1) {
    const double stage_bwd = std::max({Lf, Lm, Ll}) * (layer_b + layer_rc) / v;
    const double stage_fwd = std::max({Lf, Lm, Ll}) * layer_f / v;
    const bool megatron = fw_ == Framework::Megatron || fw_ == Framework::Nemo;
    const double gbytes = megatron || fw_ == Framework::Fsdp || fw_ == Framework::Torchtitan ? 4 : 2;
    if (l.shard_group > 0 && l.shard_group < ndp && z >= 2) {
      // HSDP: shards inside the group (counted per layer above), replicas all-reduce their shard once per step.
      const double ar = collective_s(Coll::AllReduce, psi_stage * gbytes / l.shard_group, ndp / l.shard_group,
                                     t * l.shard_group);
      dp_exposed += exposed(ar, stage_bwd);
    } else if (z == 0) {
      dp_exposed += exposed(collective_s(Coll::AllReduce, psi_stage * gbytes, ndp, t), stage_bwd);
    } else if (z == 1 || (z == 2 && !per_mb_rs)) {
      dp_exposed += exposed(collective_s(Coll::ReduceScatter, psi_stage * gbytes, ndp, t), stage_bwd);
      dp_exposed += exposed(collective_s(Coll::AllGather, psi_stage * 2, ndp, t), stage_fwd);
    } else if (z == 2) {
      // ZeRO-2 / shard-grad-op: gradients reduced per micro-batch (counted per layer), params gathered per step.
      if (!per_mb_ag) dp_exposed += exposed(collective_s(Coll::AllGather, psi_stage * 2, ndp, t), stage_fwd);
    }
  }

  // --- optimizer: Adam is memory-bound, ~34 bytes per local parameter (fp32 master, m, v read+write, gradient
  // read, 16-bit copy written, gradient-norm pass). -----------------------------------------------------------------
  const double psi_opt = z >= 1 ? psi_stage / (l.shard_group > 0 ? l.shard_group : ndp) : psi_stage;
  const double optimizer = 34 * psi_opt / hbm_ + 50e-6 * 3;

  // --- assemble --------------------------------------------------------------------------------------------------
  const double body = m * T_max;
  const double share = T_max > 0 ? body / T_max : 0;  // = m
  // Split the bottleneck stage's per-micro-batch time into its parts.
  const int Lmax = std::max({Lf, Lm, Ll});
  const double parts_compute = Lmax * (layer_f + layer_b) + (p == 1 ? emb + head : (T_last >= T_max ? head : 0));
  const double parts_rc = Lmax * layer_rc;
  const double parts_tp = Lmax * tp_layer;
  const double parts_cp = Lmax * cp_layer;
  const double parts_z = Lmax * z_layer;
  const double parts_stack = Lmax * stack_layer;
  const double parts_sum = parts_compute + parts_rc + parts_tp + parts_cp + parts_z + parts_stack + mb_over;
  const double scale = parts_sum > 0 ? T_max / parts_sum : 1;
  Breakdown& br = r.br;
  br.compute = share * parts_compute * scale;
  br.recompute = share * parts_rc * scale;
  br.tp_comm = share * parts_tp * scale;
  br.cp_comm = share * parts_cp * scale;
  br.dp_comm_exposed = share * parts_z * scale + dp_exposed;
  br.pp_bubble = bubble;
  br.pp_comm = pp_comm;
  br.optimizer = optimizer;
  br.other = share * (mb_over + parts_stack) * scale + p_.step_overhead_s;
  r.step_s = br.compute + br.recompute + br.tp_comm + br.cp_comm + br.pp_bubble + br.pp_comm + br.dp_comm_exposed +
             br.optimizer + br.other;

  const double tokens = double(s_.training.global_batch) * s_len_;
  r.model_flops_step = tokens * model_flops_per_token(s_.model);
  const double rc_flops =
      l.recompute == Recompute::Full ? tokens * (2 * L_ * P_layer_ + 4.0 * L_ * h_ * s_len_)
      : l.recompute == Recompute::Selective ? tokens * 4.0 * L_ * h_ * s_len_ : 0;
  r.hw_flops_step = r.model_flops_step + rc_flops;

  r.mem_gib = memory_gib(l, &r.mem);
  r.fits = r.mem_gib <= capacity_gib_;
  if (!r.fits) {
    const double terms[6] = {r.mem.weights, r.mem.gradients, r.mem.optimizer, r.mem.activations, r.mem.logits,
                             r.mem.buffers};
    r.overflow_term = int(std::max_element(terms, terms + 6) - terms);
  }
  return r;
}

}  // namespace paratune::advisor
