// `--profile FILE` of `predict`, `advise` and `explain`: a hardware profile (`paratune measure`) read at the edge and
// applied to the scenario when it is for the scenario's GPU and, when a topology is given, for its nodes'
// fingerprint; otherwise a warning on stderr and the scenario as it was (advisor/profile.h).
#pragma once

#include <string>
#include <vector>

#include "paratune/advisor/profile.h"

namespace paratune::cli {

// A hardware profile file, read and parsed; throws std::invalid_argument (FILE:LINE:COL: field: ...).
advisor::HardwareProfile read_profile(const std::string& path);

// Throws std::invalid_argument (FILE:LINE:COL: field: ...) for an unreadable or malformed file. The notes say which
// terms came from the profile and which from the catalog, or why it was ignored.
advisor::Scenario apply_profile(const std::string& path, const advisor::Scenario& s, std::vector<std::string>& notes,
                                const char* command);

// The fingerprint of the topology the scenario was probed from ("" when it names none).
std::string scenario_fingerprint(const advisor::Scenario& s);

}  // namespace paratune::cli
