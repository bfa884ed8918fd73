// The job's environment inside slurmstepd (spank_getenv/spank_setenv), as a planner::JobEnvironment.
#pragma once

#include "paratune/planner/job_env.h"
#include "spank_api.h"

namespace paratune::plugin {

class SpankEnvironment : public planner::JobEnvironment {
 public:
  explicit SpankEnvironment(spank_t sp) : sp_(sp) {}
  std::optional<std::string> get(const std::string& name) const override;
  bool set(const std::string& name, const std::string& value) override;
  bool unset(const std::string& name) override;

 private:
  spank_t sp_;
};

}  // namespace paratune::plugin
