#include "profile_input.h"

#include <cstdio>
#include <stdexcept>

#include "input_file.h"
#include "paratune/probe/probe.h"

namespace paratune::cli {

std::string scenario_fingerprint(const advisor::Scenario& s) {
  if (s.cluster.topology_file.empty()) return "";
  probe::ProbeOptions po;
  po.topology_file = s.cluster.topology_file;
  po.use_ibverbs = false;
  po.use_nvml = false;
  try {
    return probe::probe(po).fingerprint;
  } catch (const std::exception& e) {
    throw std::invalid_argument(s.cluster.topology_file + ":0:0: topology: " + e.what());
  }
}

advisor::HardwareProfile read_profile(const std::string& path) {
  return advisor::parse_profile(read_cli_file(path, "profile"), path);
}

advisor::Scenario apply_profile(const std::string& path, const advisor::Scenario& s, std::vector<std::string>& notes,
                                const char* command) {
  const advisor::HardwareProfile p = read_profile(path);
  const advisor::ProfileUse use = advisor::use_profile(p, s, scenario_fingerprint(s));
  if (!use.applies) {
    std::fprintf(stderr, "%s: warning: %s (%s)\n", command, use.warning.c_str(), path.c_str());
    notes.push_back(use.warning);
    return s;
  }
  notes.insert(notes.end(), use.notes.begin(), use.notes.end());
  return advisor::with_profile(s, use);
}

}  // namespace paratune::cli
