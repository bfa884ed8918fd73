// The hardware profile file (TOML; paratune.toml(5) "HARDWARE PROFILE"): read with every problem named
// FILE:LINE:COL: field, written so that it reads back the same.
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <toml++/toml.h>

#include "paratune/advisor/profile.h"
#include "paratune/advisor/toml_guard.h"
#include "toml_write.h"

namespace paratune::advisor {

namespace {

using toml_write::num;
using toml_write::quoted;

struct Reader {
  const std::string& origin;

  [[noreturn]] void fail(const toml::node& n, const std::string& field, const std::string& what) const {
    const auto& b = n.source().begin;
    throw std::invalid_argument(origin + ":" + std::to_string(b.line) + ":" + std::to_string(b.column) + ": " + field +
                                ": " + what);
  }
  double number(const toml::node& n, const std::string& field, double lo = 0, double hi = 1e18) const {
    double v = 0;
    if (n.is_integer()) v = double(n.as_integer()->get());
    else if (n.is_floating_point()) v = n.as_floating_point()->get();
    else fail(n, field, "must be a number");
    if (!std::isfinite(v) || v < lo || v > hi) {
      char b[128];
      std::snprintf(b, sizeof b, "must be between %g and %g; got %g", lo, hi, v);
      fail(n, field, b);
    }
    return v;
  }
  std::string text(const toml::node& n, const std::string& field) const {
    if (!n.is_string()) fail(n, field, "must be a string");
    return n.as_string()->get();
  }
  const toml::array& tables(const toml::node& n, const std::string& field) const {
    if (!n.is_array_of_tables()) fail(n, field, "must be an array of tables ([[" + field + "]])");
    return *n.as_array();
  }
  std::map<std::string, std::string> strings(const toml::node& n, const std::string& field) const {
    if (!n.is_table()) fail(n, field, "must be a table of strings");
    std::map<std::string, std::string> out;
    for (const auto& [k, v] : *n.as_table()) out[std::string(k.str())] = text(v, field + "." + std::string(k.str()));
    return out;
  }
};

// The fields of one [[...]] table by name: numbers into doubles, strings into strings; anything else is an error.
void fields(const Reader& r, const toml::table& t, const std::string& where, const std::map<std::string, double*>& nums,
            const std::map<std::string, std::string*>& texts) {
  for (const auto& [k, v] : t) {
    const std::string key(k.str());
    if (auto it = nums.find(key); it != nums.end()) *it->second = r.number(v, where + key);
    else if (auto is = texts.find(key); is != texts.end()) *is->second = r.text(v, where + key);
    else r.fail(v, where + key, "unknown key");
  }
}

void read_fit(const Reader& r, const toml::node& n, HardwareProfile& p) {
  if (!n.is_table()) r.fail(n, "fit", "must be a table");
  fields(r, *n.as_table(), "fit.",
         {{"bf16_gemm_tflops", &p.rates.bf16_gemm_tflops}, {"fp16_gemm_tflops", &p.rates.fp16_gemm_tflops},
          {"fp8_gemm_tflops", &p.fp8_gemm_tflops}, {"attention_tflops", &p.attention_tflops},
          {"hbm_gbps", &p.rates.hbm_gbps}, {"intra_busbw_gbps", &p.rates.intra_busbw_gbps},
          {"inter_busbw_gbps", &p.rates.inter_busbw_gbps}, {"intra_latency_us", &p.intra_latency_us},
          {"inter_latency_us", &p.inter_latency_us}},
         {});
}

void read_points(const Reader& r, const std::string& key, const toml::node& n, HardwareProfile& p) {
  int i = 0;
  for (const auto& item : r.tables(n, key)) {
    const auto& t = *item.as_table();
    const std::string w = key + "[" + std::to_string(i++) + "].";
    if (key == "gemm") {
      GemmPoint g;
      fields(r, t, w, {{"m", &g.m}, {"n", &g.n}, {"k", &g.k}, {"tflops", &g.tflops}}, {{"dtype", &g.dtype}});
      p.gemm.push_back(g);
    } else if (key == "attention") {
      AttentionPoint a;
      fields(r, t, w,
             {{"batch", &a.batch}, {"heads", &a.heads}, {"seq", &a.seq}, {"head_dim", &a.head_dim}, {"tflops", &a.tflops}},
             {{"dtype", &a.dtype}, {"kernel", &a.kernel}});
      p.attention.push_back(a);
    } else if (key == "copy") {
      CopyPoint c;
      fields(r, t, w, {{"bytes", &c.bytes}, {"gbps", &c.gbps}}, {});
      p.copy.push_back(c);
    } else {
      CollectivePoint c;
      double ranks = 0;
      fields(r, t, w, {{"ranks", &ranks}, {"bytes", &c.bytes}, {"time_us", &c.time_us}, {"busbw_gbps", &c.busbw_gbps}},
             {{"op", &c.op}, {"scope", &c.scope}});
      c.ranks = int(ranks);
      p.collectives.push_back(c);
    }
  }
}

void read_key(const Reader& r, const std::string& key, const toml::node& v, HardwareProfile& p) {
  if (key == "version") p.version = int(r.number(v, key, 1, 1));
  else if (key == "fingerprint") p.fingerprint = r.text(v, key);
  else if (key == "gpu") p.gpu = r.text(v, key);
  else if (key == "device") p.device = r.text(v, key);
  else if (key == "generated") p.generated = r.text(v, key);
  else if (key == "hosts") p.hosts = r.text(v, key);
  else if (key == "nodes") p.nodes = int(r.number(v, key, 0, 1e6));
  else if (key == "ranks_per_node") p.ranks_per_node = int(r.number(v, key, 0, 1e6));
  else if (key == "duration_s") p.duration_s = r.number(v, key);
  else if (key == "software") p.software = r.strings(v, key);
  else if (key == "env") p.env = r.strings(v, key);
  else if (key == "fit") read_fit(r, v, p);
  else if (key == "gemm" || key == "attention" || key == "copy" || key == "collective") read_points(r, key, v, p);
  else r.fail(v, key, "unknown key; valid: version, fingerprint, gpu, device, generated, hosts, nodes, ranks_per_node, "
                      "duration_s, [software], [env], [fit], [[gemm]], [[attention]], [[copy]], [[collective]]");
}

void write_table(std::string& out, const char* name, const std::map<std::string, std::string>& kv) {
  out += std::string("\n[") + name + "]\n";
  for (const auto& [k, v] : kv) out += quoted(k) + " = " + quoted(v) + "\n";
}

}  // namespace

HardwareProfile parse_profile(std::string_view text, const std::string& origin) {
  if (const auto deep = find_toml_too_deep(text))
    throw std::invalid_argument(origin + ":" + std::to_string(deep->line) + ":" + std::to_string(deep->column) + ": " +
                                toml_too_deep_problem());
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    throw std::invalid_argument(origin + ":" + std::to_string(b.line) + ":" + std::to_string(b.column) + ": " +
                                std::string(e.description()));
  }
  const Reader r{origin};
  HardwareProfile p;
  for (const auto& [k, v] : root) read_key(r, std::string(k.str()), v, p);
  if (p.fingerprint.empty()) throw std::invalid_argument(origin + ":1:1: fingerprint: missing (the nodes' topology fingerprint)");
  if (p.gpu.empty()) throw std::invalid_argument(origin + ":1:1: gpu: missing (the catalog key of the GPU, or \"cpu\")");
  return p;
}

