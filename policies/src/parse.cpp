// Parsing and validating the site policy TOML. Every problem of a file is collected (not only the first) and
// thrown together in one PolicyError, each as "FILE:LINE:COL: key: problem; valid: ...", in file order.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <toml++/toml.h>

#include "internal.h"
#include "paratune/advisor/catalog.h"
#include "paratune/advisor/framework_versions.h"
#include "paratune/advisor/loss_fusion.h"
#include "paratune/advisor/toml_guard.h"
#include "paratune/policies/policy.h"

namespace paratune::policies {

using detail::contains;
using detail::join;

namespace detail {

std::string fmt_number(double v) {
  char buf[64];
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string fmt_octal_mode(unsigned mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", mode & 07777u);
  return buf;
}

}  // namespace detail

namespace {

constexpr const char* kTopKeys = "defaults, partition";
constexpr const char* kSectionKeys =
    "enabled, mode, max_mode, on_by_default, on_by_default_min_gpus_per_node, users_may_opt_out, on_error, "
    "suspect_ratio, framework_version, env, limits, facts, log";
constexpr const char* kEnvKeys = "force, default, forbid, allow_override, applies_to";
constexpr const char* kLimitKeys =
    "max_tp, max_pp, max_cp, max_ep, dispatchers, zero_stages, recompute, frameworks, min_micro_batch, "
    "max_micro_batch, memory_headroom_gib";
constexpr const char* kFactKeys =
    "gpu, nic_gbps, nic_count, nvlink_domain, fabric, nccl_topo_file, nvls, rail_aligned, leaf_oversubscription, "
    "kernels, te_version, profile";
constexpr const char* kDispatchers = "alltoall, allgather, flex";
constexpr const char* kKernels = "deepep, hybridep, te, flash3";
constexpr const char* kLogKeys = "tuning_log, mode, group";
constexpr const char* kModes = "apply, suggest, off";
constexpr const char* kFrameworks = "megatron, deepspeed, fsdp, torchtitan, nemo, automodel";
constexpr const char* kRecompute = "none, selective, full";
constexpr const char* kFabrics = "infiniband, roce, efa, slingshot, omnipath, ethernet";
constexpr const char* kVarName = "letters, digits and '_', not starting with a digit (at most 128 characters)";

const char* type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    default: return "nothing";
  }
}

SourcePos pos_of(const toml::source_region& r) {
  return SourcePos{static_cast<int>(r.begin.line), static_cast<int>(r.begin.column)};
}

bool bare_key(std::string_view s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-';
  });
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string key_part(std::string_view k) { return bare_key(k) ? std::string(k) : quote(std::string(k)); }

bool valid_var_name(const std::string& s) {
  if (s.empty() || s.size() > 128) return false;
  if (std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

bool valid_partition_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-' || c == '.';
  });
}

bool valid_abs_path(const std::string& s) {
  if (s.empty() || s[0] != '/' || s.size() > 4096) return false;
  if (s.find('\0') != std::string::npos) return false;
  // no ".." component
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find('/', i);
    if (j == std::string::npos) j = s.size();
    if (s.compare(i, j - i, "..") == 0 && j - i == 2) return false;
    i = j + 1;
  }
  return true;
}

bool valid_group(const std::string& s) {
  if (s.empty() || s.size() > 32) return false;
  if (std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); })) return true;
  const unsigned char c0 = static_cast<unsigned char>(s[0]);
  if (!(std::islower(c0) || c0 == '_')) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (std::islower(c) || std::isdigit(c) || c == '_' || c == '-') continue;
    if (c == '$' && i + 1 == s.size()) continue;
    return false;
  }
  return true;
}

struct Problem {
  int line, column;
  std::string text;
};

class Parser {
 public:
  explicit Parser(std::string origin) : origin_(std::move(origin)) {}

