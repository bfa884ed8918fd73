// The one place that includes <slurm/spank.h>. spank.h 22.05 declares its callbacks outside its own
// extern "C" block, so the include itself must be wrapped (field notes §0.4a).
#pragma once

extern "C" {
#include <slurm/spank.h>
}

// Step ids of special steps (slurm/slurm.h); repeated here to avoid pulling the whole Slurm API in.
inline constexpr unsigned kBatchStep = 0xfffffffbu;
inline constexpr unsigned kExternStep = 0xfffffffcu;
