// Partition names given on the command line that the site policy has no [partition.NAME] section for: the name
// would silently get [defaults] (a typo such as "h10O" for "h100"), so each is warned about, or refused with
// --strict. Used by advise/explain --partition, policy check --partition and portability --partitions.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "paratune/policies/policy.h"

namespace paratune::cli {

// false when a name is unknown and `strict` (the caller exits 2); prints one line per unknown name on stderr.
inline bool check_partition_names(const char* command, const policies::PolicyFile& file, const std::string& policy_path,
                                  const std::vector<std::string>& names, bool strict) {
  std::string known;
  for (const auto& [name, layer] : file.partitions) known += (known.empty() ? "" : ", ") + name;
  bool ok = true;
  for (const auto& n : names) {
    if (file.partitions.count(n)) continue;
    ok = false;
    std::fprintf(stderr, "paratune %s: %s: partition '%s' is not in %s (it has: %s); %s\n", command,
                 strict ? "error" : "warning", n.c_str(), policy_path.c_str(), known.empty() ? "none" : known.c_str(),
                 strict ? "--strict refuses it" : "[defaults] applies to it");
  }
  return ok || !strict;
}

}  // namespace paratune::cli
