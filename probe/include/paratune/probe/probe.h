// Entry points of the probe: where a Topology comes from.
// All functions throw paratune::probe::ProbeError (a std::runtime_error) with a message that names the
// file and the problem; callers in slurmstepd catch it and fail open.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "paratune/probe/topology.h"

namespace paratune::probe {

struct ProbeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ProbeOptions {
  // Exactly one source: a topology file (hwloc XML, NCCL topo XML or `paratune probe --json` output,
  // detected by content), an HWLOC_FSROOT-style directory, or (both empty) the live node.
  std::string topology_file;
  std::string fsroot;
  // The job's allocation: GPU indexes visible to the job (from CUDA_VISIBLE_DEVICES / SLURM_*_GPUS).
  // Empty = all GPUs of the node are in the allocation.
  std::vector<int> allocated_gpus;
  // Where to read /sys/class/infiniband and /sys/class/net (live probe: "/sys"; tests: a fixture root).
  std::string sysfs_root = "/sys";
  // Added: skip the libibverbs and NVML queries of a live probe (tests, benchmarks, untrusted contexts).
  bool use_ibverbs = true;
  bool use_nvml = true;
  // Added: a vendor NCCL topology file (NCCL_TOPO_FILE) laid over the probe: GPU/NIC paths of the devices it
  // names (matched by PCI bus id) replace what the VM's virtual PCI tree says. Empty = none.
  std::string nccl_topo_file;
};

// Probe according to the options. Never returns a half-filled Topology: on error it throws.
Topology probe(const ProbeOptions& options);

// JSON (de)serialisation; round-trips exactly. from_json throws ProbeError naming the bad key.
std::string to_json(const Topology& t, int indent = 2);
Topology from_json(const std::string& text, const std::string& origin = "<json>");

// Built-in topologies compiled into the library: topology_file "builtin:<name>" loads them
// (the demo's embedded default). Names: "nvidia-dgx2", "lassen".
std::vector<std::string> builtin_topology_names();

// A per-node probe cache (probe once at slurmd start as root, reuse it in every step).
struct CacheOptions {
  std::string path;                 // the cache file, e.g. /run/paratune/topology.json
  unsigned owner_uid = 0;           // a cache file not owned by this uid (root) is refused
  std::string boot_id_file = "/proc/sys/kernel/random/boot_id";
  bool write = true;                // write/refresh the cache after a miss (only if euid == owner_uid)
};
struct CacheResult {
  bool hit = false;
  std::string reason;               // why it was not used ("missing", "other boot", "not owned by root", ...)
};
// Reuse the cache when it was written in the same boot, for the same source and the same device list;
// otherwise probe and (re)write it atomically (temp file + rename). The allocation (in_allocation) is always
// applied from `options`, never taken from the cache. Cache problems never throw; probe errors do.
Topology probe_cached(const ProbeOptions& options, const CacheOptions& cache, CacheResult* result = nullptr);

// The fingerprint of a topology (hash of GPU models/count, NVLink domains, NIC count/rates/states, paths).
std::string compute_fingerprint(const Topology& t);

}  // namespace paratune::probe
