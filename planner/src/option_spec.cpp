#include "paratune/planner/option_spec.h"

#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

#include "paratune/advisor/framework_versions.h"
#include "paratune/advisor/knobs.h"
#include "paratune/advisor/scenario.h"

namespace paratune::planner {

namespace {

// Bounds keep a hostile SPEC from costing anything: Slurm passes it to every step.
constexpr size_t kMaxSpecLength = 4096;
constexpr size_t kMaxTokens = 32;

// The SPEC's keys, from the knob table (knobs.h): each by the form the SPEC shows (its short form, else its name).
const char* spec_name(const advisor::Knob& k) { return *k.spec_key ? k.spec_key : k.name; }

const std::string& valid_keys() {
  static const std::string keys = [] {
    std::string out;
    for (const auto& k : advisor::knobs())
      if (k.on(advisor::surface::kSpec)) out += (out.empty() ? "" : ", ") + std::string(spec_name(k));
    return out;
  }();
  return keys;
}

// Where a knob's value goes in OptionSpec (a number, a canonical name, a flag); the scenario builder takes it on.
struct SpecField {
  const char* knob;
  std::optional<int> OptionSpec::*number = nullptr;
  std::optional<std::string> OptionSpec::*name = nullptr;
  std::optional<bool> OptionSpec::*flag = nullptr;
};

const SpecField kFields[] = {{"model.seq_len", &OptionSpec::seq},
                             {"training.global_batch", &OptionSpec::gbs},
                             {"training.precision", nullptr, &OptionSpec::precision},
                             {"training.framework", nullptr, &OptionSpec::framework},
                             {"training.attention", nullptr, &OptionSpec::attention},
                             {"training.fp8_recipe", nullptr, &OptionSpec::fp8_recipe},
                             {"training.compile", nullptr, nullptr, &OptionSpec::compile},
                             {"training.tp_comm_overlap", nullptr, nullptr, &OptionSpec::tp_comm_overlap},
                             {"parallel.tp", &OptionSpec::tp},
                             {"parallel.pp", &OptionSpec::pp},
                             {"parallel.cp", &OptionSpec::cp},
                             {"parallel.micro_batch", &OptionSpec::mbs},
                             {"parallel.zero_stage", &OptionSpec::zero},
                             {"parallel.recompute", nullptr, &OptionSpec::recompute},
                             {"parallel.ep", &OptionSpec::ep},
                             {"parallel.etp", &OptionSpec::etp},
                             {"parallel.dispatcher", nullptr, &OptionSpec::dispatcher},
                             {"parallel.pipeline_schedule", nullptr, &OptionSpec::pipeline_schedule},
                             {"parallel.optimizer_moments", nullptr, &OptionSpec::optimizer_moments},
                             {"parallel.main_params", nullptr, &OptionSpec::main_params},
                             {"parallel.recompute_modules", nullptr, &OptionSpec::recompute_modules},
                             {"parallel.offload_layers", &OptionSpec::offload_layers}};

std::string join_presets() {
  std::string out;
  for (const auto& k : advisor::model_preset_keys()) out += (out.empty() ? "" : ", ") + k;
  return out;
}

// User input quoted in a message, cut to a readable length: a 1 MB value must not come back as a 1 MB error.
std::string shown(std::string_view text) {
  constexpr size_t kMax = 60;
  if (text.size() <= kMax) return std::string(text);
  return std::string(text.substr(0, kMax)) + "... (" + std::to_string(text.size()) + " bytes)";
}

int parse_int(std::string_view key, std::string_view value, int lo, int hi) {
  int v = 0;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || ptr != value.data() + value.size() || v < lo || v > hi)
    throw SpecError("--paratune: '" + shown(std::string(key) + "=" + std::string(value)) + "': " + std::string(key) +
                    " must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
  return v;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    out.push_back(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

void set_model(OptionSpec& spec, std::string_view token, std::string_view value) {
  if (!advisor::is_model_preset(std::string(value)))
    throw SpecError("--paratune: '" + shown(token) + "': unknown model preset '" + shown(value) +
                    "'; valid presets: " + join_presets());
  spec.model = std::string(value);
}

// Validate an enumerated value with the advisor's own parser so the lists never drift apart.
// A value too long to be valid is handed over shortened, so that the parser's message (which quotes it and
// lists the valid choices) stays short.
template <typename Parse>
auto checked(std::string_view token, std::string_view value, Parse parse) {
  try {
    return parse(value.size() > 64 ? shown(value) : std::string(value));
  } catch (const std::invalid_argument& e) {
    throw SpecError("--paratune: '" + shown(token) + "': " + e.what());
  }
}

// resume=PLAN: a path (the SPEC's commas end it; a NUL or a huge one never reaches the file system).
std::string resume_path(std::string_view token, std::string_view value) {
  if (value.size() > 1024 || value.find('\0') != std::string_view::npos)
    throw SpecError("--paratune: '" + shown(token) + "': resume takes the path of a previous plan.json (at most "
                    "1024 bytes, no NUL)");
  return std::string(value);
}

bool yes_no(const std::string& v) {
  if (v == "yes" || v == "true" || v == "1" || v == "on") return true;
  if (v == "no" || v == "false" || v == "0" || v == "off") return false;
  throw std::invalid_argument("'" + v + "' is not yes or no");
}

// A value in the knob's canonical spelling, checked by the advisor's own parser (the knob's setter), so that the
// lists never drift apart.
std::string canonical(const advisor::Knob& k, const std::string& value) {
  advisor::Scenario probe;
  k.set(probe, value);
  return std::get<std::string>(k.get(probe));
}

// The knobs only the SPEC has, and those it reads its own way.
bool apply_own_key(OptionSpec& spec, const advisor::Knob& k, std::string_view token, std::string_view value) {
  const std::string name = k.full_name();
  if (name == "model.preset") set_model(spec, token, value);
  else if (name == "job.mode")
    spec.mode = checked(token, value, [](const std::string& v) { return mode_from_string(v); });
  else if (name == "job.resume") spec.resume_plan = resume_path(token, value);
  else if (name == "training.framework_version") spec.framework_version = std::string(value.substr(0, 64));
  else return false;
  return true;
}

void apply_key(OptionSpec& spec, std::string_view token) {
  const size_t eq = token.find('=');
  const std::string_view key = token.substr(0, eq);
  const std::string_view value = token.substr(eq + 1);
  if (key.empty()) throw SpecError("--paratune: '" + shown(token) + "': no key before '='; valid keys: " + valid_keys());
  if (value.empty()) throw SpecError("--paratune: '" + shown(token) + "': empty value for " + shown(key));
  const advisor::Knob* k = advisor::find_spec_knob(key);
  if (!k)
    throw SpecError("--paratune: unknown key '" + shown(key) + "' in '" + shown(token) +
                    "'; valid keys: " + valid_keys());
  if (*k->alias && key == k->alias)  // the old spelling: the scenario file, the plan and the frameworks say the name
    spec.notes.push_back("--paratune: " + std::string(k->alias) + " is the old spelling of " + k->name + " (accepted)");
  if (apply_own_key(spec, *k, token, value)) return;
  const auto* f = std::find_if(std::begin(kFields), std::end(kFields),
                               [&](const SpecField& field) { return k->full_name() == field.knob; });
  if (f == std::end(kFields)) throw SpecError("--paratune: '" + shown(token) + "': " + k->name + " is not read here");
  if (k->type == advisor::KnobType::Int)
    spec.*f->number = parse_int(key, value, int(k->lo), int(k->spec_hi > 0 ? k->spec_hi : k->hi));
  else if (k->type == advisor::KnobType::Bool) spec.*f->flag = checked(token, value, yes_no);
  else spec.*f->name = checked(token, value, [k](const std::string& v) { return canonical(*k, v); });
  // A name that implies the version ("megatron-deepspeed": DeepSpeed at that version) keeps it unless the SPEC
  // states one (advisor::set_framework).
  if (k->full_name() == "training.framework" && !spec.framework_version) {
    advisor::TrainingSpec named;
    advisor::set_framework(named, std::string(value));
    if (!named.framework_version.empty()) spec.framework_version = named.framework_version;
  }
}

}  // namespace

OptionSpec parse_option_spec(std::string_view text) {
  OptionSpec spec;
  spec.raw = std::string(text.substr(0, kMaxSpecLength));
  if (text.size() > kMaxSpecLength)
    throw SpecError("--paratune: the specification is " + std::to_string(text.size()) + " bytes; at most " +
                    std::to_string(kMaxSpecLength) + " are accepted");
  if (text.empty()) return spec;
  if (text.front() == '@') {
    spec.scenario_file = std::string(text.substr(1));
    if (spec.scenario_file.empty()) throw SpecError("--paratune: '@' must be followed by a scenario file name");
    if (spec.scenario_file.find('\0') != std::string::npos)
      throw SpecError("--paratune: the scenario file name contains a NUL byte");
    return spec;
  }
  const auto tokens = split(text, ',');
  if (tokens.size() > kMaxTokens)
    throw SpecError("--paratune: " + std::to_string(tokens.size()) + " comma-separated items; at most " +
                    std::to_string(kMaxTokens) + " are accepted");
  for (size_t i = 0; i < tokens.size(); ++i) {
    const auto token = tokens[i];
    if (token.empty()) throw SpecError("--paratune: empty item in '" + shown(spec.raw) + "' (stray comma?)");
    if (token.find('=') == std::string_view::npos) {
      if (i != 0)
        throw SpecError("--paratune: '" + shown(token) + "' is not key=value; only the first item may be " +
                        "a bare model preset; valid keys: " + valid_keys());
      set_model(spec, token, token);
      continue;
    }
    apply_key(spec, token);
  }
  if (spec.framework_version) {  // checked against the framework given anywhere in the SPEC (default megatron)
    const auto f = spec.framework ? advisor::framework_from_string(*spec.framework) : advisor::Framework::Megatron;
    try {
      advisor::resolve_version(f, *spec.framework_version);
    } catch (const std::invalid_argument& e) {
      throw SpecError("--paratune: 'framework_version=" + shown(*spec.framework_version) + "': " + e.what());
    }
  }
  return spec;
}

const char* option_usage() {
  static const std::string usage = [] {
    std::string keys;
    for (const auto& k : advisor::knobs()) {
      if (!k.on(advisor::surface::kSpec)) continue;
      std::string item = spec_name(k);
      const auto values = advisor::knob_values(k);
      std::string joined;
      for (const auto& v : values) joined += (joined.empty() ? "" : "|") + v;
      if (k.type == advisor::KnobType::Bool) item += "=yes|no";
      else if (k.type == advisor::KnobType::List) item += "=" + values.front() + "+" + values.back() + "+...";
      else if (k.type != advisor::KnobType::Int) item += "=" + joined;
      keys += (keys.empty() ? "" : ", ") + item;
    }
    return "Let paratune choose the parallel layout and NCCL settings. SPEC: empty (site default), a model preset "
           "(e.g. llama3-70b), key=value,... (" +
           keys +
           "; resume: keep that run's checkpoint format), or @FILE (a "
           "scenario TOML file).";
  }();
  return usage.c_str();
}

}  // namespace paratune::planner
