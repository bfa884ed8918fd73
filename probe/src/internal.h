// Internal to paratune_probe.
#pragma once

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "paratune/probe/detail.h"
#include "paratune/probe/probe.h"

namespace paratune::probe::internal {

// What an hwloc load reads from.
struct HwlocSource {
  enum Kind { XmlText, Fsroot, Live } kind = Live;
  std::string text_or_dir;  // XML text or fsroot directory
  std::string origin;       // file name for messages
  // XmlText only: compiled-in XML (builtin:NAME) is trusted; any other XML is first loaded in a forked child
  // (hwloc 2.9's importer crashes on some malformed files; see check_xml_in_child in hwloc_probe.cpp).
  bool trusted = false;
};

// Extra facts a live / fsroot probe adds to hwloc's view.
struct Extras {
  std::optional<std::vector<Nic>> sysfs_nics;  // from <sysfs>/class/infiniband
  std::optional<detail::NvmlResult> nvml;
  std::optional<detail::VerbsResult> verbs;
  std::string dmi_root;                        // <root>/sys/class/dmi/id for cloud detection ("" = skip)
  std::string proc_root;                       // <root>/proc for /proc/driver/nvidia ("" = skip)
};

Topology load_hwloc(const HwlocSource& src, const Extras& extras);

// After GPUs/NICs and the pairwise classes are known: roles, nearest NICs, nvlink inference, gpu_paths.
// nic_paths[g][n] = PCIe path class between GPU g and NIC n.
void finish_topology(Topology& t, const std::vector<std::vector<std::string>>& nic_paths);

// Small file helpers (RAII FILE*).
struct FileCloser {
  void operator()(std::FILE* f) const {
    if (f) std::fclose(f);
  }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

// Read a whole file; nullopt when it cannot be opened. Refuses files above max_bytes (returns nullopt and
// sets *too_big).
std::optional<std::string> read_file(const std::string& path, size_t max_bytes = 64u << 20, bool* too_big = nullptr);
// First line of a small sysfs file without the trailing newline; nullopt if unreadable.
std::optional<std::string> read_line(const std::string& path);
std::string trim(const std::string& s);

std::string format_busid(unsigned domain, unsigned bus, unsigned dev, unsigned func);

}  // namespace paratune::probe::internal