  PolicyFile run(std::string_view text) {
    PolicyFile f;
    f.origin = origin_;
    f.defaults.section = "defaults";
    toml::table root;
    // Before TOML++, which recurses once per header/key segment and overflows the stack on deep ones.
    if (const auto deep = advisor::find_toml_too_deep(text)) {
      error(SourcePos{deep->line, deep->column}, "syntax", advisor::toml_too_deep_problem(),
            "TOML (https://toml.io/en/v1.0.0) at most " + std::to_string(advisor::kMaxTomlDepth) + " levels deep");
      throw_if_any();
    }
    try {
      root = toml::parse(text, origin_);
    } catch (const toml::parse_error& e) {
      error(pos_of(e.source()), "syntax", std::string(e.description()), "TOML (https://toml.io/en/v1.0.0)");
      throw_if_any();
    }
    for (auto&& [k, v] : root) {
      const std::string key(k.str());
      if (key == "defaults") {
        if (const auto* t = want_table(v, "defaults")) parse_layer(*t, "defaults", f.defaults);
      } else if (key == "partition") {
        const auto* parts = want_table(v, "partition");
        if (!parts) continue;
        for (auto&& [pk, pv] : *parts) {
          const std::string name(pk.str());
          const std::string path = "partition." + key_part(name);
          if (!valid_partition_name(name)) {
            error(pos_of(pk.source()), path, "not a valid partition name",
                  "letters, digits, '_', '-' and '.' (at most 64 characters), as in SLURM_JOB_PARTITION");
            continue;
          }
          const auto* t = want_table(pv, path);
          if (!t) continue;
          PolicyLayer layer;
          layer.section = "partition." + name;
          parse_layer(*t, path, layer);
          f.partitions.emplace(name, std::move(layer));
        }
      } else {
        unknown(k, key_part(key), kTopKeys);
      }
    }
    check_te_facts(f.defaults, nullptr, "defaults");
    for (const auto& [name, layer] : f.partitions) {
      check_across(f.defaults, layer, "partition." + key_part(name));
      check_te_facts(f.defaults, &layer, "partition." + key_part(name));
    }
    // What a broken file still says about on_error (the plugin honours on_error = "closed" even then).
    if (f.defaults.on_error) hints_[""] = *f.defaults.on_error == OnError::Closed;
    for (const auto& [name, layer] : f.partitions)
      if (layer.on_error) hints_[name] = *layer.on_error == OnError::Closed;
    throw_if_any();
    return f;
  }

 private:
  std::string origin_;
  std::vector<Problem> problems_;
  std::map<std::string, bool> hints_;

