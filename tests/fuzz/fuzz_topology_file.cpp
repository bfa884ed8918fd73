// probe() on a topology file: content sniffing (JSON / hwloc XML / NCCL topo / refused), the chosen loader, the
// allocation (the first byte selects GPU indexes, as CUDA_VISIBLE_DEVICES would) and the fingerprint: the whole
// path that topology=FILE takes in slurmstepd. The input is handed over as a memfd (/proc/self/fd/N): no disk.
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "paratune/probe/probe.h"

using namespace paratune;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = fuzz::as_view(data, size);
  const uint8_t sel = fuzz::take_byte(text);
  static const int fd = ::memfd_create("fuzz-topology", MFD_CLOEXEC);
  FUZZ_CHECK(fd >= 0);
  FUZZ_CHECK(::ftruncate(fd, 0) == 0);
  FUZZ_CHECK(::pwrite(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()));
  probe::ProbeOptions o;
  o.topology_file = "/proc/self/fd/" + std::to_string(fd);
  o.use_ibverbs = o.use_nvml = false;
  o.sysfs_root = "/nonexistent";
  for (int bit = 0; bit < 8; ++bit)
    if (sel & (1u << bit)) o.allocated_gpus.push_back(bit * 3);  // 0,3,...,21: some beyond any node's GPUs
  try {
    const probe::Topology t = probe::probe(o);
    FUZZ_CHECK(!t.fingerprint.empty());
  } catch (const probe::ProbeError&) {
  }
  return 0;
}