std::string to_toml(const HardwareProfile& p) {
  std::string o = "# paratune hardware profile (`paratune measure`; paratune.toml(5) HARDWARE PROFILE)\n";
  o += "version = " + std::to_string(p.version) + "\nfingerprint = " + quoted(p.fingerprint) + "\ngpu = " +
       quoted(p.gpu) + "\ndevice = " + quoted(p.device) + "\ngenerated = " + quoted(p.generated) + "\nhosts = " +
       quoted(p.hosts) + "\nnodes = " + std::to_string(p.nodes) + "\nranks_per_node = " +
       std::to_string(p.ranks_per_node) + "\nduration_s = " + num(p.duration_s) + "\n";
  write_table(o, "software", p.software);
  write_table(o, "env", p.env);
  o += "\n[fit]  # what the advisor uses (per GPU; network per node)\n";
  const std::pair<const char*, double> fit[] = {
      {"bf16_gemm_tflops", p.rates.bf16_gemm_tflops}, {"fp16_gemm_tflops", p.rates.fp16_gemm_tflops},
      {"fp8_gemm_tflops", p.fp8_gemm_tflops},         {"attention_tflops", p.attention_tflops},
      {"hbm_gbps", p.rates.hbm_gbps},                 {"intra_busbw_gbps", p.rates.intra_busbw_gbps},
      {"inter_busbw_gbps", p.rates.inter_busbw_gbps}, {"intra_latency_us", p.intra_latency_us},
      {"inter_latency_us", p.inter_latency_us}};
  for (const auto& [k, v] : fit) o += std::string(k) + " = " + num(v) + "\n";
  for (const auto& g : p.gemm)
    o += "\n[[gemm]]\ndtype = " + quoted(g.dtype) + "\nm = " + num(g.m) + "\nn = " + num(g.n) + "\nk = " + num(g.k) +
         "\ntflops = " + num(g.tflops) + "\n";
  for (const auto& a : p.attention)
    o += "\n[[attention]]\ndtype = " + quoted(a.dtype) + "\nkernel = " + quoted(a.kernel) + "\nbatch = " + num(a.batch) +
         "\nheads = " + num(a.heads) + "\nseq = " + num(a.seq) + "\nhead_dim = " + num(a.head_dim) + "\ntflops = " +
         num(a.tflops) + "\n";
  for (const auto& c : p.copy) o += "\n[[copy]]\nbytes = " + num(c.bytes) + "\ngbps = " + num(c.gbps) + "\n";
  for (const auto& c : p.collectives)
    o += "\n[[collective]]\nop = " + quoted(c.op) + "\nscope = " + quoted(c.scope) + "\nranks = " +
         std::to_string(c.ranks) + "\nbytes = " + num(c.bytes) + "\ntime_us = " + num(c.time_us) + "\nbusbw_gbps = " +
         num(c.busbw_gbps) + "\n";
  return o;
}

}  // namespace paratune::advisor
