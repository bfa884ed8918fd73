// Hand-built Topology values for the job-layer tests (the probe's own tests use the real fixtures).
#pragma once

#include "paratune/probe/topology.h"

namespace paratune::fixtures {

// A DGX-A100-like node: 8 A100 80GB in one NVSwitch domain, GPU i PIX to mlx5_i (HDR 200), one storage NIC.
inline probe::Topology dgx_a100_like() {
  probe::Topology t;
  t.source = "test";
  t.fingerprint = "test-fp";
  for (int i = 0; i < 8; ++i) {
    probe::Gpu g;
    g.index = i;
    g.pci_bus_id = "0000:0" + std::to_string(i) + ":00.0";
    g.vendor_id = 0x10de;
    g.device_id = 0x20b2;
    g.model = "a100-sxm4-80gb";
    g.numa = i / 4;
    g.nearest_nics = {"mlx5_" + std::to_string(i)};
    g.nic_path = "PIX";
    t.gpus.push_back(g);
    probe::Nic n;
    n.name = "mlx5_" + std::to_string(i);
    n.state = "active";
    n.link_layer = "infiniband";
    n.rate_gbps = 200;
    n.role = "compute";
    t.nics.push_back(n);
  }
  probe::Nic storage;
  storage.name = "mlx5_8";
  storage.state = "active";
  storage.link_layer = "ethernet";
  storage.rate_gbps = 100;
  storage.role = "storage";
  t.nics.push_back(storage);
  t.nvlink_domains = {{0, 1, 2, 3, 4, 5, 6, 7}};
  t.nvlink_gbps_per_gpu = 300;
  return t;
}

}  // namespace paratune::fixtures
