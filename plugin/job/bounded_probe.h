// The probe, bounded in time: slurmstepd must never wait without bound (a wedged NVML, a hung sysfs read,
// a topology "file" that is a FIFO). The probe runs in a forked child that sends its Topology back as JSON
// through a pipe; past the deadline the child is killed and ProbeError says so.
#pragma once

#include "paratune/probe/probe.h"

namespace paratune::job {

probe::Topology probe_with_deadline(const probe::ProbeOptions& options, const probe::CacheOptions& cache,
                                    int timeout_ms, probe::CacheResult* result = nullptr);

}  // namespace paratune::job
