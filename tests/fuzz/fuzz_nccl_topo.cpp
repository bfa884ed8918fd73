// The NCCL topology-file parser (probe/detail.h parse_nccl_topo): vendor files (NCCL_TOPO_FILE, the policy's
// facts.nccl_topo_file) and topology=FILE. Contract: a Topology or ProbeError naming the origin; the matrices
// of a parsed Topology are square / GPU x NIC, and it survives JSON, fingerprint and allocation.
#include "fuzz_common.h"
#include "paratune/probe/detail.h"
#include "paratune/probe/probe.h"

using namespace paratune;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  probe::Topology t;
  try {
    t = probe::detail::parse_nccl_topo(std::string(fuzz::as_view(data, size)), "fuzz-topo.xml");
  } catch (const probe::ProbeError& e) {
    FUZZ_CHECK(std::string_view(e.what()).rfind("fuzz-topo.xml", 0) == 0);
    return 0;
  }
  const size_t ng = t.gpus.size(), nn = t.nics.size();
  FUZZ_CHECK(t.gpu_paths.size() == ng);
  for (const auto& row : t.gpu_paths) FUZZ_CHECK(row.size() == ng);
  FUZZ_CHECK(t.gpu_nic_paths.empty() || t.gpu_nic_paths.size() == ng);
  for (const auto& row : t.gpu_nic_paths) FUZZ_CHECK(row.size() == nn);
  (void)probe::compute_fingerprint(t);
  const std::string j = probe::to_json(t, -1);
  FUZZ_CHECK(probe::to_json(probe::from_json(j, "round-trip"), -1) == j);
  probe::detail::apply_allocation(t, {0, 2, 5});
  return 0;
}
