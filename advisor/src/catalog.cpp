// Compiled-in catalogs: GPUs (vendor data sheets) and model presets (papers / published configs).
// Every number has its source next to it; "assumed" marks the few that are not on a data sheet.
#include "paratune/advisor/catalog.h"

#include <algorithm>
#include <string_view>
#include <stdexcept>

namespace paratune::advisor {

const char* to_string(GpuArch a) {
  switch (a) {
    case GpuArch::Pascal: return "pascal";
    case GpuArch::Volta: return "volta";
    case GpuArch::Turing: return "turing";
    case GpuArch::Ampere: return "ampere";
    case GpuArch::Ada: return "ada";
    case GpuArch::Hopper: return "hopper";
    case GpuArch::Blackwell: return "blackwell";
    case GpuArch::Cdna2: return "cdna2";
    case GpuArch::Cdna3: return "cdna3";
  }
  return "?";
}

namespace {

// Rates are DENSE (no 2:4 sparsity). Memory in GiB as CUDA reports it (nvidia-smi total: A100 40GB = 40960 MiB,
// H100 80GB = 81559 MiB); the CUDA context is counted by the model, not here. NVLink in GB/s per direction per GPU
// (data sheets quote bidirectional totals: 600 GB/s for A100 -> 300 per direction).
GpuSpec G(const char* key, const char* name, GpuArch arch, double bf16, double fp16, double fp8, double mem_gib,
          double hbm, double nvl, double pcie, bool nvswitch, bool nvls, bool has_bf16, int sms, const char* src,
          bool fast_softmax = false) {
  GpuSpec g;
  g.key = key; g.name = name; g.arch = arch; g.bf16_tflops = bf16; g.fp16_tflops = fp16; g.fp8_tflops = fp8;
  g.memory_gib = mem_gib; g.hbm_tbps = hbm; g.nvlink_gbps = nvl; g.pcie_gbps = pcie; g.nvswitch = nvswitch;
  g.nvls = nvls; g.bf16 = has_bf16; g.sm_count = sms; g.source = src; g.fast_softmax = fast_softmax;
  return g;
}

const std::vector<GpuSpec>& table() {
  static const std::vector<GpuSpec> t = {
      // NVIDIA Tesla P100 data sheet (2016): 21.2 TFLOPS FP16 (SXM2, no tensor cores), 732 GB/s HBM2,
      // 160 GB/s NVLink bidirectional (4 links).
      G("p100-sxm2-16gb", "Tesla P100 SXM2 16GB", GpuArch::Pascal, 21.2, 21.2, 0, 16, 0.732, 80, 16, false, false,
        false, 56, "NVIDIA Tesla P100 data sheet (2016)"),
      G("p100-pcie-16gb", "Tesla P100 PCIe 16GB", GpuArch::Pascal, 18.7, 18.7, 0, 16, 0.732, 0, 16, false, false,
        false, 56, "NVIDIA Tesla P100 data sheet (2016)"),
      G("p100-pcie-12gb", "Tesla P100 PCIe 12GB", GpuArch::Pascal, 18.7, 18.7, 0, 12, 0.549, 0, 16, false, false,
        false, 56, "NVIDIA Tesla P100 data sheet (2016)"),
      // NVIDIA V100 Tensor Core GPU data sheet (Jan 2020): SXM2 125 TFLOPS tensor (FP16), PCIe 112; HBM2 900 GB/s;
      // NVLink 300 GB/s bidirectional (6 links). DGX-2 (SXM3, NVSwitch): 2 PFLOPS / 16 GPUs = 125.
      G("v100-sxm2-16gb", "Tesla V100 SXM2 16GB", GpuArch::Volta, 125, 125, 0, 16, 0.9, 150, 16, false, false,
        false, 80, "NVIDIA V100 data sheet (Jan 2020)"),
      G("v100-sxm2-32gb", "Tesla V100 SXM2 32GB", GpuArch::Volta, 125, 125, 0, 32, 0.9, 150, 16, false, false,
        false, 80, "NVIDIA V100 data sheet (Jan 2020)"),
      G("v100-sxm3-32gb", "Tesla V100 SXM3 32GB (DGX-2)", GpuArch::Volta, 125, 125, 0, 32, 0.9, 150, 16, true,
        false, false, 80, "NVIDIA DGX-2 data sheet: 2 PFLOPS tensor / 16 GPUs, NVSwitch"),
      G("v100-pcie-16gb", "Tesla V100 PCIe 16GB", GpuArch::Volta, 112, 112, 0, 16, 0.9, 0, 16, false, false, false,
        80, "NVIDIA V100 data sheet (Jan 2020)"),
      G("v100-pcie-32gb", "Tesla V100 PCIe 32GB", GpuArch::Volta, 112, 112, 0, 32, 0.9, 0, 16, false, false, false,
        80, "NVIDIA V100 data sheet (Jan 2020)"),
      // NVIDIA T4 data sheet: 65 TFLOPS FP16 mixed precision, 16 GB GDDR6, 320 GB/s, PCIe Gen3 x16.
      G("t4", "Tesla T4", GpuArch::Turing, 65, 65, 0, 15, 0.32, 0, 16, false, false, false, 40,
        "NVIDIA T4 data sheet"),
      // NVIDIA A100 Tensor Core GPU data sheet (2021): 312 TFLOPS BF16/FP16 dense; HBM2 1,555 GB/s (40GB),
      // HBM2e 2,039 GB/s (80GB SXM), 1,935 GB/s (80GB PCIe); NVLink 600 GB/s (SXM; PCIe via bridge for 2 GPUs);
      // PCIe Gen4 64 GB/s bidirectional.
      G("a100-sxm4-40gb", "A100 SXM4 40GB", GpuArch::Ampere, 312, 312, 0, 40.0, 1.555, 300, 32, true, false, true,
        108, "NVIDIA A100 data sheet (2021)"),
      G("a100-sxm4-80gb", "A100 SXM4 80GB", GpuArch::Ampere, 312, 312, 0, 80.0, 2.039, 300, 32, true, false, true,
        108, "NVIDIA A100 data sheet (2021)"),
      G("a100-sxm-64gb", "A100 SXM 64GB (custom HPC SKU)", GpuArch::Ampere, 312, 312, 0, 63.4, 1.638, 300, 32,
        false, false, true, 108, "A100 rates per NVIDIA data sheet; 64 GB / 1.64 TB/s assumed (Leonardo SKU)"),
      G("a100-pcie-40gb", "A100 PCIe 40GB", GpuArch::Ampere, 312, 312, 0, 40.0, 1.555, 300, 32, false, false, true,
        108, "NVIDIA A100 data sheet (2021)"),
      G("a100-pcie-80gb", "A100 PCIe 80GB", GpuArch::Ampere, 312, 312, 0, 80.0, 1.935, 300, 32, false, false, true,
        108, "NVIDIA A100 data sheet (2021)"),
      // NVIDIA A30 data sheet: 165 TFLOPS BF16 dense, 24 GB HBM2 933 GB/s, NVLink bridge 200 GB/s.
      G("a30-24gb", "A30", GpuArch::Ampere, 165, 165, 0, 23.5, 0.933, 100, 32, false, false, true, 56,
        "NVIDIA A30 data sheet"),
      // NVIDIA A10 data sheet: 125 TFLOPS BF16 dense, 24 GB GDDR6 600 GB/s. A10G (AWS G5) has no public data
      // sheet: 70 TFLOPS dense assumed (about 0.56x A10 by clocks/SMs).
      G("a10-24gb", "A10", GpuArch::Ampere, 125, 125, 0, 22.5, 0.6, 0, 32, false, false, true, 72,
        "NVIDIA A10 data sheet"),
      G("a10g-24gb", "A10G", GpuArch::Ampere, 70, 70, 0, 22.5, 0.6, 0, 32, false, false, true, 80,
        "assumed (no NVIDIA data sheet for the AWS A10G)"),
      // NVIDIA L4 / L40 / L40S data sheets: dense BF16 121 / 181 / 362, FP8 242.5 / 362 / 733; GDDR6 300 / 864 /
      // 864 GB/s; PCIe Gen4, no NVLink.
      G("l4-24gb", "L4", GpuArch::Ada, 121, 121, 242.5, 22.5, 0.3, 0, 32, false, false, true, 58,
        "NVIDIA L4 data sheet"),
      G("l40-48gb", "L40", GpuArch::Ada, 181, 181, 362, 44.5, 0.864, 0, 32, false, false, true, 142,
        "NVIDIA L40 data sheet"),
      G("l40s", "L40S", GpuArch::Ada, 362, 362, 733, 44.5, 0.864, 0, 32, false, false, true, 142,
        "NVIDIA L40S data sheet"),
      // NVIDIA H100 data sheet: SXM5 989 TFLOPS BF16 dense / 1,979 FP8 dense, HBM3 3.35 TB/s, NVLink 900 GB/s;
      // PCIe 756 / 1,513, HBM2e 2.0 TB/s, NVLink bridge 600 GB/s; H100 NVL 835 / 1,671, 94 GB, 3.9 TB/s.
      // H800 (China SKU): H100 compute with NVLink 400 GB/s.
      G("h100-sxm5-80gb", "H100 SXM5 80GB", GpuArch::Hopper, 989.4, 989.4, 1978.9, 79.6, 3.35, 450, 64, true, true,
        true, 132, "NVIDIA H100 data sheet"),
      G("h800-sxm5-80gb", "H800 SXM5 80GB", GpuArch::Hopper, 989.4, 989.4, 1978.9, 79.6, 3.35, 200, 64, true, true,
        true, 132, "NVIDIA H800 product brief (NVLink 400 GB/s)"),
      G("h100-pcie-80gb", "H100 PCIe 80GB", GpuArch::Hopper, 756, 756, 1513, 79.6, 2.0, 300, 64, false, false, true,
        114, "NVIDIA H100 data sheet"),
      G("h100-nvl-94gb", "H100 NVL 94GB", GpuArch::Hopper, 835, 835, 1671, 93.0, 3.9, 300, 64, false, false, true,
        132, "NVIDIA H100 data sheet"),
      // NVIDIA H200 data sheet: 989 BF16 / 1,979 FP8 dense, 141 GB HBM3e, 4.8 TB/s, NVLink 900 GB/s.
      G("h200-sxm-141gb", "H200 SXM 141GB", GpuArch::Hopper, 989.4, 989.4, 1978.9, 140.4, 4.8, 450, 64, true,
        true, true, 132, "NVIDIA H200 data sheet"),
      // NVIDIA HGX B200 / DGX B200 data sheets: 2.25 PFLOPS BF16 dense, 4.5 PFLOPS FP8 dense per GPU (half the
      // sparse figures), 180 GB HBM3e at 8 TB/s (DGX B200: 64 TB/s for 8 GPUs), NVLink 5 1.8 TB/s.
      G("b200-sxm-180gb", "B200 SXM 180GB", GpuArch::Blackwell, 2250, 2250, 4500, 178.4, 8.0, 900, 64, true, true,
        true, 148, "NVIDIA HGX B200 / DGX B200 data sheets"),
      // NVIDIA GB200 NVL72 data sheet: 360 PFLOPS FP16/BF16 and 720 FP8 per 72-GPU rack with sparsity -> 2.5 / 5.0
      // PFLOPS dense per GPU; dgxc-benchmarking's READMEs compute GB200 MFU against 2,450 BF16 / 4,900 FP8, which is
      // used here (the clock the rack sustains). Up to 186 GB HBM3e at 8 TB/s, NVLink 5 1.8 TB/s (900 per direction)
      // across the 72-GPU NVLink domain (nvlink_domain = 72 in the scenario); 4 GPUs per compute tray (node).
      G("gb200", "GB200 (NVL72)", GpuArch::Blackwell, 2450, 2450, 4900, 184.0, 8.0, 900, 64, true, true, true, 148,
        "NVIDIA GB200 NVL72 data sheet; peaks as dgxc-benchmarking READMEs state them"),
      // NVIDIA DGX B300 data sheet: 72 PFLOPS FP8 training for 8 GPUs with sparsity (the same as DGX B200) ->
      // 4.5 PFLOPS FP8 / 2.25 BF16 dense per GPU; 2.3 TB HBM3e = 288 GB per GPU at 8 TB/s; NVLink 5 1.8 TB/s
      // through NVSwitch. Blackwell Ultra: the doubled attention-layer (softmax) rate of the GB300 entry.
      G("b300-sxm-288gb", "B300 SXM 288GB", GpuArch::Blackwell, 2250, 2250, 4500, 285.4, 8.0, 900, 64, true, true,
        true, 160, "NVIDIA DGX B300 data sheet (BF16/FP8 dense as B200)", true),
      // NVIDIA GB300 NVL72 data sheet: the same 360 / 720 PFLOPS BF16 / FP8 per rack with sparsity as GB200 (the
      // Ultra adds FP4 rate), 288 GB HBM3e at 8 TB/s, NVLink 5 1.8 TB/s.
      G("gb300", "GB300 (NVL72)", GpuArch::Blackwell, 2450, 2450, 4900, 285.4, 8.0, 900, 64, true, true, true, 160,
        "NVIDIA GB300 NVL72 data sheet (BF16/FP8 dense as GB200)", true),
      // AMD Instinct MI250X data sheet: 383 TFLOPS BF16 for the package = 2 GCDs; the scheduler allocates one GCD
      // as one GPU, so this entry is per GCD: 191.5 TFLOPS, 64 GB HBM2e, 1.6 TB/s; Infinity Fabric between GCDs
      // 50-200 GB/s per direction depending on the pair (Frontier node) -> 100 assumed (no switch).
      G("mi250x", "Instinct MI250X (one GCD)", GpuArch::Cdna2, 191.5, 191.5, 0, 64, 1.6, 100, 32, false, false,
        true, 110, "AMD Instinct MI250X data sheet (per GCD = half the package)"),
      // AMD Instinct MI100 data sheet: 92.3 TFLOPS BF16, 184.6 FP16 matrix, 32 GB HBM2 1.23 TB/s.
      G("mi100-32gb", "Instinct MI100", GpuArch::Cdna2, 92.3, 184.6, 0, 32, 1.23, 0, 32, false, false, true, 120,
        "AMD Instinct MI100 data sheet"),
      G("mi50-32gb", "Instinct MI50", GpuArch::Cdna2, 26.5, 26.5, 0, 32, 1.024, 0, 32, false, false, false, 60,
        "AMD Instinct MI50 data sheet"),
      // AMD Instinct MI300X data sheet: 1,307.4 TFLOPS BF16 dense, 2,614.9 FP8 dense, 192 GB HBM3 5.3 TB/s,
      // Infinity Fabric 896 GB/s aggregate bidirectional (7 links, fully connected 8-GPU platform).
      G("mi300x", "Instinct MI300X", GpuArch::Cdna3, 1307.4, 1307.4, 2614.9, 192, 5.3, 448, 64, true, false, true,
        304, "AMD Instinct MI300X data sheet"),
  };
  return t;
}

bool same_key(std::string_view a, std::string_view b) {  // case-insensitive, without a copy (a hot path)
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](unsigned char x, unsigned char y) {
           return std::tolower(x) == std::tolower(y);
         });
}

