// Hardware profiles: the fit of the measurements to the model's terms, whether a profile applies, and the hook
// that puts its rates into a resolved scenario (profile.h; the file format: profile_toml.cpp).
#include "paratune/advisor/profile.h"

#include <algorithm>
#include <cstdio>

#include "paratune/advisor/catalog.h"

namespace paratune::advisor {

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The large-GEMM rate of one precision: each point over the model's shape factor, the median.
double gemm_rate(const std::vector<GemmPoint>& points, const std::string& dtype) {
  std::vector<double> v;
  for (const auto& g : points)
    if (g.dtype == dtype && g.tflops > 0) v.push_back(g.tflops / Evaluator::gemm_shape_factor(g.m, g.n, g.k));
  return median(v);
}

// The point of (op, scope) with the largest (or smallest) message; nullptr when none.
const CollectivePoint* at_size(const std::vector<CollectivePoint>& c, const std::string& op, const std::string& scope,
                               bool largest) {
  const CollectivePoint* best = nullptr;
  for (const auto& x : c)
    if (x.op == op && x.scope == scope && x.time_us > 0 &&
        (!best || (largest ? x.bytes > best->bytes : x.bytes < best->bytes)))
      best = &x;
  return best;
}

// A GPU fabric's bus bandwidth is the plateau of its large messages (nccl-tests' busbw curves level off from tens of
// MiB): a run whose largest message was smaller (--quick, a budget spent early) measured latency, so the term stays
// the catalog's. A CPU profile (gloo, tests and development) takes what it has.
constexpr double kMinBandwidthBytes = 64.0 * (1 << 20);

double busbw(const std::vector<CollectivePoint>& c, const std::string& op, const std::string& scope, bool gpu) {
  const CollectivePoint* x = at_size(c, op, scope, true);
  if (!x || (gpu && x->bytes < kMinBandwidthBytes)) return 0;
  return x->busbw_gbps;
}

double latency(const std::vector<CollectivePoint>& c, const std::string& scope) {
  const CollectivePoint* x = at_size(c, "all_reduce", scope, false);
  return x ? x->time_us : 0;
}

std::string fixed(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

}  // namespace

void fit_profile(HardwareProfile& p) {
  p.rates.bf16_gemm_tflops = gemm_rate(p.gemm, "bf16");
  p.rates.fp16_gemm_tflops = gemm_rate(p.gemm, "fp16");
  p.fp8_gemm_tflops = gemm_rate(p.gemm, "fp8");
  std::vector<double> att;
  for (const auto& a : p.attention)
    if (a.tflops > 0) att.push_back(a.tflops);
  p.attention_tflops = median(att);
  std::vector<CopyPoint> copies = p.copy;
  std::sort(copies.begin(), copies.end(), [](const CopyPoint& a, const CopyPoint& b) { return a.bytes > b.bytes; });
  std::vector<double> big;
  for (size_t i = 0; i < copies.size() && i < 2; ++i) big.push_back(copies[i].gbps);
  p.rates.hbm_gbps = median(big);
  const bool gpu = p.gpu != "cpu";
  std::vector<double> ring;
  for (const char* op : {"all_gather", "reduce_scatter"})
    if (const double b = busbw(p.collectives, op, "intra", gpu); b > 0) ring.push_back(b);
  p.rates.intra_busbw_gbps = ring.empty() ? busbw(p.collectives, "all_reduce", "intra", gpu) : median(ring);
  p.rates.inter_busbw_gbps = busbw(p.collectives, "all_reduce", "inter", gpu);
  p.intra_latency_us = latency(p.collectives, "intra");
  p.inter_latency_us = latency(p.collectives, "inter");
}

ProfileUse use_profile(const HardwareProfile& p, const Scenario& s, const std::string& node_fingerprint) {
  ProfileUse u;
  const std::string gpu = is_gpu_key(s.cluster.gpu) ? gpu_spec(s.cluster.gpu).key : s.cluster.gpu;
  if (p.gpu != gpu) {
    u.warning = "hardware profile ignored: it was measured on '" + p.gpu + "', the scenario's GPU is '" + gpu + "'";
    return u;
  }
  if (!node_fingerprint.empty() && node_fingerprint != p.fingerprint) {
    u.warning = "hardware profile ignored: it was measured on nodes of fingerprint " + p.fingerprint +
                ", this node's is " + node_fingerprint;
    return u;
  }
  u.applies = true;
  u.rates = p.rates;
  std::string from, catalog;
  auto term = [&](double v, const std::string& what, const std::string& unit) {
    if (v > 0) from += (from.empty() ? "" : ", ") + what + " " + fixed(v, 0) + " " + unit;
    else catalog += (catalog.empty() ? "" : ", ") + what;
  };
  const bool fp16 = s.training.precision == Precision::Fp16;
  term(fp16 && p.rates.fp16_gemm_tflops > 0 ? p.rates.fp16_gemm_tflops : p.rates.bf16_gemm_tflops,
       "GEMM (16-bit)", "TFLOP/s per GPU");
  term(p.rates.hbm_gbps, "HBM", "GB/s");
  term(p.rates.intra_busbw_gbps, "intra-node bus", "GB/s");
  term(p.rates.inter_busbw_gbps, "network per node", "GB/s");
  std::string origin = "fingerprint " + p.fingerprint;
  if (!p.generated.empty()) origin += ", measured " + p.generated;
  if (!p.hosts.empty()) origin += " on " + p.hosts;
  u.notes.push_back("from the hardware profile (" + origin + "): " + (from.empty() ? "nothing" : from));
  u.notes.push_back("from the catalog and the fitted model: " + (catalog.empty() ? "" : catalog + ", ") +
                    "attention, FP8 gain, latencies, memory");
  if (!node_fingerprint.empty()) return u;
  u.notes.push_back("hardware profile: no topology given, only its GPU model was checked (--topology to check the "
                    "fingerprint)");
  return u;
}

Scenario with_profile(const Scenario& s, const ProfileUse& use) {
  Scenario out = s;
  if (use.applies) out.cluster.measured = use.rates;
  return out;
}

void apply_measured(const MeasuredRates& m, const ModelParams& p, Resolved& R) {
  const bool fp16 = R.s.training.precision == Precision::Fp16;
  const double measured = fp16 && m.fp16_gemm_tflops > 0 ? m.fp16_gemm_tflops : m.bf16_gemm_tflops;
  const double catalog =
      (fp16 ? R.gpu.fp16_tflops : R.gpu.bf16_tflops) * 1e12 * p.gemm_eff[static_cast<int>(R.gpu.arch)];
  if (measured > 0 && catalog > 0) {  // the stack's factors (and the FP8 gain of peak_lin) stay on top
    const double r = measured * 1e12 / catalog;
    R.peak *= r;
    R.peak_lin *= r;
  }
  if (m.hbm_gbps > 0) R.hbm = m.hbm_gbps * 1e9;
  if (m.intra_busbw_gbps > 0) (R.D > 1 ? R.nvl_gbps : R.pcie_gbps) = m.intra_busbw_gbps;
  if (m.inter_busbw_gbps > 0) R.node_net_gbps = m.inter_busbw_gbps;
}

}  // namespace paratune::advisor
