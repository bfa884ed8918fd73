// Ready-to-use arguments for a plan's framework, in the form its version reads: a Megatron argument file, NeMo-Run
// overrides, a DeepSpeed JSON (with the Megatron-DeepSpeed arguments when TP/PP > 1), torchtitan TOML (v0.2) or
// CLI flags (main), an FSDP settings file with PyTorch's own names, NeMo AutoModel's --dotted.key=value recipe
// overrides, and torchrun flags. Argument files (and
// torchrun) hold one argv element per line with no shell quoting (--flag=value, KEY=VALUE): the documented launch
// reads them with `mapfile -t ARGS < FILE` and passes "${ARGS[@]}" (etc/examples; tests/contracts/argv). Pure
// strings; the caller writes them where it wants. One adapter per framework in advisor/src/frameworks/.
#pragma once

#include <string>
#include <vector>

#include "paratune/advisor/plan.h"
#include "paratune/advisor/scenario.h"

namespace paratune::advisor {

// Where torchrun's rendezvous goes. Empty fields are written as the shell variables the plugin exports
// (PARATUNE_MASTER_ADDR, PARATUNE_MASTER_PORT, SLURM_JOB_ID): a form for people to read (paratune advise), which
// mapfile does not expand; the plugin's torchrun.args has the values.
struct Launch {
  std::string master_addr, master_port, job_id;
};

struct ArgsFile {
  std::string name;     // e.g. "megatron.args"
  std::string content;  // ends with a newline
};

struct FrameworkArgs {
  Framework framework = Framework::Megatron;
  std::string version;                // framework_versions() id
  std::vector<ArgsFile> files;        // files[0] is $PARATUNE_ARGS; Megatron-DeepSpeed adds its argument file
  std::string torchrun;               // torchrun flags, one per line (the launcher of all here but NeMo-Run)
  std::vector<std::string> notes;     // what stays the user's to set for this version (README: the boundary)
};

// The arguments for plan.framework at the scenario's framework version.
FrameworkArgs framework_args(const Scenario& s, const Plan& plan, const Launch& launch = {});

}  // namespace paratune::advisor