const GpuSpec* find_gpu(const std::string& key) {
  static const std::vector<std::pair<std::string, std::string>> aliases = {
      {"t4-16gb", "t4"}, {"l40s-48gb", "l40s"}, {"mi250x-128gb", "mi250x"}, {"mi250x-64gb", "mi250x"},
      {"mi300x-192gb", "mi300x"}, {"h100-sxm-80gb", "h100-sxm5-80gb"}, {"h200-sxm5-141gb", "h200-sxm-141gb"},
      {"b200-180gb", "b200-sxm-180gb"}, {"gb200-186gb", "gb200"}, {"gb300-288gb", "gb300"}};
  std::string_view k = key;
  for (const auto& [a, b] : aliases)
    if (same_key(k, a)) k = b;
  for (const auto& g : table())
    if (same_key(g.key, k)) return &g;
  return nullptr;
}

}  // namespace

bool has_flash_attention(GpuArch a) {
  return a != GpuArch::Pascal && a != GpuArch::Volta && a != GpuArch::Turing;
}

const GpuSpec& gpu_spec(const std::string& key) {
  if (const GpuSpec* g = find_gpu(key)) return *g;
  std::string valid;
  for (const auto& k : gpu_keys()) valid += (valid.empty() ? "" : ", ") + k;
  throw std::invalid_argument("unknown GPU '" + key + "'; valid: " + valid +
                              " (or give [cluster.gpu_spec] peak_tflops and memory_gib)");
}

