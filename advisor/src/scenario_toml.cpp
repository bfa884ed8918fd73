// Scenario TOML reader (TOML++). Every error names FILE:LINE:COL, the field, and what would be valid.
#include "paratune/advisor/scenario_toml.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>
#include <toml++/toml.h>

#include "paratune/advisor/catalog.h"
#include "paratune/advisor/framework_kernels.h"
#include "paratune/advisor/knobs.h"
#include "paratune/advisor/toml_guard.h"

namespace paratune::advisor {

namespace {

struct Ctx {
  std::string origin;
  std::string pos(const toml::source_region& r) const {
    return origin + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column);
  }
  [[noreturn]] void fail(const toml::node& n, const std::string& field, const std::string& what) const {
    throw std::invalid_argument(pos(n.source()) + ": " + field + ": " + what);
  }
};

// The keys a table may have: the knob table's for its section (knobs.h); another key is an error listing them.
void check_keys(const Ctx& c, const toml::table& t, const std::string& prefix, const std::vector<std::string>& valid) {
  for (const auto& [k, v] : t) {
    if (std::find(valid.begin(), valid.end(), k.str()) != valid.end()) continue;
    std::string list;
    for (const auto& name : valid) list += (list.empty() ? "" : ", ") + name;
    c.fail(v, prefix + std::string(k.str()), "unknown key; valid: " + list);
  }
}

std::vector<std::string> file_keys(std::string_view section) {
  std::vector<std::string> out;
  for (const Knob* k : knobs_of(section))
    if (k->on(surface::kToml)) out.push_back(k->name);
  return out;
}

const toml::table* sub(const Ctx& c, const toml::table& root, const char* name) {
  const toml::node* n = root.get(name);
  if (!n) return nullptr;
  if (!n->is_table()) c.fail(*n, name, "must be a table ([" + std::string(name) + "])");
  return n->as_table();
}

std::string number_text(double x) {
  return x == static_cast<double>(static_cast<long>(x)) ? std::to_string(static_cast<long>(x)) : std::to_string(x);
}

// A List knob's value: an array of names (each checked where it stands), or, for a knob the SPEC also takes, the
// SPEC's joined form as one string.
KnobValue list_value(const Ctx& c, const toml::node& n, const Knob& k, const std::string& field) {
  std::string valid = knob_range(k);
  if (const auto* str = n.as_string(); str && k.on(surface::kSpec)) return str->get();
  if (!n.is_array()) c.fail(n, field, "must be a list of " + valid);
  std::string joined;
  for (const toml::node& e : *n.as_array()) {
    const auto name = e.value<std::string>();
    if (!name) c.fail(e, field, "must be a list of " + valid);
    try {
      Scenario probe;
      k.set(probe, *name);
    } catch (const std::invalid_argument& ex) {
      c.fail(e, field, ex.what());
    }
    joined += (joined.empty() ? "" : ",") + *name;
  }
  return joined;
}

// A node as the knob's type wants it, within its range; otherwise FILE:LINE:COL: FIELD: what is valid.
KnobValue file_value(const Ctx& c, const toml::node& n, const Knob& k, const std::string& field) {
  switch (k.type) {
    case KnobType::Int: {
      if (!n.is_integer()) c.fail(n, field, "must be an integer");
      const long v = long(n.as_integer()->get());
      if (v < k.lo || v > k.hi)
        c.fail(n, field, "must be between " + number_text(k.lo) + " and " + number_text(k.hi) + "; got " +
                             std::to_string(v));
      return v;
    }
    case KnobType::Number: {
      double v = 0;
      if (n.is_integer()) v = double(n.as_integer()->get());
      else if (n.is_floating_point()) v = n.as_floating_point()->get();
      else c.fail(n, field, "must be a number");
      if (v < k.lo) c.fail(n, field, "must be >= " + number_text(k.lo));
      if (v > k.hi) c.fail(n, field, "must be at most " + number_text(k.hi));
      return v;
    }
    case KnobType::Bool:
      if (!n.is_boolean()) c.fail(n, field, "must be true or false");
      return n.as_boolean()->get();
    case KnobType::Word: {
      if (!n.is_string()) c.fail(n, field, "must be a string");
      const std::string v = n.as_string()->get();
      const auto words = knob_values(k);
      if (std::find(words.begin(), words.end(), v) == words.end()) c.fail(n, field, "must be one of " + knob_range(k));
      return v;
    }
    case KnobType::Enum:
    case KnobType::Text:
      if (!n.is_string()) c.fail(n, field, "must be a string");
      return std::string(n.as_string()->get());
    case KnobType::List: return list_value(c, n, k, field);
    case KnobType::Table: break;
  }
  return {};
}

// The keys of one table, each read by its knob's type and set by its knob (knobs.h); sub-tables and arrays of
// numbers (set == nullptr) are left to the caller.
void read_knobs(const Ctx& c, const toml::table& t, std::string_view section, Scenario& s) {
  const std::string prefix = std::string(section) + ".";
  for (const Knob* k : knobs_of(section)) {
    const toml::node* n = t.get(k->name);
    if (!n || !k->set || !k->on(surface::kToml)) continue;
    const KnobValue v = file_value(c, *n, *k, prefix + k->name);
    try {
      k->set(s, v);
    } catch (const std::invalid_argument& e) {
      c.fail(*n, prefix + k->name, e.what());
    }
  }
}

// Where a field lives in the file (for validate()'s errors), else the table, else line 1.
std::string locate(const Ctx& c, const toml::table& root, const std::string& field) {
  const toml::node* best = nullptr;
  std::string path;
  const toml::table* t = &root;
  std::stringstream ss(field);
  std::string part;
  while (std::getline(ss, part, '.')) {
    if (!t) break;
    const toml::node* n = t->get(part);
    if (!n) break;
    best = n;
    t = n->as_table();
  }
  if (best) return c.pos(best->source());
  return c.origin + ":1:1";
}

}  // namespace