  void error(SourcePos at, const std::string& key, const std::string& problem, const std::string& valid) {
    problems_.push_back({at.line, at.column,
                         origin_ + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) + ": " + key +
                             ": " + problem + "; valid: " + valid});
  }
  void error(const toml::node& n, const std::string& key, const std::string& problem, const std::string& valid) {
    error(pos_of(n.source()), key, problem, valid);
  }
  std::string at(SourcePos p) const { return std::to_string(p.line) + ":" + std::to_string(p.column); }

  void throw_if_any() {
    if (problems_.empty()) return;
    std::stable_sort(problems_.begin(), problems_.end(), [](const Problem& a, const Problem& b) {
      return std::tie(a.line, a.column) < std::tie(b.line, b.column);
    });
    std::vector<std::string> lines;
    for (auto& p : problems_) lines.push_back(std::move(p.text));
    PolicyError e(std::move(lines), PolicyError::Kind::Invalid);
    e.set_on_error_hints(hints_);
    throw e;
  }

  void unknown(const toml::key& k, const std::string& path, const char* valid) {
    error(pos_of(k.source()), path, "unknown key", valid);
  }

  void wrong_type(const toml::node& n, const std::string& path, const char* expected, const std::string& valid) {
    error(n, path, std::string("expected ") + expected + ", got " + type_name(n), valid);
  }

  const toml::table* want_table(const toml::node& n, const std::string& path) {
    if (const auto* t = n.as_table()) return t;
    wrong_type(n, path, "a table", "a table ([" + path + "] or " + path + " = { ... })");
    return nullptr;
  }

  std::optional<bool> get_bool(const toml::node& n, const std::string& path) {
    if (const auto* b = n.as_boolean()) return b->get();
    wrong_type(n, path, "a boolean", "true, false");
    return std::nullopt;
  }

  std::optional<int> get_int(const toml::node& n, const std::string& path, int lo, int hi) {
    const std::string range = std::to_string(lo) + ".." + std::to_string(hi);
    const auto* i = n.as_integer();
    if (!i) {
      wrong_type(n, path, "an integer", range);
      return std::nullopt;
    }
    const int64_t v = i->get();
    if (v < lo || v > hi) {
      error(n, path, "got " + std::to_string(v), range);
      return std::nullopt;
    }
    return static_cast<int>(v);
  }

  // A number (integer or float) in [lo, hi] (lo exclusive when lo_open).
  std::optional<double> get_number(const toml::node& n, const std::string& path, double lo, double hi, bool lo_open,
                                   const std::string& valid) {
    double v = 0;
    if (const auto* i = n.as_integer()) {
      v = static_cast<double>(i->get());
    } else if (const auto* d = n.as_floating_point()) {
      v = d->get();
    } else {
      wrong_type(n, path, "a number", valid);
      return std::nullopt;
    }
    if (!std::isfinite(v) || v > hi || (lo_open ? v <= lo : v < lo)) {
      error(n, path, "got " + detail::fmt_number(v), valid);
      return std::nullopt;
    }
    return v;
  }

  std::optional<std::string> get_string(const toml::node& n, const std::string& path, const std::string& valid) {
    if (const auto* s = n.as_string()) return s->get();
    wrong_type(n, path, "a string", valid);
    return std::nullopt;
  }

  std::optional<Mode> get_mode(const toml::node& n, const std::string& path) {
    auto s = get_string(n, path, kModes);
    if (!s) return std::nullopt;
    try {
      return mode_from_string(*s);
    } catch (const std::invalid_argument&) {
      error(n, path, "got " + quote(*s), kModes);
      return std::nullopt;
    }
  }

  // An array whose elements are checked one by one by `elem` (which reports its own errors and returns false).
  template <typename T, typename F>
  std::optional<std::vector<T>> get_array(const toml::node& n, const std::string& path, const std::string& valid,
                                          bool non_empty, F elem) {
    const auto* a = n.as_array();
    if (!a) {
      wrong_type(n, path, "an array", valid);
      return std::nullopt;
    }
    if (non_empty && a->empty()) {
      error(n, path, "empty list", valid);
      return std::nullopt;
    }
    std::vector<T> out;
    bool ok = true;
    for (size_t i = 0; i < a->size(); ++i) {
      const toml::node& e = *a->get(i);
      std::optional<T> v = elem(e, path + "[" + std::to_string(i) + "]");
      if (!v) {
        ok = false;
        continue;
      }
      if (!contains(out, *v)) out.push_back(*v);
    }
    if (!ok) return std::nullopt;
    return out;
  }

  // --- one [defaults] or [partition.NAME] section ---------------------------------------------------------------

  void parse_layer(const toml::table& t, const std::string& path, PolicyLayer& L) {
    for (auto&& [k, v] : t) {
      const std::string key(k.str());
      const std::string p = path + "." + key_part(key);
      const SourcePos where = pos_of(v.source());
      bool set = false;
      if (key == "enabled") {
        set = assign(L.enabled, get_bool(v, p));
      } else if (key == "on_by_default") {
        set = assign(L.on_by_default, get_bool(v, p));
      } else if (key == "users_may_opt_out") {
        set = assign(L.users_may_opt_out, get_bool(v, p));
      } else if (key == "mode") {
        set = assign(L.mode, get_mode(v, p));
      } else if (key == "max_mode") {
        set = assign(L.max_mode, get_mode(v, p));
      } else if (key == "on_by_default_min_gpus_per_node") {
        set = assign(L.on_by_default_min_gpus_per_node, get_int(v, p, 0, 1024));
      } else if (key == "on_error") {
        if (auto s = get_string(v, p, "open, closed")) {
          if (*s == "open") L.on_error = OnError::Open;
          else if (*s == "closed") L.on_error = OnError::Closed;
          else error(v, p, "got " + quote(*s), "open, closed");
          set = L.on_error.has_value();
        }
      } else if (key == "suspect_ratio") {
        set = assign(L.suspect_ratio, get_number(v, p, 0, 1, false, "a number 0..1 (0 = never flag)"));
      } else if (key == "framework_version") {
        parse_framework_versions(v, p, L);
      } else if (key == "env") {
        if (const auto* s = want_table(v, p)) parse_env(*s, p, L);
      } else if (key == "limits") {
        if (const auto* s = want_table(v, p)) parse_limits(*s, p, L);
      } else if (key == "facts") {
        if (const auto* s = want_table(v, p)) parse_facts(*s, p, L);
      } else if (key == "log") {
        if (const auto* s = want_table(v, p)) parse_log(*s, p, L);
      } else {
        unknown(k, p, kSectionKeys);
      }
      if (set) L.positions[key] = where;
    }
    // Contradictions inside one section.
    if (L.mode && L.max_mode && *L.mode > *L.max_mode) {
      std::vector<std::string> ok;
      for (Mode m : {Mode::Apply, Mode::Suggest, Mode::Off})
        if (m <= *L.max_mode) ok.push_back(to_string(m));
      error(L.positions["mode"], path + ".mode",
            quote(to_string(*L.mode)) + " is above max_mode = " + quote(to_string(*L.max_mode)) + " (at " +
                at(L.positions["max_mode"]) + ")",
            join(ok));
    }
    if (L.min_micro_batch && L.max_micro_batch && *L.min_micro_batch > *L.max_micro_batch) {
      error(L.positions["limits.max_micro_batch"], path + ".limits.max_micro_batch",
            std::to_string(*L.max_micro_batch) + " is below min_micro_batch = " + std::to_string(*L.min_micro_batch) +
                " (at " + at(L.positions["limits.min_micro_batch"]) + ")",
            ">= " + std::to_string(*L.min_micro_batch) + " (or lower min_micro_batch)");
    }
    for (const auto& [name, value] : L.force) {
      (void)value;
      const SourcePos fp = L.positions["env.force." + name];
      if (contains(L.forbid, name))
        error(fp, path + ".env.force." + key_part(name),
              "both forced and forbidden (forbid at " + at(L.positions["env.forbid." + name]) + ")",
              "force it or forbid it, not both");
      if (L.defaults.count(name))
        error(L.positions["env.default." + name], path + ".env.default." + key_part(name),
              "both forced and given a default (force at " + at(fp) + ")", "force it or give a default, not both");
      if (L.allow_override && contains(*L.allow_override, name))
        error(L.positions["env.allow_override." + name], path + ".env.allow_override",
              name + " is forced (at " + at(fp) + "): users can never override it",
              "variables that are neither forced nor forbidden");
    }
    for (const auto& [name, value] : L.defaults) {
      (void)value;
      if (contains(L.forbid, name))
        error(L.positions["env.default." + name], path + ".env.default." + key_part(name),
              "both given a default and forbidden (forbid at " + at(L.positions["env.forbid." + name]) + ")",
              "give it a default or forbid it, not both");
    }
    if (L.allow_override) {
      for (const auto& name : *L.allow_override)
        if (contains(L.forbid, name))
          error(L.positions["env.allow_override." + name], path + ".env.allow_override",
                name + " is forbidden (at " + at(L.positions["env.forbid." + name]) + "): users can never set it",
                "variables that are neither forced nor forbidden");
    }
  }

  template <typename T>
  static bool assign(std::optional<T>& dst, std::optional<T> v) {
    if (!v) return false;
    dst = std::move(v);
    return true;
  }

  // A variable name as a table key (force/default) or array element (forbid/allow_override).
  bool check_var(SourcePos where, const std::string& path, const std::string& name, bool paratune_ok) {
    if (!valid_var_name(name)) {
      error(where, path, "not a valid environment variable name", kVarName);
      return false;
    }
    if (!paratune_ok && detail::is_paratune_var(name)) {
      error(where, path,
            "PARATUNE_* variables are paratune's own output and cannot be forced, defaulted or forbidden",
            "any other variable (constrain the plan with limits.* instead)");
      return false;
    }
    return true;
  }

  // framework_version = { megatron = "core_v0.14", torchtitan = "main" }: one supported version per framework.
  void parse_framework_versions(const toml::node& n, const std::string& path, PolicyLayer& L) {
    const auto* t = n.as_table();
    if (!t) {
      wrong_type(n, path, "a table",
                 "a table of FRAMEWORK = \"VERSION\", e.g. framework_version = { megatron = \"core_v0.14\" } "
                 "(frameworks: " + std::string(kFrameworks) + ")");
      return;
    }
    for (auto&& [k, v] : *t) {
      const std::string name(k.str());
      const std::string p = path + "." + key_part(name);
      // The framework's own name only: an alias such as "megatron-deepspeed" (a DeepSpeed version) would mislead.
      advisor::Framework f{};
      bool named = true;
      try {
        f = advisor::framework_from_string(name);
        named = name == advisor::to_string(f);
      } catch (const std::invalid_argument&) {
        named = false;
      }
      if (!named) {
        error(pos_of(k.source()), p, "not a framework name", kFrameworks);
        continue;
      }
      const std::string valid = version_ids(f);
      const auto id = get_string(v, p, valid);
      if (!id) continue;
      bool known = !id->empty();
      try {
        if (known) advisor::resolve_version(f, *id);
      } catch (const std::invalid_argument&) {
        known = false;
      }
      if (!known) {
        error(v, p, "got " + quote(*id) + ", not a supported " + name + " version", valid);
        continue;
      }
      L.framework_versions[f] = *id;
      L.positions["framework_version." + name] = pos_of(v.source());
    }
  }

  static std::string version_ids(advisor::Framework f) {
    std::vector<std::string> ids;
    for (const auto& v : advisor::framework_versions())
      if (v.framework == f) ids.push_back("\"" + v.id + "\"" + (v.is_default ? " (paratune's default)" : ""));
    return join(ids);
  }

  void parse_env_map(const toml::node& n, const std::string& path, const std::string& key,
                     std::map<std::string, std::string>& out, PolicyLayer& L) {
    const auto* t = n.as_table();
    if (!t) {
      wrong_type(n, path, "a table", "a table of VARIABLE = \"value\" (e.g. " + path.substr(path.rfind('.') + 1) +
                                          " = { NCCL_IB_HCA = \"mlx5_0:1\" })");
      return;
    }
    for (auto&& [k, v] : *t) {
      const std::string name(k.str());
      const std::string p = path + "." + key_part(name);
      if (!check_var(pos_of(k.source()), p, name, false)) continue;
      std::string value;
      if (const auto* s = v.as_string()) {
        value = s->get();
      } else if (const auto* i = v.as_integer()) {
        value = std::to_string(i->get());
      } else {
        wrong_type(v, p, "a string", "a string (or an integer)");
        continue;
      }
      if (value.find('\0') != std::string::npos || value.size() > 4096) {
        error(v, p, "value contains a NUL character or is longer than 4096 bytes",
              "a string without NUL, at most 4096 bytes");
        continue;
      }
      out[name] = value;
      L.positions["env." + key + "." + name] = pos_of(k.source());
    }
  }

  std::optional<std::vector<std::string>> parse_var_list(const toml::node& n, const std::string& path,
                                                         const std::string& key, bool paratune_ok, PolicyLayer& L) {
    return get_array<std::string>(
        n, path, "an array of variable names, e.g. [\"NCCL_ALGO\"]", false,
        [&](const toml::node& e, const std::string& ep) -> std::optional<std::string> {
          const auto* s = e.as_string();
          if (!s) {
            wrong_type(e, ep, "a string", "a variable name");
            return std::nullopt;
          }
          if (!check_var(pos_of(e.source()), ep, s->get(), paratune_ok)) return std::nullopt;
          L.positions.emplace("env." + key + "." + s->get(), pos_of(e.source()));
          return s->get();
        });
  }

  void parse_env(const toml::table& t, const std::string& path, PolicyLayer& L) {
    for (auto&& [k, v] : t) {
      const std::string key(k.str());
      const std::string p = path + "." + key_part(key);
      if (key == "force") {
        parse_env_map(v, p, "force", L.force, L);
      } else if (key == "default") {
        parse_env_map(v, p, "default", L.defaults, L);
      } else if (key == "forbid") {
        if (auto l = parse_var_list(v, p, "forbid", false, L)) L.forbid = *l;
      } else if (key == "allow_override") {
        if (auto l = parse_var_list(v, p, "allow_override", true, L)) {
          L.allow_override = *l;
          L.positions["env.allow_override"] = pos_of(v.source());
        }
      } else if (key == "applies_to") {
        if (auto s = get_string(v, p, "all, paratune")) {
          if (*s == "all") L.env_all_jobs = true;
          else if (*s == "paratune") L.env_all_jobs = false;
          else error(v, p, "got " + quote(*s), "all, paratune");
          if (L.env_all_jobs) L.positions["env.applies_to"] = pos_of(v.source());
        }
      } else {
        unknown(k, p, kEnvKeys);
      }
    }
  }

  // A list of names, each parsed by `from` (which throws for an unknown one).
  template <typename E, typename From>
  std::optional<std::vector<E>> enum_list(const toml::node& v, const std::string& p, const char* valid,
                                          bool non_empty, From from) {
    const std::string what = std::string(non_empty ? "a non-empty list from " : "a list from ") + valid;
    return get_array<E>(v, p, what, non_empty, [&](const toml::node& e, const std::string& ep) -> std::optional<E> {
      auto s = get_string(e, ep, valid);
      if (!s) return std::nullopt;
      try {
        return from(*s);
      } catch (const std::invalid_argument&) {
        error(e, ep, "got " + quote(*s), valid);
        return std::nullopt;
      }
    });
  }

  void parse_limits(const toml::table& t, const std::string& path, PolicyLayer& L) {
    for (auto&& [k, v] : t) {
      const std::string key(k.str());
      const std::string p = path + "." + key_part(key);
      bool set = false;
      if (key == "max_tp") {
        set = assign(L.max_tp, get_int(v, p, 1, 1024));
      } else if (key == "max_pp") {
        set = assign(L.max_pp, get_int(v, p, 1, 1024));
      } else if (key == "max_cp") {
        set = assign(L.max_cp, get_int(v, p, 1, 1024));
      } else if (key == "max_ep") {
        set = assign(L.max_ep, get_int(v, p, 1, 1 << 16));
      } else if (key == "dispatchers") {
        set = assign(L.dispatchers, enum_list<advisor::Dispatcher>(v, p, kDispatchers, true,
                                                                   advisor::dispatcher_from_string));
      } else if (key == "min_micro_batch") {
        set = assign(L.min_micro_batch, get_int(v, p, 1, 65536));
      } else if (key == "max_micro_batch") {
        set = assign(L.max_micro_batch, get_int(v, p, 1, 65536));
      } else if (key == "memory_headroom_gib") {
        set = assign(L.memory_headroom_gib, get_number(v, p, 0, 1024, false, "a number of GiB 0..1024"));
      } else if (key == "zero_stages") {
        set = assign(L.zero_stages,
                     get_array<int>(v, p, "a non-empty list of ZeRO stages from 0, 1, 2, 3", true,
                                    [&](const toml::node& e, const std::string& ep) -> std::optional<int> {
                                      const auto* i = e.as_integer();
                                      if (!i) {
                                        wrong_type(e, ep, "an integer", "0, 1, 2, 3");
                                        return std::nullopt;
                                      }
                                      if (i->get() < 0 || i->get() > 3) {
                                        error(e, ep, "got " + std::to_string(i->get()), "0, 1, 2, 3");
                                        return std::nullopt;
                                      }
                                      return static_cast<int>(i->get());
                                    }));
      } else if (key == "recompute") {
        set = assign(L.recompute, get_array<advisor::Recompute>(
                                      v, p, std::string("a non-empty list from ") + kRecompute, true,
                                      [&](const toml::node& e, const std::string& ep)
                                          -> std::optional<advisor::Recompute> {
                                        auto s = get_string(e, ep, kRecompute);
                                        if (!s) return std::nullopt;
                                        try {
                                          return advisor::recompute_from_string(*s);
                                        } catch (const std::invalid_argument&) {
                                          error(e, ep, "got " + quote(*s), kRecompute);
                                          return std::nullopt;
                                        }
                                      }));
      } else if (key == "frameworks") {
        set = assign(L.frameworks, get_array<advisor::Framework>(
                                       v, p, std::string("a non-empty list from ") + kFrameworks, true,
                                       [&](const toml::node& e, const std::string& ep)
                                           -> std::optional<advisor::Framework> {
                                         auto s = get_string(e, ep, kFrameworks);
                                         if (!s) return std::nullopt;
                                         try {
                                           const advisor::Framework f = advisor::framework_from_string(*s);
                                           // An alias would mislead: "megatron-deepspeed" is DeepSpeed at any
                                           // version here (framework_version says which).
                                           if (*s == advisor::to_string(f)) return f;
                                         } catch (const std::invalid_argument&) {
                                         }
                                         error(e, ep, "got " + quote(*s), kFrameworks);
                                         return std::nullopt;
                                       }));
      } else {
        unknown(k, p, kLimitKeys);
      }
      if (set) L.positions["limits." + key] = pos_of(v.source());
    }
  }

  void parse_facts(const toml::table& t, const std::string& path, PolicyLayer& L) {
    Facts& f = L.facts;
    for (auto&& [k, v] : t) {
      const std::string key(k.str());
      const std::string p = path + "." + key_part(key);
      bool set = false;
      if (key == "gpu") {
        if (auto s = get_string(v, p, "a GPU catalog key (paratune advise --help lists them)")) {
          if (advisor::is_gpu_key(*s)) {
            f.gpu = *s;
            set = true;
          } else {
            error(v, p, "got " + quote(*s), join(advisor::gpu_keys()));
          }
        }
      } else if (key == "nic_gbps") {
        set = assign(f.nic_gbps, get_number(v, p, 0, 100000, true, "Gb/s per NIC, > 0 (e.g. 200 or 400)"));
      } else if (key == "nic_count") {
        set = assign(f.nic_count, get_int(v, p, 0, 64));
      } else if (key == "nvlink_domain") {
        set = assign(f.nvlink_domain, get_int(v, p, 1, 1024));
      } else if (key == "fabric") {
        if (auto s = get_string(v, p, kFabrics)) {
          try {
            f.fabric = advisor::fabric_from_string(*s);
            set = true;
          } catch (const std::invalid_argument&) {
            error(v, p, "got " + quote(*s), kFabrics);
          }
        }
      } else if (key == "nccl_topo_file") {
        if (auto s = get_string(v, p, "an absolute path")) {
          if (valid_abs_path(*s)) {
            f.nccl_topo_file = *s;
            set = true;
          } else {
            error(v, p, "got " + quote(*s), "an absolute path without '..' (on the compute nodes)");
          }
        }
      } else if (key == "profile") {
        if (auto s = get_string(v, p, "an absolute path")) {
          if (valid_abs_path(*s)) {
            f.profile = *s;
            set = true;
          } else {
            error(v, p, "got " + quote(*s), "an absolute path without '..' (on the compute nodes)");
          }
        }
      } else if (key == "nvls") {
        set = assign(f.nvls, get_bool(v, p));
      } else if (key == "rail_aligned") {
        set = assign(f.rail_aligned, get_bool(v, p));
      } else if (key == "te_version") {
        if (auto s = get_string(v, p, "a Transformer Engine version MAJOR.MINOR")) {
          int major = 0, minor = 0;
          if (advisor::parse_te_version(*s, &major, &minor)) {
            f.te_version = *s;
            set = true;
          } else {
            error(v, p, "got " + quote(*s), "a Transformer Engine version MAJOR.MINOR, e.g. \"2.14\"");
          }
        }
      } else if (key == "kernels") {  // [] = none installed
        set = assign(f.kernels, enum_list<advisor::Kernel>(v, p, kKernels, false, advisor::kernel_from_string));
      } else if (key == "leaf_oversubscription") {
        set = assign(f.leaf_oversubscription, get_number(v, p, 1, 64, false, "a ratio 1 ... 64 (1 = non-blocking, 2 = 2:1)"));
      } else {
        unknown(k, p, kFactKeys);
      }
      if (set) L.positions["facts." + key] = pos_of(v.source());
    }
  }

  void parse_log(const toml::table& t, const std::string& path, PolicyLayer& L) {
    for (auto&& [k, v] : t) {
      const std::string key(k.str());
      const std::string p = path + "." + key_part(key);
      bool set = false;
      if (key == "tuning_log") {
        if (auto s = get_string(v, p, "an absolute path")) {
          if (valid_abs_path(*s) && s->back() != '/') {
            L.tuning_log = *s;
            set = true;
          } else {
            error(v, p, "got " + quote(*s), "an absolute file path without '..'");
          }
        }
      } else if (key == "mode") {
        const char* valid = "an octal permission string such as \"0640\" or \"0600\" (not writable by others)";
        std::optional<unsigned> m;
        if (const auto* s = v.as_string()) {
          const std::string& str = s->get();
          if (!str.empty() && str.size() <= 4 && str.find_first_not_of("01234567") == std::string::npos)
            m = static_cast<unsigned>(std::stoul(str, nullptr, 8));
          else
            error(v, p, "got " + quote(str), valid);
        } else if (const auto* i = v.as_integer()) {  // TOML octal literal 0o640; a decimal 400 is not 0400
          if ((i->flags() & toml::value_flags::format_as_octal) == toml::value_flags::none)
            error(v, p, "got the decimal " + std::to_string(i->get()) + " (write 0o" + std::to_string(i->get()) +
                            " or \"0" + std::to_string(i->get()) + "\" for octal)", valid);
          else if (i->get() >= 0 && i->get() <= 0777) m = static_cast<unsigned>(i->get());
          else error(v, p, "got " + std::to_string(i->get()), valid);
        } else {
          wrong_type(v, p, "a string", valid);
        }
        if (m && *m > 0777) {
          error(v, p, "got " + detail::fmt_octal_mode(*m) + " (special bits)", valid);
        } else if (m && (*m & 0002)) {
          error(v, p, "got " + detail::fmt_octal_mode(*m) + ": writable by others, anyone could forge records",
                valid);
        } else if (m) {
          L.log_mode = *m;
          set = true;
        }
      } else if (key == "group") {
        if (auto s = get_string(v, p, "a group name or numeric gid")) {
          if (valid_group(*s)) {
            L.log_group = *s;
            set = true;
          } else {
            error(v, p, "got " + quote(*s), "a group name (lower-case letters, digits, '_', '-') or numeric gid");
          }
        }
      } else {
        unknown(k, p, kLogKeys);
      }
      if (set) L.positions["log." + key] = pos_of(v.source());
    }
  }

  // Where a layer set a key (its first line and column), or nowhere known.
  static SourcePos position_of(const PolicyLayer& L, const std::string& key) {
    auto it = L.positions.find(key);
    return it == L.positions.end() ? SourcePos{} : it->second;
  }

  // facts.te_version says Transformer Engine is installed; facts.kernels, where given, lists what is: a version
  // beside a list without "te" leaves the site's facts contradicting each other (the plan would take TE as absent
  // and its stated version as the one installed). Checked on [defaults] and on each partition merged with it, and
  // reported at the key the later layer set (the version where it set one, else its kernel list).
  void check_te_facts(const PolicyLayer& D, const PolicyLayer* P, const std::string& path) {
    const PolicyLayer& top = P ? *P : D;
    const PolicyLayer& kernels_at = top.facts.kernels ? top : D;
    const PolicyLayer& version_at = top.facts.te_version ? top : D;
    const auto& kernels = kernels_at.facts.kernels;
    const auto& version = version_at.facts.te_version;
    if (!kernels || !version || !(top.facts.kernels || top.facts.te_version)) return;
    if (contains(*kernels, advisor::Kernel::TransformerEngine)) return;
    auto where = [&](const PolicyLayer& L, const char* key) {
      const std::string k = std::string("facts.") + key;
      return (&L == &D ? std::string("defaults") : path) + "." + k + " (at " + at(position_of(L, k)) + ")";
    };
    const char* fix = "add \"te\" to facts.kernels, or remove te_version where Transformer Engine is not installed";
    if (top.facts.te_version)
      error(position_of(top, "facts.te_version"), path + ".facts.te_version",
            "says Transformer Engine " + *version + " is installed, but " + where(kernels_at, "kernels") +
                " lists no \"te\"", fix);
    else
      error(position_of(top, "facts.kernels"), path + ".facts.kernels",
            "lists no \"te\", but " + where(version_at, "te_version") + " says Transformer Engine " + *version +
                " is installed", fix);
  }

  // A partition refining [defaults]: contradictions that only appear once both are merged.
  void check_across(const PolicyLayer& D, const PolicyLayer& P, const std::string& path) {
    for (const auto* which : {"force", "default"}) {
      const auto& m = std::string(which) == "force" ? P.force : P.defaults;
      for (const auto& [name, value] : m) {
        (void)value;
        if (!contains(D.forbid, name) || contains(P.forbid, name)) continue;
        error(position_of(P, std::string("env.") + which + "." + name), path + ".env." + which + "." + key_part(name),
              "forbidden by [defaults] env.forbid (at " + at(position_of(D, "env.forbid." + name)) +
                  "); a partition cannot lift a forbid",
              "a variable [defaults] does not forbid");
      }
    }
    const int min_mb = P.min_micro_batch.value_or(D.min_micro_batch.value_or(1));
    const std::optional<int> max_mb = P.max_micro_batch ? P.max_micro_batch : D.max_micro_batch;
    if (max_mb && min_mb > *max_mb && (P.min_micro_batch || P.max_micro_batch)) {
      const bool min_here = P.min_micro_batch.has_value();
      const bool max_here = P.max_micro_batch.has_value();
      if (min_here && max_here) return;  // reported by the section itself
      if (max_here)
        error(position_of(P, "limits.max_micro_batch"), path + ".limits.max_micro_batch",
              std::to_string(*max_mb) + " is below [defaults] limits.min_micro_batch = " + std::to_string(min_mb) +
                  " (at " + at(position_of(D, "limits.min_micro_batch")) + ")",
              ">= " + std::to_string(min_mb) + " (or set min_micro_batch here too)");
      else
        error(position_of(P, "limits.min_micro_batch"), path + ".limits.min_micro_batch",
              std::to_string(min_mb) + " is above [defaults] limits.max_micro_batch = " + std::to_string(*max_mb) +
                  " (at " + at(position_of(D, "limits.max_micro_batch")) + ")",
              "<= " + std::to_string(*max_mb) + " (or set max_micro_batch here too)");
    }
  }
};

}  // namespace