bool is_gpu_key(const std::string& key) { return find_gpu(key) != nullptr; }

bool hopper_or_blackwell(const std::string& key) {
  const GpuSpec* g = find_gpu(key);  // the catalog's: [cluster.gpu_spec] overrides never change the architecture
  return g && (g->arch == GpuArch::Hopper || g->arch == GpuArch::Blackwell);
}

bool gpu_described(const ClusterSpec& c) { return is_gpu_key(c.gpu) || (c.peak_tflops > 0 && c.memory_gib > 0); }

std::vector<std::string> gpu_keys() {
  std::vector<std::string> k;
  for (const auto& g : table()) k.push_back(g.key);
  return k;
}

GpuSpec effective_gpu(const ClusterSpec& c) {
  GpuSpec g;
  if (const GpuSpec* known = find_gpu(c.gpu)) {
    g = *known;
  } else {
    // An unknown GPU fully described by overrides: assume a recent (Hopper-class) part.
    g.key = c.gpu; g.name = c.gpu; g.arch = GpuArch::Hopper; g.hbm_tbps = 2.0; g.pcie_gbps = 32;
    g.source = "[cluster.gpu_spec] overrides";
  }
  if (c.peak_tflops > 0) {
    if (g.bf16_tflops > 0 && g.fp8_tflops > 0) g.fp8_tflops *= c.peak_tflops / g.bf16_tflops;
    g.bf16_tflops = g.fp16_tflops = c.peak_tflops;
  }
  if (c.memory_gib > 0) g.memory_gib = c.memory_gib;
  if (c.hbm_tbps > 0) g.hbm_tbps = c.hbm_tbps;
  if (c.nvlink_gbps > 0) g.nvlink_gbps = c.nvlink_gbps;
  return g;
}