void apply_cluster_defaults(Scenario& s, bool nvlink_domain_given) {
  if (!is_gpu_key(s.cluster.gpu)) return;
  const GpuSpec& g = gpu_spec(s.cluster.gpu);
  if (!nvlink_domain_given) {
    const bool sxm = g.nvswitch || g.key.find("sxm") != std::string::npos || g.key == "mi250x" || g.key == "mi300x";
    s.cluster.nvlink_domain = sxm && g.nvlink_gbps > 0 ? s.cluster.gpus_per_node : 1;
  }
}

// [cluster.placement]: nodes per leaf switch in rank order, and the oversubscription above the leaves.
static void parse_placement(const Ctx& c, const toml::node& node, ClusterSpec& k) {
  if (!node.is_table()) c.fail(node, "cluster.placement", "must be a table ([cluster.placement])");
  const toml::table& t = *node.as_table();
  check_keys(c, t, "cluster.placement.", file_keys("cluster.placement"));
  Placement p;
  const toml::node* per_leaf = t.get("nodes_per_leaf");
  if (!per_leaf || !per_leaf->is_array())
    c.fail(per_leaf ? *per_leaf : node, "cluster.placement.nodes_per_leaf", "must be an array of node counts, e.g. [2, 2]");
  for (const auto& e : *per_leaf->as_array()) {
    const auto v = e.value<int64_t>();
    if (!v || *v < 1 || *v > (1 << 20)) c.fail(e, "cluster.placement.nodes_per_leaf", "each entry must be 1 ... 1048576");
    p.nodes_per_leaf.push_back(static_cast<int>(*v));
  }
  if (p.nodes_per_leaf.empty() || p.nodes_per_leaf.size() > 65536)
    c.fail(*per_leaf, "cluster.placement.nodes_per_leaf", "must list 1 ... 65536 leaf switches");
  if (const toml::node* o = t.get("oversubscription")) {
    if (o->is_integer()) p.oversubscription = double(o->as_integer()->get());
    else if (o->is_floating_point()) p.oversubscription = o->as_floating_point()->get();
    else c.fail(*o, "cluster.placement.oversubscription", "must be a number");
  }
  if (!(p.oversubscription >= 1 && p.oversubscription <= 64))
    c.fail(node, "cluster.placement.oversubscription", "must be 1 ... 64 (1 = non-blocking)");
  k.placement = p;
}