PolicyError::PolicyError(std::vector<std::string> problems, Kind kind)
    : std::runtime_error(join(problems, "\n")),
      problems_(std::make_shared<const std::vector<std::string>>(std::move(problems))),
      kind_(kind) {}

void PolicyError::set_on_error_hints(std::map<std::string, bool> closed_by_partition) {
  closed_ = std::make_shared<const std::map<std::string, bool>>(std::move(closed_by_partition));
}

bool PolicyError::fails_closed(const std::string& partition) const noexcept {
  if (kind_ != Kind::Invalid || !closed_) return false;
  auto it = closed_->find(partition);
  if (it == closed_->end()) it = closed_->find("");
  return it != closed_->end() && it->second;
}

const char* to_string(Mode m) {
  switch (m) {
    case Mode::Off: return "off";
    case Mode::Suggest: return "suggest";
    case Mode::Apply: return "apply";
  }
  return "?";
}

Mode mode_from_string(const std::string& s) {
  if (s == "apply") return Mode::Apply;
  if (s == "suggest") return Mode::Suggest;
  if (s == "off") return Mode::Off;
  throw std::invalid_argument("'" + s + "' is not a mode; valid: " + std::string(kModes));
}

const char* to_string(OnError e) { return e == OnError::Closed ? "closed" : "open"; }

PolicyFile parse_policy(std::string_view text, const std::string& origin) { return Parser(origin).run(text); }

}  // namespace paratune::policies
