#include "topology_text.h"

#include <charconv>
#include <map>

namespace paratune::job {

namespace {

// "K1=V1 K2=V2 ..." -> map; values have no spaces in Slurm's topology lines (names and host lists).
std::map<std::string_view, std::string_view> fields(std::string_view line) {
  std::map<std::string_view, std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t end = line.find_first_of(" \t", i);
    if (end == std::string_view::npos) end = line.size();
    const std::string_view word = line.substr(i, end - i);
    if (const size_t eq = word.find('='); eq != std::string_view::npos && eq > 0)
      out.emplace(word.substr(0, eq), word.substr(eq + 1));
    i = end;
  }
  return out;
}

bool record_of(std::string_view line, TopologyRecord& r) {
  const auto f = fields(line);
  const bool is_switch = line.rfind("SwitchName=", 0) == 0, is_block = line.rfind("BlockName=", 0) == 0;
  if (!is_switch && !is_block) return false;
  r.name = std::string(f.at(is_switch ? "SwitchName" : "BlockName"));
  if (r.name.empty()) return false;
  r.level = 0;
  if (const auto l = f.find("Level"); is_switch && l != f.end()) {
    const auto [p, ec] = std::from_chars(l->second.data(), l->second.data() + l->second.size(), r.level);
    if (ec != std::errc() || p != l->second.data() + l->second.size() || r.level < 0 || r.level > 64) return false;
  }
  const auto n = f.find("Nodes");
  r.nodes = n == f.end() ? "" : std::string(n->second);
  return true;
}

}  // namespace

std::vector<TopologyRecord> parse_topology_text(std::string_view text) {
  std::vector<TopologyRecord> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    TopologyRecord r;
    if (line.size() <= kMaxTopologyLine && record_of(line, r)) out.push_back(std::move(r));
    start = end + 1;
  }
  return out;
}

}  // namespace paratune::job