// [cluster]: the hardware, when the scenario file describes it.
static void parse_cluster(const Ctx& c, const toml::table& cl, Scenario& s) {
  check_keys(c, cl, "cluster.", file_keys("cluster"));
  read_knobs(c, cl, "cluster", s);
  ClusterSpec& k = s.cluster;
  if (cl.get("gpu") && !is_gpu_key(k.gpu) && !cl.get("gpu_spec")) {
    std::string list;
    for (const auto& g : gpu_keys()) list += (list.empty() ? "" : ", ") + g;
    c.fail(*cl.get("gpu"), "cluster.gpu", "unknown GPU '" + k.gpu + "'; valid: " + list +
                                               " (or describe it in [cluster.gpu_spec])");
  }
  if (const toml::node* gs = cl.get("gpu_spec")) {
    if (!gs->is_table()) c.fail(*gs, "cluster.gpu_spec", "must be a table ([cluster.gpu_spec])");
    check_keys(c, *gs->as_table(), "cluster.gpu_spec.", file_keys("cluster.gpu_spec"));
    read_knobs(c, *gs->as_table(), "cluster.gpu_spec", s);
  }
  if (const toml::node* ns = cl.get("nic")) {
    if (!ns->is_array_of_tables()) c.fail(*ns, "cluster.nic", "must be an array of tables ([[cluster.nic]])");
    for (const auto& e : *ns->as_array()) {
      const toml::table& n = *e.as_table();
      check_keys(c, n, "cluster.nic.", file_keys("cluster.nic"));
      if (!n.get("name")) c.fail(n, "cluster.nic.name", "missing (e.g. \"mlx5_0\")");
      k.nics.emplace_back();  // the knobs of cluster.nic set the last NIC
      read_knobs(c, n, "cluster.nic", s);
    }
  }
  if (const toml::node* pl = cl.get("placement")) parse_placement(c, *pl, k);
  k.rail_alignment_known = cl.get("rail_aligned") != nullptr;  // stated, not assumed
  apply_cluster_defaults(s, cl.get("nvlink_domain") != nullptr);
}

Scenario parse_scenario_toml(std::string_view text, const std::string& origin, ClusterSource cluster) {
  Ctx c{origin};
  toml::table root;
  // Before TOML++, which recurses once per header/key segment and overflows the stack on deep ones.
  if (const auto deep = find_toml_too_deep(text))
    throw std::invalid_argument(origin + ":" + std::to_string(deep->line) + ":" + std::to_string(deep->column) +
                                ": syntax: " + toml_too_deep_problem());
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    throw std::invalid_argument(c.pos(e.source()) + ": syntax: " + std::string(e.description()));
  }
  std::vector<std::string> tables;
  for (const char* section : knob_sections())
    if (std::string_view(section).find('.') == std::string_view::npos && section != std::string_view("job"))
      tables.emplace_back(section);
  check_keys(c, root, "", tables);
  Scenario s;
  s.cluster.gpus_per_node = 8;

  const toml::table* m = sub(c, root, "model");
  if (!m) throw std::invalid_argument(origin + ":1:1: model: missing [model] table (give preset = \"llama3-70b\" or "
                                               "layers/hidden/heads/vocab/seq_len)");
  check_keys(c, *m, "model.", file_keys("model"));
  read_knobs(c, *m, "model", s);  // preset first: it sets the whole model, the other keys refine it
  if (const toml::node* cf = m->get("moe_capacity_factor");
      cf && s.model.moe_capacity_factor > 0 && s.model.moe_capacity_factor < 1)
    c.fail(*cf, "model.moe_capacity_factor", "must be 0 (dropless) or >= 1");
  if (s.model.name.empty()) {
    const std::string preset = m->get("preset") ? m->get("preset")->value_or(std::string()) : "";
    s.model.name = preset.empty() ? "custom" : preset;
  }

  const toml::table* t = sub(c, root, "training");
  if (!t) throw std::invalid_argument(origin + ":1:1: training: missing [training] table (global_batch is required)");
  check_keys(c, *t, "training.", file_keys("training"));
  if (!t->get("global_batch"))
    c.fail(*t, "training.global_batch", "missing; give the sequences per optimizer step (e.g. 1024)");
  read_knobs(c, *t, "training", s);

  const toml::table* cl = sub(c, root, "cluster");
  if (!cl && cluster == ClusterSource::File)
    throw std::invalid_argument(origin + ":1:1: cluster: missing [cluster] table (gpu, nodes, gpus_per_node)");
  if (cl) parse_cluster(c, *cl, s);

  if (const toml::table* p = sub(c, root, "parallel")) {
    check_keys(c, *p, "parallel.", file_keys("parallel"));
    read_knobs(c, *p, "parallel", s);
  }

  if (s.cluster.kernels) settle_kernel_defaults(s);  // a stack without TE / FA3 (framework_kernels.h)
  if (cluster == ClusterSource::Caller) return s;  // the caller fills [cluster] and validates
  try {
    validate(s);
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    const auto colon = msg.find(": ");
    const std::string field = colon == std::string::npos ? "" : msg.substr(0, colon);
    throw std::invalid_argument(locate(c, root, field) + ": " + msg);
  }
  return s;
}

