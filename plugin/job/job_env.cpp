#include "job_env.h"

#include <algorithm>

namespace paratune::job {

std::optional<std::string> MapEnvironment::get(const std::string& name) const {
  auto it = vars_.find(name);
  if (it == vars_.end()) return std::nullopt;
  return it->second;
}

bool MapEnvironment::set(const std::string& name, const std::string& value) {
  vars_[name] = value;
  return true;
}

EnvOutcome inject(JobEnvironment& env, const std::vector<EnvAssignment>& wanted, const std::vector<std::string>& force) {
  EnvOutcome out;
  for (const auto& w : wanted) {
    const bool forced = std::find(force.begin(), force.end(), w.name) != force.end();
    if (!forced) {
      if (auto existing = env.get(w.name)) {
        out.kept.push_back({w.name, *existing, "already set by the user; kept (paratune wanted '" + w.value + "')"});
        continue;
      }
    }
    if (env.set(w.name, w.value)) out.set.push_back(w);
    else out.failed.push_back(w);
  }
  return out;
}

}  // namespace paratune::job
