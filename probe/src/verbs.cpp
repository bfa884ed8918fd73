// libibverbs: port state, rate and link layer of every RDMA device (rdma-core 44 API).
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "internal.h"

namespace paratune::probe::detail {

namespace {

struct DeviceListFree {
  void operator()(ibv_device** l) const {
    if (l) ibv_free_device_list(l);
  }
};
using DeviceListPtr = std::unique_ptr<ibv_device*, DeviceListFree>;

struct ContextClose {
  void operator()(ibv_context* c) const {
    if (c) ibv_close_device(c);
  }
};
using ContextPtr = std::unique_ptr<ibv_context, ContextClose>;

}  // namespace

double ibv_rate_gbps(uint8_t active_width, uint8_t active_speed) {
  int lanes = 0;
  switch (active_width) {
    case 1: lanes = 1; break;
    case 2: lanes = 4; break;
    case 4: lanes = 8; break;
    case 8: lanes = 12; break;
    case 16: lanes = 2; break;
    default: return 0;
  }
  double per_lane = 0;
  switch (active_speed) {
    case 1: per_lane = 2.5; break;
    case 2: per_lane = 5; break;
    case 4: per_lane = 10; break;
    case 8: per_lane = 10; break;   // FDR10
    case 16: per_lane = 14; break;  // FDR
    case 32: per_lane = 25; break;  // EDR
    case 64: per_lane = 50; break;  // HDR
    case 128: per_lane = 100; break;  // NDR
    default: return 0;              // XDR and later need active_speed_ex (newer rdma-core): use sysfs
  }
  return lanes * per_lane;
}

VerbsResult read_ibverbs_nics() {
  VerbsResult r;
  int n = 0;
  errno = 0;
  DeviceListPtr list(ibv_get_device_list(&n));
  if (!list) {
    r.error = std::string("ibv_get_device_list: ") + std::strerror(errno ? errno : ENOSYS);
    return r;
  }
  r.available = true;
  for (int i = 0; i < n; ++i) {
    ibv_device* dev = list.get()[i];
    const char* name = ibv_get_device_name(dev);
    if (!name) continue;
    ContextPtr ctx(ibv_open_device(dev));
    if (!ctx) continue;  // no access to /dev/infiniband/uverbsN: sysfs still has the facts
    ibv_device_attr da{};
    if (ibv_query_device(ctx.get(), &da) != 0) continue;
    for (int port = 1; port <= da.phys_port_cnt; ++port) {
      ibv_port_attr pa{};
      if (ibv_query_port(ctx.get(), static_cast<uint8_t>(port), &pa) != 0) continue;
      Nic nic;
      nic.name = name;
      nic.port = port;
      switch (pa.state) {
        case IBV_PORT_DOWN: nic.state = "down"; break;
        case IBV_PORT_INIT: nic.state = "init"; break;
        case IBV_PORT_ARMED: nic.state = "armed"; break;
        case IBV_PORT_ACTIVE: nic.state = "active"; break;
        case IBV_PORT_ACTIVE_DEFER: nic.state = "active_defer"; break;
        default: break;
      }
      if (pa.phys_state == 5) nic.phys_state = "linkup";
      else if (pa.phys_state == 3) nic.phys_state = "disabled";
      else if (pa.phys_state == 2) nic.phys_state = "polling";
      nic.link_layer = pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "ethernet" : "infiniband";
      double g = ibv_rate_gbps(pa.active_width, pa.active_speed);
      if (g > 0) nic.rate_gbps = g;
      r.nics.push_back(std::move(nic));
    }
  }
  return r;
}

}  // namespace paratune::probe::detail
