// The Topology JSON loader (probe/probe.h from_json): `paratune probe --json` output used as topology=FILE, and
// the node's probe cache (/run/paratune/topology.json). Contract: a Topology or ProbeError naming the origin; a
// loaded Topology serialises and loads back to the same JSON ("round-trips exactly").
#include "fuzz_common.h"
#include "paratune/probe/probe.h"

using namespace paratune;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  probe::Topology t;
  try {
    t = probe::from_json(std::string(fuzz::as_view(data, size)), "fuzz.json");
  } catch (const probe::ProbeError& e) {
    FUZZ_CHECK(std::string_view(e.what()).rfind("fuzz.json", 0) == 0);
    return 0;
  }
  const std::string once = probe::to_json(t, -1);
  probe::Topology back;
  try {
    back = probe::from_json(once, "round-trip");
  } catch (const probe::ProbeError& e) {
    std::fprintf(stderr, "to_json output does not load back: %s\n%s\n", e.what(), once.c_str());
    std::abort();
  }
  FUZZ_CHECK(probe::to_json(back, -1) == once);
  (void)probe::compute_fingerprint(t);
  return 0;
}
