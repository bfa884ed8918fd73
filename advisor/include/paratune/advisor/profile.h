// Hardware profiles: what `paratune measure` found a node type's GEMMs, memory and collectives to achieve
// (docs/measure.md; the file: paratune.toml(5) "HARDWARE PROFILE"). The measurements are fitted to the model's own
// terms here (fit_profile), and a profile becomes overrides of a scenario's resolved rates (use_profile; the hook
// in resolve.cpp applies them): a measured GEMM rate replaces the catalog peak times the fitted GEMM efficiency,
// a measured copy bandwidth the HBM bandwidth times its efficiency, measured bus bandwidths the NVLink and NIC
// ones. Pure: text and values in, values out.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "paratune/advisor/model.h"
#include "paratune/advisor/resolved.h"
#include "paratune/advisor/scenario.h"

namespace paratune::advisor {

// One timed GEMM (M x K) * (K x N) on one device.
struct GemmPoint {
  std::string dtype;  // "bf16", "fp16", "fp8", "fp32"
  double m = 0, n = 0, k = 0, tflops = 0;
};
// One attention (SDPA, or the unfused product where the PyTorch has none), forward.
struct AttentionPoint {
  std::string dtype, kernel;  // kernel: "sdpa" or "unfused"
  double batch = 0, heads = 0, seq = 0, head_dim = 0, tflops = 0;
};
// One streaming copy of `bytes` (read and written).
struct CopyPoint {
  double bytes = 0, gbps = 0;
};
// One collective: op "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv"; scope "intra" (the
// ranks of one node) or "inter" (every rank of every node). busbw as nccl-tests counts it.
struct CollectivePoint {
  std::string op, scope;
  int ranks = 0;
  double bytes = 0, time_us = 0, busbw_gbps = 0;
};

struct HardwareProfile {
  int version = 1;
  std::string fingerprint;      // the node's topology fingerprint (`paratune probe`): the profile is for such nodes
  std::string gpu;              // catalog key of the node's GPU, or "cpu" (a CPU-only node: gloo, no GPU terms)
  std::string device;           // what PyTorch called the device
  std::string generated, hosts;
  int nodes = 0, ranks_per_node = 0;
  double duration_s = 0;
  std::map<std::string, std::string> software;  // python, torch, backend, nccl, cuda, driver
  std::map<std::string, std::string> env;       // the NCCL_* / GLOO_* variables it ran with
  MeasuredRates rates;          // the fit the advisor uses ([fit])
  double fp8_gemm_tflops = 0, attention_tflops = 0, intra_latency_us = 0, inter_latency_us = 0;  // recorded
  std::vector<GemmPoint> gemm;
  std::vector<AttentionPoint> attention;
  std::vector<CopyPoint> copy;
  std::vector<CollectivePoint> collectives;
};

// Throws std::invalid_argument "ORIGIN:LINE:COL: field: what is valid".
HardwareProfile parse_profile(std::string_view toml_text, const std::string& origin);
std::string to_toml(const HardwareProfile& p);

// The model's terms from the measurements (sets p.rates and the recorded figures):
//   GEMM: each point's TFLOP/s over the model's shape factor (Evaluator::gemm_shape_factor: tile quantisation of
//         small matrices), the median over the points of a precision -- the large-GEMM rate the model scales;
//   HBM: the median of the two largest copies;
//   collectives: bus bandwidth at the largest message of each op, the median over all-gather and reduce-scatter
//         inside a node (ring, as NVLink is modelled) and all-reduce across nodes; latency: the smallest message.
void fit_profile(HardwareProfile& p);

// Whether a profile applies to a scenario on a node of fingerprint `node_fingerprint` ("" = not known: only the
// GPU model is checked), and what it changes.
struct ProfileUse {
  bool applies = false;
  std::string warning;                 // why it is ignored
  MeasuredRates rates;                 // what it overrides (the scenario's precision decides which GEMM rate)
  std::vector<std::string> notes;      // which terms came from the profile and which from the catalog
};
ProfileUse use_profile(const HardwareProfile& p, const Scenario& s, const std::string& node_fingerprint);

// The scenario with the profile's rates (unchanged when it does not apply).
Scenario with_profile(const Scenario& s, const ProfileUse& use);

// The hook where a scenario is resolved: the measured rates replace the catalog x efficiency terms of R (the
// stack's own factors -- eager kernels, FP8 gain -- stay on top of the measured GEMM rate).
void apply_measured(const MeasuredRates& m, const ModelParams& p, Resolved& R);

}  // namespace paratune::advisor
