// torchtitan's data-parallel mesh dimensions for a layout: FSDP shards within data_parallel_shard_degree and
// replicates across the rest (HSDP); ZeRO 0 is replication only (DDP). Shared by the arguments and the rules.
#pragma once

#include "paratune/advisor/plan.h"

namespace paratune::advisor::frameworks {

struct Degrees {
  int shard = 1, replicate = 1;
};

inline Degrees dp_degrees(const Layout& l) {
  Degrees d{l.dp, 1};
  if (l.zero_stage == 0) return {1, l.dp};
  if (l.shard_group > 0) {
    int shard = l.shard_group % l.cp == 0 ? l.shard_group / l.cp : l.shard_group;
    if (shard < 1 || l.dp % shard) shard = l.dp;
    d = {shard, l.dp / shard};
  }
  return d;
}

}  // namespace paratune::advisor::frameworks
