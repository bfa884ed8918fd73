#include "option_spec.h"

#include <charconv>
#include <string>
#include <vector>

#include "paratune/advisor/framework_versions.h"
#include "paratune/advisor/scenario.h"

namespace paratune::job {

namespace {

// Bounds keep a hostile SPEC from costing anything: Slurm passes it to every step.
constexpr size_t kMaxSpecLength = 4096;
constexpr size_t kMaxTokens = 32;
constexpr const char* kValidKeys =
    "model, seq, gbs, mbs, framework, framework_version, mode, precision, tp, pp, cp, ep, etp, dispatcher, zero, "
    "recompute, recompute_modules, optimizer_moments, main_params, offload_layers, attention, fp8_recipe, compile, "
    "tp_comm_overlap, resume";

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

void apply_key(OptionSpec& spec, std::string_view token) {
  const size_t eq = token.find('=');
  const std::string_view key = token.substr(0, eq);
  const std::string_view value = token.substr(eq + 1);
  if (value.empty()) throw SpecError("--paratune: '" + shown(token) + "': empty value for " + shown(key));
  if (key == "model") set_model(spec, token, value);
  else if (key == "seq") spec.seq = parse_int(key, value, 1, 1 << 22);
  else if (key == "gbs") spec.gbs = parse_int(key, value, 1, 1 << 24);
  else if (key == "mbs") spec.mbs = parse_int(key, value, 1, 1 << 16);
  else if (key == "tp") spec.tp = parse_int(key, value, 1, 1024);
  else if (key == "pp") spec.pp = parse_int(key, value, 1, 1024);
  else if (key == "cp") spec.cp = parse_int(key, value, 1, 1024);
  else if (key == "ep") spec.ep = parse_int(key, value, 1, 1 << 16);
  else if (key == "etp") spec.etp = parse_int(key, value, 1, 1024);
  else if (key == "dispatcher") spec.dispatcher = advisor::to_string(checked(token, value, advisor::dispatcher_from_string));
  else if (key == "zero") spec.zero = parse_int(key, value, 0, 3);
  else if (key == "framework") spec.framework = advisor::to_string(checked(token, value, advisor::framework_from_string));
  else if (key == "framework_version") spec.framework_version = std::string(value.substr(0, 64));
  else if (key == "precision") spec.precision = advisor::to_string(checked(token, value, advisor::precision_from_string));
  else if (key == "recompute") spec.recompute = advisor::to_string(checked(token, value, advisor::recompute_from_string));
  else if (key == "attention") spec.attention = advisor::to_string(checked(token, value, advisor::attention_from_string));
  else if (key == "fp8_recipe") spec.fp8_recipe = advisor::to_string(checked(token, value, advisor::fp8_recipe_from_string));
  else if (key == "compile") spec.compile = checked(token, value, yes_no);
  else if (key == "tp_comm_overlap") spec.tp_comm_overlap = checked(token, value, yes_no);
  else if (key == "tp_overlap") {  // the old spelling: the scenario file, the plan and Megatron say tp_comm_overlap
    spec.tp_comm_overlap = checked(token, value, yes_no);
    spec.notes.push_back("--paratune: tp_overlap is the old spelling of tp_comm_overlap (accepted)");
  } else if (key == "optimizer_moments" || key == "main_params") {
    const auto dtype = advisor::to_string(checked(token, value, advisor::state_dtype_from_string));
    (key == "main_params" ? spec.main_params : spec.optimizer_moments) = dtype;
  } else if (key == "recompute_modules") {  // '+' between modules: ',' separates the SPEC's own items
    spec.recompute_modules = advisor::recompute_modules_to_string(checked(token, value, advisor::recompute_modules_from_string));
  } else if (key == "offload_layers") spec.offload_layers = parse_int(key, value, 0, 1024);
  else if (key == "resume") spec.resume_plan = resume_path(token, value);
  else if (key == "mode") spec.mode = checked(token, value, [](const std::string& v) { return mode_from_string(v); });
  else {
    throw SpecError("--paratune: unknown key '" + shown(key) + "' in '" + shown(token) +
                    "'; valid keys: " + kValidKeys);
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
                        "a bare model preset; valid keys: " + kValidKeys);
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
  return "Let paratune choose the parallel layout and NCCL settings. SPEC: empty (site default), a model preset "
         "(e.g. llama3-70b), key=value,... (model, seq, gbs, mbs, framework, framework_version, mode=apply|suggest|off, "
         "precision, tp, pp, cp, ep, etp, dispatcher=alltoall|allgather|flex, zero, recompute, attention, fp8_recipe, "
         "recompute_modules=core_attn+mlp+..., optimizer_moments=fp32|bf16|fp16|fp8, main_params=fp32|fp16, "
         "offload_layers=N, compile=yes|no, tp_comm_overlap=yes|no, resume=PLAN.json: keep that run's checkpoint "
         "format), or @FILE (a scenario TOML file).";
}

}  // namespace paratune::job
