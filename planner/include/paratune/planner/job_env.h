// The job's environment as the decision sees it, and the variables a decision injects.
// An interface so the same code runs against spank_getenv/spank_setenv in slurmstepd and a map in tests.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace paratune::planner {

class JobEnvironment {
 public:
  virtual ~JobEnvironment() = default;
  virtual std::optional<std::string> get(const std::string& name) const = 0;
  virtual bool set(const std::string& name, const std::string& value) = 0;  // overwrite; false on failure
  virtual bool unset(const std::string& name) = 0;                          // false on failure
};

// A plain map: unit tests, the CLI, and the local (srun/sbatch) process environment snapshot.
class MapEnvironment : public JobEnvironment {
 public:
  MapEnvironment() = default;
  explicit MapEnvironment(std::map<std::string, std::string> vars) : vars_(std::move(vars)) {}
  std::optional<std::string> get(const std::string& name) const override;
  bool set(const std::string& name, const std::string& value) override;
  bool unset(const std::string& name) override;
  const std::map<std::string, std::string>& vars() const { return vars_; }

 private:
  std::map<std::string, std::string> vars_;
};

// One variable the decision wants in the job, and why.
struct EnvAssignment {
  std::string name, value, reason;
};

// What happened to each wanted variable when it was injected.
struct EnvOutcome {
  std::vector<EnvAssignment> set;   // injected
  std::vector<EnvAssignment> kept;  // the user already had a value: theirs stays (value = the user's)
  std::vector<EnvAssignment> failed;
  std::vector<EnvAssignment> replaced;  // forced by the site policy over the user's value (value = the user's)
  std::vector<EnvAssignment> removed;   // forbidden by the site policy and present (value = what was removed)
};

// Inject: never overwrite a variable the user already set (unless `force` names it: the site policy).
// Forbidden names (`unset`) are removed first.
EnvOutcome inject(JobEnvironment& env, const std::vector<EnvAssignment>& wanted,
                  const std::vector<std::string>& force = {}, const std::vector<std::string>& unset = {});

}  // namespace paratune::planner
