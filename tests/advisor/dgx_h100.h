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

// Nemotron-22B as NVIDIA's NeMo 24.07 performance summary gives it (40 layers, hidden 6144, 48 heads, FFN 24576,
// not gated, vocabulary 256,000, sequence 4096; data/calibration/published/measurements.csv row NEMO2407-9) on 8
// DGX H100 nodes in FP8; `vocab` lets a test change the LM head's weight.
inline Scenario nemotron_22b_on_dgx_h100(int vocab = 256000) {
  Scenario s = on_dgx_h100("llama3-8b", 8, 256);
  ModelSpec& m = s.model;
  m.name = "nemotron-22b";
  m.layers = 40;
  m.hidden = 6144;
  m.heads = 48;
  m.kv_heads = 48;
  m.ffn_hidden = 24576;
  m.gated_mlp = false;
  m.vocab = vocab;
  m.seq_len = 4096;
  s.training.precision = Precision::Fp8;
  return s;
}

}  // namespace paratune::advisor::test_scenarios
