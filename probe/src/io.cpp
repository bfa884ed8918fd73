// Small file and text helpers of the probe (internal.h): bounded whole-file reads, sysfs lines, PCI bus ids.
// Their own file so that every probe source (hwloc, NCCL topology, sysfs) uses them without depending on probe().
#include <cstdio>

#include "internal.h"

namespace paratune::probe {

namespace internal {

std::optional<std::string> read_file(const std::string& path, size_t max_bytes, bool* too_big) {
  if (too_big) *too_big = false;
  FilePtr f(std::fopen(path.c_str(), "rb"));
  if (!f) return std::nullopt;
  std::string out;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) {
    out.append(buf, n);
    if (out.size() > max_bytes) {
      if (too_big) *too_big = true;
      return std::nullopt;
    }
  }
  if (std::ferror(f.get())) return std::nullopt;
  return out;
}

std::optional<std::string> read_line(const std::string& path) {
  FilePtr f(std::fopen(path.c_str(), "rb"));
  if (!f) return std::nullopt;
  char buf[4096];
  if (!std::fgets(buf, sizeof buf, f.get())) return std::string();
  std::string s(buf);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string format_busid(unsigned domain, unsigned bus, unsigned dev, unsigned func) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", domain & 0xffffu, bus & 0xffu, dev & 0xffu, func & 0xfu);
  return buf;
}

}  // namespace internal

}  // namespace paratune::probe
