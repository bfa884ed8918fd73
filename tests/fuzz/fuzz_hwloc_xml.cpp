// The hwloc XML loader (probe/detail.h load_hwloc_xml_text, what topology=FILE and builtin:NAME use): hwloc's
// own XML import (Debian's libhwloc, libxml2 backend when installed) plus paratune's GPU/NIC/path extraction.
// The input must be NUL-free (probe() refuses binary files before this). Contract: a Topology or ProbeError.
#include <cstring>

#include "fuzz_common.h"
#include "paratune/probe/detail.h"
#include "paratune/probe/probe.h"

using namespace paratune;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (std::memchr(data, 0, size) != nullptr) return 0;
  probe::Topology t;
  try {
    t = probe::detail::load_hwloc_xml_text(std::string(fuzz::as_view(data, size)), "fuzz-hwloc.xml");
  } catch (const probe::ProbeError&) {
    return 0;
  }
  const size_t ng = t.gpus.size();
  FUZZ_CHECK(t.gpu_paths.size() == ng);
  for (const auto& row : t.gpu_paths) FUZZ_CHECK(row.size() == ng);
  (void)probe::compute_fingerprint(t);
  (void)probe::to_json(t, -1);
  return 0;
}
