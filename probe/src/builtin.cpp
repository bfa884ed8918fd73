// Built-in topologies (the demo's embedded default): byte arrays generated at configure time.
#include <map>

#include "internal.h"

namespace paratune::probe {

namespace builtin_data {
struct Entry {
  const char* name;
  const unsigned char* data;
  std::size_t size;
};
extern const Entry kEntries[];
}  // namespace builtin_data

namespace {
const std::map<std::string, std::string>& builtins() {
  static const std::map<std::string, std::string> m = [] {
    std::map<std::string, std::string> out;
    for (const auto* e = builtin_data::kEntries; e->name; ++e)
      out.emplace(e->name, std::string(reinterpret_cast<const char*>(e->data), e->size));
    return out;
  }();
  return m;
}
}  // namespace

std::vector<std::string> builtin_topology_names() {
  std::vector<std::string> out;
  for (const auto& [k, v] : builtins()) out.push_back(k);
  return out;
}

namespace detail {
const std::string* builtin_topology_xml(const std::string& name) {
  auto it = builtins().find(name);
  return it == builtins().end() ? nullptr : &it->second;
}
}  // namespace detail

}  // namespace paratune::probe
