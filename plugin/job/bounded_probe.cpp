#include "bounded_probe.h"

#include "paratune/common/child_call.h"

namespace paratune::job {

using common::call_in_child;
using common::ChildCallError;

probe::Topology probe_with_deadline(const probe::ProbeOptions& options, const probe::CacheOptions& cache,
                                    int timeout_ms, probe::CacheResult* result) {
  std::string reply;
  try {
    reply = call_in_child(
        [&] {
          probe::CacheResult r;
          const auto topo = probe::probe_cached(options, cache, &r);
          return std::string(r.hit ? "H" : "M") + r.reason + "\n" + probe::to_json(topo, -1);
        },
        timeout_ms, "probe");
  } catch (const ChildCallError& e) {
    const std::string msg = e.what();
    throw probe::ProbeError(msg.find("did not finish") != std::string::npos
                                ? msg + " (hung device, driver or topology file?)"
                                : msg);
  }
  const auto nl = reply.find('\n');
  if (nl == std::string::npos) throw probe::ProbeError("probe: malformed answer from the probing process");
  if (result) {
    result->hit = reply[0] == 'H';
    result->reason = reply.substr(1, nl - 1);
  }
  return probe::from_json(reply.substr(nl + 1), "probe");
}

}  // namespace paratune::job
