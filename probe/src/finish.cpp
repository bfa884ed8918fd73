// The last step of every probe source: NIC roles, nearest NICs per GPU, the NVLink domains the source did not
// give (from the GPU model), and gpu_paths. Its own file: hwloc_probe.cpp, nccl_topo.cpp and probe.cpp (the NCCL
// overlay) all end here, and none of them depends on another for it.
#include <algorithm>

#include "internal.h"

namespace paratune::probe::internal {

void finish_topology(Topology& t, const std::vector<std::vector<std::string>>& nic_paths) {
  const size_t ng = t.gpus.size(), nn = t.nics.size();
  t.gpu_nic_paths.assign(ng, std::vector<std::string>(nn, "SYS"));
  for (size_t i = 0; i < ng; ++i)
    for (size_t k = 0; k < nn; ++k) t.gpu_nic_paths[i][k] = nic_paths[i][k] == "NODE" ? "PHB" : nic_paths[i][k];
  // Roles: with GPUs present, NICs that are PIX/PXB to some GPU are compute and the others storage; when no
  // NIC is that close (POWER, cloud VMs), all are compute. Without GPUs: unknown.
  std::vector<int> best(nn, 99);
  for (size_t k = 0; k < nn; ++k)
    for (size_t i = 0; i < ng; ++i) best[k] = std::min(best[k], detail::path_rank(nic_paths[i][k]));
  bool any_close = false;
  for (size_t k = 0; k < nn; ++k) any_close |= best[k] <= detail::path_rank("PXB");
  for (size_t k = 0; k < nn; ++k) {
    if (!t.nics[k].role.empty() && t.nics[k].role != "unknown") continue;
    if (ng == 0) t.nics[k].role = "unknown";
    else if (!any_close || best[k] <= detail::path_rank("PXB")) t.nics[k].role = "compute";
    else t.nics[k].role = "storage";
  }
  if (any_close && ng > 0) {
    for (size_t k = 0; k < nn; ++k)
      if (t.nics[k].role == "storage") {
        t.inferred.push_back("nic role: " + t.nics[k].name + " storage (no GPU behind its PCIe switch)");
      }
  }
  // Nearest compute NICs per GPU (every port of the best class; names listed once).
  for (size_t i = 0; i < ng; ++i) {
    int r = 99;
    for (size_t k = 0; k < nn; ++k)
      if (t.nics[k].role == "compute") r = std::min(r, detail::path_rank(nic_paths[i][k]));
    auto& g = t.gpus[i];
    g.nearest_nics.clear();
    g.nic_path.clear();
    for (size_t k = 0; k < nn; ++k)
      if (t.nics[k].role == "compute" && detail::path_rank(nic_paths[i][k]) == r) {
        if (std::find(g.nearest_nics.begin(), g.nearest_nics.end(), t.nics[k].name) == g.nearest_nics.end())
          g.nearest_nics.push_back(t.nics[k].name);
        g.nic_path = nic_paths[i][k] == "NODE" ? "PHB" : nic_paths[i][k];
      }
  }
  detail::infer_nvlink_from_model(t);
  detail::finish_gpu_paths(t);
}

}  // namespace paratune::probe::internal
