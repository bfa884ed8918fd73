// Views of the merged tuning log that `paratune log` prints besides its table (kept apart from cmd_log.cpp).
#pragma once

#include <vector>

#include "paratune/tuning/tuning_log.h"

namespace paratune::cli {

// `paratune log --oom`: the jobs that died of an out-of-memory error, with the plan, its predicted memory per GPU
// and the GPU's capacity, as a table or (as_json) a JSON array.
void print_ooms(const std::vector<const tuning::LogEntry*>& rows, bool as_json);

}  // namespace paratune::cli
