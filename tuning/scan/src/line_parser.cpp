#include "paratune/tuning/scan/line_parser.h"

#include <simdjson.h>

#include <unordered_map>

#include <nlohmann/json.hpp>

#include "paratune/tuning/detail/nlohmann_backend.h"
#include "paratune/tuning/scenario_json.h"

namespace paratune::tuning::scan {

namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

// At most this many distinct scenario (and as many plan) texts are kept; past that the cache starts afresh.
// Entries that were given a shared result keep it (shared_ptr), so nothing read changes, only what is reused.
constexpr size_t kMaxCached = 8192;

// Looked up by a view of the line's own bytes: nothing is copied unless the text is new.
struct TextHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

template <class T>
using Cache = std::unordered_map<std::string, std::shared_ptr<const ParsedPart<T>>, TextHash, std::equal_to<>>;

template <class T, class Read>
std::shared_ptr<const ParsedPart<T>> cached(Cache<T>& cache, std::string_view text, Read read) {
  if (auto it = cache.find(text); it != cache.end()) return it->second;
  auto p = std::make_shared<ParsedPart<T>>();
  try {
    p->value = read(nlohmann::json::parse(text));
  } catch (const std::exception& ex) {
    p->problem = ex.what();
  }
  if (cache.size() >= kMaxCached) cache.clear();
  cache.emplace(std::string(text), p);
  return p;
}

// The source text of the line's top-level "scenario" and "plan" (the last of each, as the DOM keeps the last
// duplicate), found with simdjson On-Demand, which skips over values without building them. The cache is keyed
// by this text, not by a minified copy: equal texts are equal values, and writing the minified copy of every
// line's scenario cost more than parsing the line. Empty when the line has none or On-Demand refuses it.
struct RawParts {
  std::string_view scenario, plan;
};

std::string_view raw_value(simdjson::ondemand::value v) {
  std::string_view raw;
  simdjson::ondemand::json_type t;
  if (v.type().get(t)) return {};
  if (t == simdjson::ondemand::json_type::object) {
    simdjson::ondemand::object o;
    if (v.get_object().get(o) || o.raw_json().get(raw)) return {};
  } else if (t == simdjson::ondemand::json_type::array) {
    simdjson::ondemand::array a;
    if (v.get_array().get(a) || a.raw_json().get(raw)) return {};
  } else {
    raw = v.raw_json_token();  // a scalar, with the spaces after it: a key like any other
  }
  return raw;
}

RawParts raw_parts(simdjson::ondemand::parser& parser, const char* padded_data, size_t size) {
  RawParts r;
  simdjson::ondemand::document doc;
  simdjson::ondemand::object root;
  if (parser.iterate(padded_data, size, size + simdjson::SIMDJSON_PADDING).get(doc) || doc.get_object().get(root))
    return {};
  for (auto field : root) {
    std::string_view key;
    simdjson::ondemand::value v;
    if (field.unescaped_key().get(key) || field.value().get(v)) return {};
    if (key == "scenario") r.scenario = raw_value(v);
    else if (key == "plan") r.plan = raw_value(v);
  }
  return r;
}

// simdjson's view for entry_from (detail/entry_fields.h).
struct SimdjsonBackend {
  using Value = element;
  Cache<advisor::Scenario>* scenarios;
  Cache<advisor::Layout>* plans;

