// Reading and writing the site calibration file (TOML), and applying it to the model's parameters.
#include "paratune/advisor/calibration_file.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <toml++/toml.h>

#include "paratune/advisor/catalog.h"
#include "paratune/advisor/toml_guard.h"
#include "toml_write.h"

namespace paratune::advisor {

namespace {

using toml_write::num;
using toml_write::quoted;

constexpr double kScaleMin = 0.05, kScaleMax = 5.0;  // a multiplier outside this is a broken file, not a site

std::string where(const std::string& origin, const toml::node& n) {
  const auto& b = n.source().begin;
  return origin + ":" + std::to_string(b.line) + ":" + std::to_string(b.column);
}

[[noreturn]] void fail(const std::string& origin, const toml::node& n, const std::string& field, const std::string& what) {
  throw std::invalid_argument(where(origin, n) + ": " + field + ": " + what);
}

double number(const std::string& origin, const toml::node& n, const std::string& field, double lo, double hi) {
  double v = 0;
  if (n.is_integer()) v = double(n.as_integer()->get());
  else if (n.is_floating_point()) v = n.as_floating_point()->get();
  else fail(origin, n, field, "must be a number");
  if (!std::isfinite(v) || v < lo || v > hi) {
    char b[128];
    std::snprintf(b, sizeof b, "must be between %g and %g; got %g", lo, hi, v);
    fail(origin, n, field, b);
  }
  return v;
}

std::string text(const std::string& origin, const toml::node& n, const std::string& field) {
  if (!n.is_string()) fail(origin, n, field, "must be a string");
  return n.as_string()->get();
}

// [[memory]]: gpu, framework, headroom_gib, oom_jobs, near_limit_jobs.
MemoryEntry memory_entry(const std::string& origin, const toml::table& t, const std::string& p) {
  MemoryEntry e;
  bool have_gpu = false;
  for (const auto& [ek, ev] : t) {
    const std::string f(ek.str());
    if (f == "gpu") {
      const std::string g = text(origin, ev, p + f);
      if (!is_gpu_key(g)) fail(origin, ev, p + f, "unknown GPU '" + g + "' (see `paratune advise --help`)");
      e.gpu = gpu_spec(g).key;
      have_gpu = true;
    } else if (f == "framework") {
      const std::string fw = text(origin, ev, p + f);
      try {
        if (!fw.empty() && fw != "any") e.framework = to_string(framework_from_string(fw));
      } catch (const std::invalid_argument& ex) {
        fail(origin, ev, p + f, ex.what());
      }
    } else if (f == "headroom_gib") {
      e.headroom_gib = number(origin, ev, p + f, 0, 1024);
    } else if (f == "oom_jobs") {
      e.oom_jobs = int(number(origin, ev, p + f, 0, 1e9));
    } else if (f == "near_limit_jobs") {
      e.near_limit_jobs = int(number(origin, ev, p + f, 0, 1e9));
    } else {
      fail(origin, ev, p + f, "unknown key; valid: gpu, framework, headroom_gib, oom_jobs, near_limit_jobs");
    }
  }
  if (!have_gpu) fail(origin, t, p + "gpu", "missing (the catalog key of the GPU model)");
  return e;
}

}  // namespace

Calibration parse_calibration(std::string_view toml_text, const std::string& origin) {
  toml::table root;
  // Before TOML++, which recurses once per header/key segment and overflows the stack on deep ones.
  if (const auto deep = find_toml_too_deep(toml_text))
    throw std::invalid_argument(origin + ":" + std::to_string(deep->line) + ":" + std::to_string(deep->column) +
                                ": " + toml_too_deep_problem());
  try {
    root = toml::parse(toml_text, origin);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    throw std::invalid_argument(origin + ":" + std::to_string(b.line) + ":" + std::to_string(b.column) + ": " +
                                std::string(e.description()));
  }
  Calibration c;
  for (const auto& [k, v] : root) {
    const std::string key(k.str());
    if (key == "version") {
      c.version = int(number(origin, v, "version", 1, 1));
    } else if (key == "generated") {
      c.generated = text(origin, v, key);
    } else if (key == "source") {
      c.source = text(origin, v, key);
    } else if (key == "entry") {
      if (!v.is_array_of_tables()) fail(origin, v, "entry", "must be an array of tables ([[entry]])");
      int i = 0;
      for (const auto& item : *v.as_array()) {
        const auto& t = *item.as_table();
        const std::string p = "entry[" + std::to_string(i++) + "].";
        CalibrationEntry e;
        bool have_gpu = false;
        for (const auto& [ek, ev] : t) {
          const std::string f(ek.str());
          if (f == "gpu") {
            const std::string g = text(origin, ev, p + f);
            if (!is_gpu_key(g)) fail(origin, ev, p + f, "unknown GPU '" + g + "' (see `paratune advise --help`)");
            e.gpu = gpu_spec(g).key;
            have_gpu = true;
          } else if (f == "fabric") {
            const std::string fab = text(origin, ev, p + f);
            if (!fab.empty() && fab != "any") {
              try {
                e.fabric = to_string(fabric_from_string(fab));
              } catch (const std::invalid_argument& ex) {
                fail(origin, ev, p + f, ex.what());
              }
            }
          } else if (f == "framework") {
            const std::string fw = text(origin, ev, p + f);
            if (!fw.empty() && fw != "any") {
              try {
                e.framework = to_string(framework_from_string(fw));
              } catch (const std::invalid_argument& ex) {
                fail(origin, ev, p + f, ex.what());
              }
            }
          } else if (f == "compute_scale") {
            e.compute_scale = number(origin, ev, p + f, kScaleMin, kScaleMax);
          } else if (f == "network_scale") {
            e.network_scale = number(origin, ev, p + f, kScaleMin, kScaleMax);
          } else if (f == "samples") {
            e.samples = int(number(origin, ev, p + f, 0, 1e9));
          } else if (f == "multinode_samples") {
            e.multinode_samples = int(number(origin, ev, p + f, 0, 1e9));
          } else if (f == "error_before") {
            e.error_before = number(origin, ev, p + f, 0, 1e6);
          } else if (f == "error_after") {
            e.error_after = number(origin, ev, p + f, 0, 1e6);
          } else {
            fail(origin, ev, p + f,
                 "unknown key; valid: gpu, fabric, framework, compute_scale, network_scale, samples, multinode_samples, "
                 "error_before, error_after");
          }
        }
        if (!have_gpu) fail(origin, item, p + "gpu", "missing (the catalog key of the GPU model)");
        for (const auto& other : c.entries)
          if (other.gpu == e.gpu && other.fabric == e.fabric && other.framework == e.framework)
            fail(origin, item, p + "gpu",
                 "a second entry for " + e.gpu + " / " + (e.fabric.empty() ? "any" : e.fabric) + " / " +
                     (e.framework.empty() ? "any" : e.framework));
        c.entries.push_back(e);
      }
    } else if (key == "memory") {
      if (!v.is_array_of_tables()) fail(origin, v, "memory", "must be an array of tables ([[memory]])");
      int i = 0;
      for (const auto& item : *v.as_array()) {
        MemoryEntry e = memory_entry(origin, *item.as_table(), "memory[" + std::to_string(i++) + "].");
        for (const auto& other : c.memory)
          if (other.gpu == e.gpu && other.framework == e.framework)
            fail(origin, item, "memory[" + std::to_string(i - 1) + "].gpu",
                 "a second entry for " + e.gpu + " / " + (e.framework.empty() ? "any" : e.framework));
        c.memory.push_back(e);
      }
    } else {
      fail(origin, v, key, "unknown key; valid: version, generated, source, [[entry]], [[memory]]");
    }
  }
  return c;
}

std::string to_toml(const Calibration& c) {
  std::string out =
      "# paratune site calibration (written by `paratune calibrate`; docs/calibration.md).\n"
      "# Per GPU model, fabric and framework: multipliers on the model's GEMM efficiency and fabric efficiency.\n";
  out += "version = " + std::to_string(c.version) + "\n";
  if (!c.generated.empty()) out += "generated = " + quoted(c.generated) + "\n";
  if (!c.source.empty()) out += "source = " + quoted(c.source) + "\n";
  for (const auto& e : c.entries) {
    out += "\n[[entry]]\n";
    out += "gpu = " + quoted(e.gpu) + "\n";
    out += "fabric = " + quoted(e.fabric.empty() ? "any" : e.fabric) + "\n";
    out += "framework = " + quoted(e.framework.empty() ? "any" : e.framework) + "\n";
    out += "compute_scale = " + num(e.compute_scale) + "\n";
    out += "network_scale = " + num(e.network_scale) + "\n";
    out += "samples = " + std::to_string(e.samples) + "\n";
    out += "multinode_samples = " + std::to_string(e.multinode_samples) + "\n";
    out += "error_before = " + num(e.error_before) + "\n";
    out += "error_after = " + num(e.error_after) + "\n";
  }
  if (!c.memory.empty())
    out += "\n# Memory head-room per GPU model and framework, learned from out-of-memory deaths and near-limit runs.\n";
  for (const auto& m : c.memory) {
    out += "\n[[memory]]\n";
    out += "gpu = " + quoted(m.gpu) + "\n";
    out += "framework = " + quoted(m.framework.empty() ? "any" : m.framework) + "\n";
    out += "headroom_gib = " + num(m.headroom_gib) + "\n";
    out += "oom_jobs = " + std::to_string(m.oom_jobs) + "\n";
    out += "near_limit_jobs = " + std::to_string(m.near_limit_jobs) + "\n";
  }
  return out;
}

namespace {

// The entry of `framework` ("" = the framework-less ones): exact fabric first, then fabric-less.
const CalibrationEntry* find_in(const Calibration& c, const std::string& gpu, Fabric fabric, const std::string& framework) {
  if (!is_gpu_key(gpu)) return nullptr;
  const std::string key = gpu_spec(gpu).key;
  const std::string fab = to_string(fabric);
  const CalibrationEntry* any = nullptr;
  for (const auto& e : c.entries) {
    if (e.gpu != key || e.framework != framework) continue;
    if (e.fabric == fab) return &e;
    if (e.fabric.empty()) any = &e;
  }
  return any;
}

}  // namespace

const CalibrationEntry* find_entry(const Calibration& c, const std::string& gpu, Fabric fabric, Framework framework) {
  // The stack's own entry before the shared one: a shared fit is rescaled by the other stacks' jobs.
  if (const CalibrationEntry* own = find_in(c, gpu, fabric, to_string(framework))) return own;
  return find_in(c, gpu, fabric, "");
}

const CalibrationEntry* find_entry(const Calibration& c, const std::string& gpu, Fabric fabric) {
  return find_in(c, gpu, fabric, "");
}

ModelParams apply_entry(const CalibrationEntry& e, const Scenario& s, const ModelParams& base) {
  ModelParams p = base;
  const int arch = static_cast<int>(effective_gpu(s.cluster).arch);
  p.gemm_eff[arch] = std::min(1.0, base.gemm_eff[arch] * e.compute_scale);
  const int f = static_cast<int>(s.cluster.fabric);
  p.fabric_eff[f] = std::min(1.0, base.fabric_eff[f] * e.network_scale);
  return p;
}

ModelParams calibrated_params(const Calibration& c, const Scenario& s, const ModelParams& base) {
  const CalibrationEntry* e = find_entry(c, s.cluster.gpu, s.cluster.fabric, s.training.framework);
  return e ? apply_entry(*e, s, base) : base;
}

const MemoryEntry* find_memory_entry(const Calibration& c, const std::string& gpu, Framework framework) {
  if (!is_gpu_key(gpu)) return nullptr;
  const std::string key = gpu_spec(gpu).key, fw = to_string(framework);
  const MemoryEntry* any = nullptr;
  for (const auto& m : c.memory) {
    if (m.gpu != key) continue;
    if (m.framework == fw) return &m;
    if (m.framework.empty()) any = &m;
  }
  return any;
}

double calibrated_headroom_gib(const Calibration& c, const Scenario& s) {
  const MemoryEntry* m = find_memory_entry(c, s.cluster.gpu, s.training.framework);
  return m ? m->headroom_gib : 0;
}

}  // namespace paratune::advisor