Scenario load_scenario_toml(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(path + ":0:0: scenario: cannot open (" + std::strerror(errno) + ")");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_scenario_toml(ss.str(), path);
}

ParallelSpec parse_parallel_list(std::string_view list, const std::string& origin) {
  // Each KEY=VALUE becomes one line of a [parallel] table read by the file parser itself, so that its checks (keys,
  // ranges, enum names, messages) apply unchanged; a number or true/false stays bare, a name is quoted. The
  // placeholder [model] and [training] only satisfy the parser: the [parallel] checks do not depend on it, and no validate()
  // runs for ClusterSource::Caller.
  constexpr int kFirstLine = 6;  // after "[model]", "preset = ...", "[training]", "global_batch = 1", "[parallel]"
  std::vector<std::string> items;
  std::string text = "[model]\npreset = \"llama3-8b\"\n[training]\nglobal_batch = 1\n[parallel]\n";
  size_t from = 0;
  while (from <= list.size()) {
    size_t to = list.find(',', from);
    if (to == std::string_view::npos) to = list.size();
    std::string item(list.substr(from, to - from));
    from = to + 1;
    const size_t eq = item.find('=');
    auto name_ok = [](const std::string& v) {
      return !v.empty() && v.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.+") ==
                               std::string::npos;
    };
    if (eq == std::string::npos || !name_ok(item.substr(0, eq)) || !name_ok(item.substr(eq + 1)))
      throw std::invalid_argument(origin + ": '" + item + "': expected KEY=VALUE, e.g. tp=8,pp=2,recompute=selective");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    const bool bare = value == "true" || value == "false" || value.find_first_not_of("0123456789") == std::string::npos;
    items.push_back(item);
    text += key + " = " + (bare ? value : "\"" + value + "\"") + "\n";
  }
  try {
    return parse_scenario_toml(text, origin, ClusterSource::Caller).parallel;
  } catch (const std::invalid_argument& e) {
    // "ORIGIN:LINE:COL: what": name the item on that line instead of a line of text the user never saw.
    const std::string msg = e.what();
    const size_t a = msg.find(':', origin.size()), b = a == std::string::npos ? a : msg.find(": ", a);
    const long line = a == std::string::npos ? 0 : std::strtol(msg.c_str() + a + 1, nullptr, 10);
    const long k = line - kFirstLine;
    const std::string which = k >= 0 && k < long(items.size()) ? "'" + items[size_t(k)] + "'" : "the list";
    throw std::invalid_argument(origin + ": " + which + ": " + (b == std::string::npos ? msg : msg.substr(b + 2)));
  }
}

}  // namespace paratune::advisor
