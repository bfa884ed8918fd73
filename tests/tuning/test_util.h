// Small helpers shared by the tuning tests.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace paratune::tuning::testing {

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::vector<std::string> lines_of(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(l);
  return out;
}

inline std::string fixture(const std::string& name) { return std::string(PARATUNE_LOG_FIXTURES) + "/" + name; }

// Occurrences of `needle` in `hay`.
inline size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + needle.size())) ++n;
  return n;
}

}  // namespace paratune::tuning::testing