  static bool is_object(const Value& v) { return v.type() == element_type::OBJECT; }
  static bool is_array(const Value& v) { return v.type() == element_type::ARRAY; }
  static bool is_string(const Value& v) { return v.type() == element_type::STRING; }
  static bool is_bool(const Value& v) { return v.type() == element_type::BOOL; }
  static bool is_integer(const Value& v) {
    return v.type() == element_type::INT64 || v.type() == element_type::UINT64;
  }
  static bool is_number(const Value& v) { return is_integer(v) || v.type() == element_type::DOUBLE; }
  static std::string_view string(const Value& v) {
    std::string_view s;
    return v.get_string().get(s) ? std::string_view() : s;
  }
  static bool boolean(const Value& v) {
    bool b = false;
    return v.get_bool().get(b) ? false : b;
  }
  static double number(const Value& v) {
    int64_t i = 0;
    uint64_t u = 0;
    double d = 0;
    switch (v.type()) {
      case element_type::INT64: return v.get_int64().get(i) ? 0 : double(i);
      case element_type::UINT64: return v.get_uint64().get(u) ? 0 : double(u);
      default: return v.get_double().get(d) ? 0 : d;
    }
  }
  static long long integer(const Value& v) {
    uint64_t u = 0;
    int64_t i = 0;
    if (v.type() == element_type::UINT64) return v.get_uint64().get(u) ? 0 : static_cast<long long>(u);
    return v.get_int64().get(i) ? 0 : i;
  }
  template <class F>
  static void for_each_member(const Value& v, F f) {
    if (v.type() != element_type::OBJECT) return;
    simdjson::dom::object obj;
    if (v.get_object().get(obj)) return;
    for (auto field : obj) f(field.key, field.value);
  }
  template <class F>
  static void for_each_element(const Value& v, F f) {
    simdjson::dom::array arr;
    if (v.get_array().get(arr)) return;
    for (element x : arr) f(x);
  }
  // The raw text when On-Demand found it, else the minified value (the same key space: both are valid JSON of
  // the same value, and the cache only ever shares results between equal texts).
  std::shared_ptr<const ParsedPart<advisor::Scenario>> scenario(const Value& v) {
    auto read = [](const nlohmann::json& j) { return scenario_from_json(j); };
    const std::string_view raw = parts().scenario;
    return raw.empty() ? cached<advisor::Scenario>(*scenarios, simdjson::minify(v), read)
                       : cached<advisor::Scenario>(*scenarios, raw, read);
  }
  std::shared_ptr<const ParsedPart<advisor::Layout>> plan(const Value& v) {
    auto read = [](const nlohmann::json& j) {
      return layout_from_json(j.is_object() && j.contains("layout") ? j["layout"] : j);
    };
    const std::string_view raw = parts().plan;
    return raw.empty() ? cached<advisor::Layout>(*plans, simdjson::minify(v), read)
                       : cached<advisor::Layout>(*plans, raw, read);
  }
  const RawParts& parts() {
    if (!raw) raw = raw_parts(*ondemand, line.data(), line.size());
    return *raw;
  }
  simdjson::ondemand::parser* ondemand;
  std::string_view line;  // padded
  std::optional<RawParts> raw;
};

}  // namespace

size_t parser_padding() { return simdjson::SIMDJSON_PADDING; }

struct LineParser::Impl {
  simdjson::dom::parser parser;
  simdjson::ondemand::parser ondemand;
  std::string padded;  // a copy of a line given without padding
  Cache<advisor::Scenario> scenarios;
  Cache<advisor::Layout> plans;
};

LineParser::LineParser() : impl_(std::make_unique<Impl>()) {}
LineParser::~LineParser() = default;

size_t LineParser::cached_configurations() const { return impl_->scenarios.size() + impl_->plans.size(); }

std::optional<LogEntry> LineParser::parse(std::string_view line, bool padded, size_t line_no, detail::Depth depth,
                                          std::string* problem) {
  if (!padded) {
    impl_->padded.assign(line);
    impl_->padded.append(simdjson::SIMDJSON_PADDING, '\0');
    line = std::string_view(impl_->padded.data(), line.size());
  }
  element root;
  if (!impl_->parser.parse(line.data(), line.size(), false).get(root)) {
    if (root.type() != element_type::OBJECT) {
      *problem = "not a JSON object";
      return std::nullopt;
    }
    SimdjsonBackend b{&impl_->scenarios, &impl_->plans, &impl_->ondemand, line, std::nullopt};
    return detail::entry_from(b, root, line_no, depth);
  }
  // simdjson's limits are narrower than JSON's (integers beyond 64 bits, 1024 levels): nlohmann decides.
  const nlohmann::json j = nlohmann::json::parse(line.begin(), line.end(), nullptr, false);
  if (j.is_discarded()) {
    *problem = "not valid JSON";
    return std::nullopt;
  }
  if (!j.is_object()) {
    *problem = "not a JSON object";
    return std::nullopt;
  }
  detail::NlohmannBackend b;
  return detail::entry_from(b, &j, line_no, depth);
}

}  // namespace paratune::tuning::scan
