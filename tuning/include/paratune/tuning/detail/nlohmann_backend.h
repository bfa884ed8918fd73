// nlohmann's view of a tuning-log line for entry_from (entry_fields.h): the reference reader (read_tuning_log, the
// plugin's AdminComment) and the streaming reader's fallback for the lines simdjson refuses.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "paratune/tuning/scenario_json.h"
#include "paratune/tuning/tuning_log.h"

namespace paratune::tuning::detail {

struct NlohmannBackend {
  using Value = const nlohmann::json*;
  static bool is_object(Value v) { return v->is_object(); }
  static bool is_array(Value v) { return v->is_array(); }
  static bool is_string(Value v) { return v->is_string(); }
  static bool is_bool(Value v) { return v->is_boolean(); }
  static bool is_number(Value v) { return v->is_number(); }
  static bool is_integer(Value v) { return v->is_number_integer(); }
  static std::string_view string(Value v) { return v->get_ref<const std::string&>(); }
  static bool boolean(Value v) { return v->get<bool>(); }
  static double number(Value v) { return v->get<double>(); }
  static long long integer(Value v) { return v->get<long long>(); }
  template <class F>
  static void for_each_member(Value v, F f) {
    if (!v->is_object()) return;
    for (auto it = v->begin(); it != v->end(); ++it) f(std::string_view(it.key()), &*it);
  }
  template <class F>
  static void for_each_element(Value v, F f) {
    for (const auto& x : *v) f(&x);
  }
  template <class T, class Read>
  static std::shared_ptr<const ParsedPart<T>> parse(Read read) {
    auto p = std::make_shared<ParsedPart<T>>();
    try {
      p->value = read();
    } catch (const std::exception& ex) {
      p->problem = ex.what();
    }
    return p;
  }
  std::shared_ptr<const ParsedPart<advisor::Scenario>> scenario(Value v) {
    return parse<advisor::Scenario>([&] { return scenario_from_json(*v); });
  }
  std::shared_ptr<const ParsedPart<advisor::Layout>> plan(Value v) {
    return parse<advisor::Layout>(
        [&] { return layout_from_json(v->is_object() && v->contains("layout") ? (*v)["layout"] : *v); });
  }
};

}  // namespace paratune::tuning::detail
