// What a new calibration changes against the file in force (`calibrate --dry-run`): one line per entry that is
// new, changed or gone, in the file's terms. Pure.
#pragma once

#include <string>
#include <vector>

#include "paratune/advisor/calibration_file.h"

namespace paratune::tuning {

// "h100-sxm5-80gb/infiniband/megatron: compute_scale 0.900 -> 0.831, network_scale 1.000 -> 0.608 (160 jobs)",
// "... : new entry ...", "... : entry removed (the shipped parameters apply)", "memory h100-sxm5-80gb/megatron:
// head-room 0.0 -> 15.5 GiB"; entries whose figures are unchanged are left out ("unchanged" when nothing differs).
std::vector<std::string> calibration_changes(const advisor::Calibration& before, const advisor::Calibration& after);

}  // namespace paratune::tuning
