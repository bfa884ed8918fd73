#include "paratune/planner/job_env.h"

#include <algorithm>

namespace paratune::planner {

std::optional<std::string> MapEnvironment::get(const std::string& name) const {
  auto it = vars_.find(name);
  if (it == vars_.end()) return std::nullopt;
  return it->second;
}

bool MapEnvironment::set(const std::string& name, const std::string& value) {
  vars_[name] = value;
  return true;
}

bool MapEnvironment::unset(const std::string& name) {
  vars_.erase(name);
  return true;
}

EnvOutcome inject(JobEnvironment& env, const std::vector<EnvAssignment>& wanted, const std::vector<std::string>& force,
                  const std::vector<std::string>& unset) {
  EnvOutcome out;
  for (const auto& name : unset) {
    if (auto existing = env.get(name)) {
      if (env.unset(name)) out.removed.push_back({name, *existing, "forbidden by the site policy"});
      else out.failed.push_back({name, "", "could not remove"});
    }
  }
  for (const auto& w : wanted) {
    const bool forced = std::find(force.begin(), force.end(), w.name) != force.end();
    if (auto existing = env.get(w.name)) {
      if (!forced) {
        out.kept.push_back({w.name, *existing, "already set by the user; kept (paratune wanted '" + w.value + "')"});
        continue;
      }
      if (*existing != w.value) out.replaced.push_back({w.name, *existing, w.reason});
    }
    if (env.set(w.name, w.value)) out.set.push_back(w);
    else out.failed.push_back(w);
  }
  return out;
}

}  // namespace paratune::planner
