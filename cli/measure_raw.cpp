#include "measure_raw.h"

#include <cstdlib>
#include <ctime>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "iso_time.h"
#include "paratune/tuning/tuning_log.h"

namespace paratune::cli::measure {

using nlohmann::json;

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  return end && *end == '\0' && x >= 0 && x < (1L << 30) ? int(x) : fallback;
}

std::string env_str(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

double num(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) throw std::invalid_argument(std::string("raw figures: '") + key + "' missing");
  return it->get<double>();
}

std::string str(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

const json& array(const json& j, const char* key) {
  static const json empty = json::array();
  const auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : empty;
}

// A figure within what hardware can do (the profile's own reader's bounds, profile_toml.cpp, or tighter): a
// benchmark that wrote a negative time or 1e9 TFLOP/s did not measure anything, and the profile must not say so.
double in(const json& j, const char* key, double lo, double hi, const char* point, size_t i) {
  const double v = num(j, key);
  if (!(v >= lo && v <= hi))
    throw std::invalid_argument(std::string("raw figures: ") + point + "[" + std::to_string(i) + "]." + key +
                                ": must be between " + std::to_string(lo) + " and " + std::to_string(hi) + "; got " +
                                std::to_string(v));
  return v;
}

void read_points(const json& raw, advisor::HardwareProfile& p) {
  constexpr double kDim = 1e7, kTflops = 1e5, kGbps = 1e5, kBytes = 1e13;
  size_t i = 0;
  for (const auto& g : array(raw, "gemm"))
    p.gemm.push_back({str(g, "dtype"), in(g, "m", 1, kDim, "gemm", i), in(g, "n", 1, kDim, "gemm", i),
                      in(g, "k", 1, kDim, "gemm", i), in(g, "tflops", 0, kTflops, "gemm", i)}), ++i;
  i = 0;
  for (const auto& a : array(raw, "attention"))
    p.attention.push_back({str(a, "dtype"), str(a, "kernel"), in(a, "batch", 1, kDim, "attention", i),
                           in(a, "heads", 1, kDim, "attention", i), in(a, "seq", 1, kDim, "attention", i),
                           in(a, "head_dim", 1, kDim, "attention", i), in(a, "tflops", 0, kTflops, "attention", i)}),
        ++i;
  i = 0;
  for (const auto& c : array(raw, "copy"))
    p.copy.push_back({in(c, "bytes", 1, kBytes, "copy", i), in(c, "gbps", 0, kGbps, "copy", i)}), ++i;
  i = 0;
  for (const auto& c : array(raw, "collectives"))
    p.collectives.push_back({str(c, "op"), str(c, "scope"), int(in(c, "ranks", 1, 1e6, "collectives", i)),
                             in(c, "bytes", 1, kBytes, "collectives", i), in(c, "time_us", 0, 1e12, "collectives", i),
                             in(c, "busbw_gbps", 0, kGbps, "collectives", i)}),
        ++i;
}

void read_strings(const json& j, std::map<std::string, std::string>* out) {
  if (!j.is_object()) return;
  for (const auto& [k, v] : j.items())
    if (v.is_string()) (*out)[k] = v.get<std::string>();
}

}  // namespace

Task task_from_env(int port) {
  Task t;
  t.rank = env_int("SLURM_PROCID", 0);
  t.world = std::max(1, env_int("SLURM_NTASKS", env_int("SLURM_STEP_NUM_TASKS", 1)));
  t.local_rank = env_int("SLURM_LOCALID", 0);
  t.nodelist = env_str("SLURM_STEP_NODELIST");
  if (t.nodelist.empty()) t.nodelist = env_str("SLURM_JOB_NODELIST");
  if (!t.nodelist.empty()) {
    const auto hosts = tuning::expand_hostlist(t.nodelist);
    if (!hosts.empty()) t.master_addr = hosts.front();
  }
  const long step = env_int("SLURM_STEP_ID", 0), job = env_int("SLURM_JOB_ID", 0);
  t.master_port = port > 0 ? port : int(20000 + (job * 16 + step) % 20000);
  return t;
}

advisor::HardwareProfile profile_from_raw(const std::string& json_text, const std::string& fingerprint,
                                          const std::string& gpu_key, std::vector<std::string>* warnings) {
  const json raw = json::parse(json_text, nullptr, false);
  if (!raw.is_object()) throw std::invalid_argument("raw figures: not a JSON object");
  advisor::HardwareProfile p;
  p.fingerprint = fingerprint;
  p.gpu = str(raw, "device") == "cuda" ? gpu_key : "cpu";
  if (p.gpu.empty())
    throw std::invalid_argument("the benchmark ran on GPU '" + str(raw, "device_name") +
                                "' but the node's topology shows none (give the plugin's topology file: --topology)");
  p.device = str(raw, "device_name");
  p.generated = now_iso();
  p.duration_s = in(raw, "duration_s", 0, 1e7, "run", 0);
  std::vector<std::string> hosts;
  for (const auto& h : array(raw, "hosts"))
    if (h.is_string()) hosts.push_back(h.get<std::string>());
  std::set<std::string> distinct(hosts.begin(), hosts.end());
  p.nodes = int(distinct.size());
  p.ranks_per_node = p.nodes > 0 ? int(hosts.size()) / p.nodes : 0;
  for (const auto& h : distinct) p.hosts += (p.hosts.empty() ? "" : ",") + h;
  std::set<std::string> others;
  for (const auto& f : array(raw, "fingerprints"))
    if (f.is_string() && f.get<std::string>() != fingerprint) others.insert(f.get<std::string>());
  for (const auto& f : others)
    if (warnings)
      warnings->push_back("some ranks' nodes have fingerprint " + f + ", rank 0's " + fingerprint +
                          ": the profile describes rank 0's node type (measure one node type at a time)");
  read_strings(raw.value("software", json::object()), &p.software);
  read_strings(raw.value("env", json::object()), &p.env);
  read_points(raw, p);
  if (warnings)
    for (const auto& s : array(raw, "skipped"))
      if (s.is_string()) warnings->push_back("skipped: " + s.get<std::string>());
  advisor::fit_profile(p);
  return p;
}

}  // namespace paratune::cli::measure
