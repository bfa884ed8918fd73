// NVML through dlopen("libnvidia-ml.so.1") only: the driver provides it on GPU nodes; we never link it.
// The few declarations below follow nvml.h (CUDA 12) — only stable, versioned entry points are used.
#include <dlfcn.h>

#include <cctype>
#include <cstring>
#include <memory>

#include "internal.h"

namespace paratune::probe::detail {

namespace {

using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlPciInfo_t {  // nvmlPciInfo_v3 layout
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
constexpr int kNvmlSuccess = 0;
constexpr unsigned kMaxLinks = 18;

struct DlClose {
  void operator()(void* h) const {
    if (h) ::dlclose(h);
  }
};
using DlPtr = std::unique_ptr<void, DlClose>;

template <class F>
F sym(void* h, const char* name) {
  return reinterpret_cast<F>(::dlsym(h, name));
}

// "00000000:07:00.0" (NVML) -> "0000:07:00.0"
std::string normalise_busid(const char* s) {
  std::string b(s);
  for (auto& c : b) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto colon = b.find(':');
  if (colon != std::string::npos && colon > 4) b = b.substr(colon - 4);
  return b;
}

}  // namespace

NvmlResult read_nvml(const char* library) {
  NvmlResult r;
  DlPtr h(::dlopen(library, RTLD_NOW | RTLD_LOCAL));
  if (!h) {
    const char* e = ::dlerror();
    r.error = std::string("dlopen ") + library + ": " + (e ? e : "failed");
    return r;
  }
  auto init = sym<nvmlReturn_t (*)()>(h.get(), "nvmlInit_v2");
  auto shutdown = sym<nvmlReturn_t (*)()>(h.get(), "nvmlShutdown");
  auto count = sym<nvmlReturn_t (*)(unsigned*)>(h.get(), "nvmlDeviceGetCount_v2");
  auto by_index = sym<nvmlReturn_t (*)(unsigned, nvmlDevice_t*)>(h.get(), "nvmlDeviceGetHandleByIndex_v2");
  auto pci = sym<nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t*)>(h.get(), "nvmlDeviceGetPciInfo_v3");
  auto name = sym<nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned)>(h.get(), "nvmlDeviceGetName");
  auto mem = sym<nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*)>(h.get(), "nvmlDeviceGetMemoryInfo");
  auto link_state = sym<nvmlReturn_t (*)(nvmlDevice_t, unsigned, int*)>(h.get(), "nvmlDeviceGetNvLinkState");
  auto link_pci =
      sym<nvmlReturn_t (*)(nvmlDevice_t, unsigned, nvmlPciInfo_t*)>(h.get(), "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  if (!init || !shutdown || !count || !by_index || !pci) {
    r.error = std::string(library) + ": missing NVML entry points";
    return r;
  }
  if (init() != kNvmlSuccess) {
    r.error = "nvmlInit_v2 failed";
    return r;
  }
  struct Shutdown {
    nvmlReturn_t (*fn)();
    ~Shutdown() { fn(); }
  } guard{shutdown};
  unsigned n = 0;
  if (count(&n) != kNvmlSuccess) {
    r.error = "nvmlDeviceGetCount_v2 failed";
    return r;
  }
  r.available = true;
  for (unsigned i = 0; i < n && i < 64; ++i) {
    nvmlDevice_t d = nullptr;
    if (by_index(i, &d) != kNvmlSuccess) continue;
    NvmlGpu g;
    nvmlPciInfo_t p{};
    if (pci(d, &p) == kNvmlSuccess) g.pci_bus_id = normalise_busid(p.busId);
    if (name) {
      char buf[96] = {0};
      if (name(d, buf, sizeof buf) == kNvmlSuccess) g.name = buf;
    }
    if (mem) {
      nvmlMemory_t m{};
      if (mem(d, &m) == kNvmlSuccess && m.total > 0) g.memory_gib = static_cast<double>(m.total) / (1024.0 * 1024 * 1024);
    }
    if (link_state) {
      for (unsigned l = 0; l < kMaxLinks; ++l) {
        int active = 0;
        if (link_state(d, l, &active) != kNvmlSuccess) continue;
        if (!active) continue;
        ++g.nvlinks_active;
        nvmlPciInfo_t rp{};
        if (link_pci && link_pci(d, l, &rp) == kNvmlSuccess) g.nvlink_peers.push_back(normalise_busid(rp.busId));
      }
    }
    r.gpus.push_back(std::move(g));
  }
  return r;
}

}  // namespace paratune::probe::detail
