// The allocation as slurmstepd's environment describes it (plugin/job/allocation.h): SLURM_*_GPUS,
// CUDA_VISIBLE_DEVICES, SLURM_GPUS_ON_NODE, SLURM_NNODES... Input: NAME=VALUE lines. Contract: an
// Allocation with bounded index lists, or std::invalid_argument.
#include <stdexcept>

#include "paratune/planner/allocation.h"
#include "fuzz_common.h"

using namespace paratune;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::map<std::string, std::string> vars;
  for (const auto& line : fuzz::split(fuzz::as_view(data, size), '\n', 32)) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) vars[line.substr(0, eq)] = line.substr(eq + 1);
  }
  const planner::MapEnvironment env(vars);
  try {
    // The step kind from the input too: the first byte's low bit.
    const planner::Allocation a = planner::allocation_from_env(env, size > 0 && (data[0] & 1));
    FUZZ_CHECK(a.nodes >= 1 && a.gpus_on_node >= 0 && a.gpu_indexes.size() <= 4096 + 4097);
    for (int i : a.gpu_indexes) FUZZ_CHECK(i >= 0);
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
