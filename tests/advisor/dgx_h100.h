// A Megatron job on DGX H100 nodes (8 x H100 SXM5 80 GB on NVSwitch, 8 x 400 Gb/s NICs each), the cluster several
// advisor tests reason about.
#pragma once

#include "paratune/advisor/catalog.h"
#include "paratune/advisor/scenario.h"

namespace paratune::advisor::test_scenarios {

inline Scenario on_dgx_h100(const char* preset, int nodes, int global_batch) {
  Scenario s;
  s.model = model_preset(preset);
  s.training.global_batch = global_batch;
  s.training.framework = Framework::Megatron;
  s.cluster.gpu = "h100-sxm5-80gb";
  s.cluster.nodes = nodes;
  s.cluster.gpus_per_node = 8;
  s.cluster.nvlink_domain = 8;
  s.cluster.nic_count = 8;
  s.cluster.nic_gbps = 400;
  return s;
}

}  // namespace paratune::advisor::test_scenarios