// ---------------------------------------------------------------------------------------------------------------
// Model presets.
namespace {

ModelSpec M(const char* name, int L, int h, int a, int g, int f, int V, int s, bool gated, bool tied, bool dropout) {
  ModelSpec m;
  m.name = name; m.layers = L; m.hidden = h; m.heads = a; m.kv_heads = g; m.ffn_hidden = f; m.vocab = V;
  m.seq_len = s; m.gated_mlp = gated; m.tied_embeddings = tied; m.dropout = dropout;
  return m;
}

// A mixture-of-experts preset: the dense shape M() takes (ffn = the dense layers' FFN, unused without dense
// layers), then experts, top-k, expert FFN, shared experts, leading dense layers, head_dim.
ModelSpec MoE(ModelSpec m, int experts, int top_k, int expert_ffn, int shared, int dense_layers, int head_dim,
              MoeRouter router) {
  m.moe_experts = experts; m.moe_top_k = top_k; m.moe_ffn_hidden = expert_ffn; m.moe_shared_experts = shared;
  m.moe_dense_layers = dense_layers; m.head_dim = head_dim; m.moe_router = router;
  return m;
}

ModelSpec deepseek_v3() {
  // deepseek-ai/DeepSeek-V3 config.json: hidden 7168, 61 layers (first_k_dense_replace 3, intermediate 18432), 128
  // heads, MLA (q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128),
  // 256 routed experts (moe_intermediate_size 2048), 8 per token, 1 shared expert, sigmoid gate with expert bias
  // (aux-loss-free), vocab 129280, num_nextn_predict_layers 1; pre-training sequence 4096 (DeepSeek-V3 Technical
  // Report §4.2). Model card: 671B total, 37B activated (+14B of the MTP module).
  ModelSpec m = MoE(M("deepseek-v3", 61, 7168, 128, 128, 18432, 129280, 4096, true, false, false), 256, 8, 2048, 1,
                    3, 0, MoeRouter::AuxLossFree);
  m.q_lora_rank = 1536; m.kv_lora_rank = 512; m.qk_head_dim = 128; m.qk_rope_head_dim = 64; m.v_head_dim = 128;
  m.mtp_layers = 1;
  // Node-limited routing (Technical Report §2.1.2: a token's experts on at most M = 4 nodes): config.json n_group 8,
  // topk_group 4, as Megatron-Bridge's DeepSeek-V3 bridge maps them (moe_router_num_groups, moe_router_group_topk).
  m.moe_router_groups = 8; m.moe_router_group_topk = 4;
  return m;
}

const std::vector<ModelSpec>& presets() {
  static const std::vector<ModelSpec> p = {
      // GPT-3: Brown et al. 2020, Table 2.1 (n_layers, d_model, n_heads), s = 2048, f = 4h. Vocabulary 50,257
      // padded to 51,200 as in Megatron-LM / NeMo (Narayanan et al. 2021 use V = 51,200). The paper's 1.3B lists
      // 24 heads of 128 (inconsistent with d_model 2048); NeMo/Megatron use 16 heads. 13B: d_model 5,140 in the
      // paper, 5,120 in every public reimplementation (divisible by 40 heads).
      M("gpt3-125m", 12, 768, 12, 12, 3072, 51200, 2048, false, true, true),
      M("gpt3-350m", 24, 1024, 16, 16, 4096, 51200, 2048, false, true, true),
      M("gpt3-760m", 24, 1536, 16, 16, 6144, 51200, 2048, false, true, true),
      M("gpt3-1.3b", 24, 2048, 16, 16, 8192, 51200, 2048, false, true, true),
      M("gpt3-2.7b", 32, 2560, 32, 32, 10240, 51200, 2048, false, true, true),
      M("gpt3-6.7b", 32, 4096, 32, 32, 16384, 51200, 2048, false, true, true),
      M("gpt3-13b", 40, 5120, 40, 40, 20480, 51200, 2048, false, true, true),
      M("gpt3-175b", 96, 12288, 96, 96, 49152, 51200, 2048, false, true, true),
      // Llama 2: Touvron et al. 2023 and the released config.json files (SwiGLU, RMSNorm, untied, V = 32,000,
      // s = 4,096; 70B uses GQA with 8 KV heads).
      M("llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096, true, false, false),
      M("llama2-13b", 40, 5120, 40, 40, 13824, 32000, 4096, true, false, false),
      M("llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096, true, false, false),
      // Llama 3 / 3.1: Dubey et al. 2024 ("The Llama 3 Herd of Models") Table 3 and config.json: V = 128,256,
      // GQA with 8 KV heads, pre-training s = 8,192.
      M("llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192, true, false, false),
      M("llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192, true, false, false),
      M("llama3-405b", 126, 16384, 128, 8, 53248, 128256, 8192, true, false, false),
      M("llama3.1-8b", 32, 4096, 32, 8, 14336, 128256, 8192, true, false, false),
      M("llama3.1-70b", 80, 8192, 64, 8, 28672, 128256, 8192, true, false, false),
      M("llama3.1-405b", 126, 16384, 128, 8, 53248, 128256, 8192, true, false, false),
      // Mistral 7B: Jiang et al. 2023, Table 1 (dim 4096, 32 layers, 32 heads, 8 KV heads, hidden 14336,
      // vocab 32000); s = 8,192 assumed for training (sliding window 4,096; the model is not windowed here).
      M("mistral-7b", 32, 4096, 32, 8, 14336, 32000, 8192, true, false, false),
      // MPT: mosaicml/llm-foundry scripts/train/yamls/pretrain/mpt-*.yaml (expansion ratio 4, V = 50,368, s =
      // 2,048, tied embeddings, no dropout, ALiBi + FlashAttention).
      M("mpt-1b", 24, 2048, 16, 16, 8192, 50368, 2048, false, true, false),
      M("mpt-3b", 32, 2560, 20, 20, 10240, 50368, 2048, false, true, false),
      M("mpt-7b", 32, 4096, 32, 32, 16384, 50368, 2048, false, true, false),
      M("mpt-13b", 40, 5120, 40, 40, 20480, 50368, 2048, false, true, false),
      M("mpt-30b", 48, 7168, 56, 56, 28672, 50368, 2048, false, true, false),
      M("mpt-70b", 80, 8192, 64, 64, 32768, 50368, 2048, false, true, false),
      // Mixture of experts (docs/model.md §9). Parameter counts are tested against the model cards
      // (tests/advisor/moe_test.cpp, MoePresets.*). Training sequence 4096 where a card states none (assumed).
      // Mixtral 8x7B: mistralai/Mixtral-8x7B-v0.1 config.json (hidden 4096, 32 layers, 32 heads, 8 KV heads,
      // intermediate 14336, 8 local experts, 2 per token, vocab 32000); Jiang et al. 2024 "Mixtral of Experts":
      // 46.7B total, 12.9B active.
      MoE(M("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 4096, true, false, false), 8, 2, 14336, 0, 0, 0,
          MoeRouter::AuxLoss),
      // Mixtral 8x22B: mistralai/Mixtral-8x22B-v0.1 config.json (hidden 6144, 56 layers, 48 heads, 8 KV heads,
      // intermediate 16384, 8 experts, 2 per token, vocab 32768); Mistral AI announcement: 141B total, 39B active.
      MoE(M("mixtral-8x22b", 56, 6144, 48, 8, 16384, 32768, 4096, true, false, false), 8, 2, 16384, 0, 0, 0,
          MoeRouter::AuxLoss),
      deepseek_v3(),
      // Qwen3-30B-A3B: Qwen/Qwen3-30B-A3B config.json (hidden 2048, 48 layers, 32 heads, 4 KV heads, head_dim 128,
      // 128 experts, 8 per token, moe_intermediate_size 768, vocab 151936, untied); card: 30.5B total, 3.3B active.
      MoE(M("qwen3-30b-a3b", 48, 2048, 32, 4, 6144, 151936, 4096, true, false, false), 128, 8, 768, 0, 0, 128,
          MoeRouter::AuxLoss),
      // Qwen3-235B-A22B: Qwen/Qwen3-235B-A22B config.json (hidden 4096, 94 layers, 64 heads, 4 KV heads, head_dim
      // 128, 128 experts, 8 per token, moe_intermediate_size 1536, vocab 151936); card: 235B total, 22B active.
      MoE(M("qwen3-235b-a22b", 94, 4096, 64, 4, 12288, 151936, 4096, true, false, false), 128, 8, 1536, 0, 0, 128,
          MoeRouter::AuxLoss),
      // gpt-oss-120b / -20b: openai/gpt-oss-* config.json (hidden 2880, 36 / 24 layers, 64 heads of 64, 8 KV heads,
      // 128 / 32 experts, 4 per token, intermediate 2880 (SwiGLU), vocab 201088; alternate layers attend a
      // 128-token window, not modelled: full attention is assumed); model card: 116.8B total / 5.1B active and
      // 20.9B / 3.6B.
      MoE(M("gpt-oss-120b", 36, 2880, 64, 8, 2880, 201088, 4096, true, false, false), 128, 4, 2880, 0, 0, 64,
          MoeRouter::AuxLoss),
      MoE(M("gpt-oss-20b", 24, 2880, 64, 8, 2880, 201088, 4096, true, false, false), 32, 4, 2880, 0, 0, 64,
          MoeRouter::AuxLoss),
      // OLMoE-1B-7B: allenai/OLMoE-1B-7B-0924 config.json (hidden 2048, 16 layers, 16 heads, 64 experts, 8 per token,
      // intermediate 1024, vocab 50304, untied); Muennighoff et al. 2024: 6.9B total, 1.3B active.
      MoE(M("olmoe-1b-7b", 16, 2048, 16, 16, 1024, 50304, 4096, true, false, false), 64, 8, 1024, 0, 0, 0,
          MoeRouter::AuxLoss),
  };
  return p;
}

std::string norm_key(std::string k) {
  std::transform(k.begin(), k.end(), k.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (k == "llama-3-8b" || k == "llama3_8b") k = "llama3-8b";
  if (k == "llama-3-70b" || k == "llama3_70b") k = "llama3-70b";
  if (k == "llama-3.1-405b" || k == "llama31-405b") k = "llama3.1-405b";
  if (k == "deepseekv3" || k == "deepseek-v3-671b") k = "deepseek-v3";
  return k;
}

}  // namespace

ModelSpec model_preset(const std::string& key) {
  const std::string k = norm_key(key);
  for (const auto& m : presets())
    if (m.name == k) return m;
  std::string valid;
  for (const auto& n : model_preset_keys()) valid += (valid.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown model preset '" + key + "'; valid: " + valid);
}

std::vector<std::string> model_preset_keys() {
  std::vector<std::string> k;
  for (const auto& m : presets()) k.push_back(m.name);
  return k;
}

bool is_model_preset(const std::string& key) {
  const std::string k = norm_key(key);
  return std::any_of(presets().begin(), presets().end(), [&](const ModelSpec& m) { return m.name == k; });
}

}  // namespace paratune::advisor
