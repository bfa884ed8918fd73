// sysfs reader for /sys/class/infiniband (+ /sys/class/net/<dev>/speed for RoCE). World-readable, needs no
// device access. Layout: linux Documentation/ABI/stable/sysfs-class-infiniband.
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>

#include "internal.h"

namespace paratune::probe::detail {

namespace {

struct DirCloser {
  void operator()(DIR* d) const {
    if (d) ::closedir(d);
  }
};
using DirPtr = std::unique_ptr<DIR, DirCloser>;

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> out;
  DirPtr d(::opendir(path.c_str()));
  if (!d) return out;
  while (dirent* e = ::readdir(d.get())) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string basename_of_link(const std::string& path) {
  char buf[4096];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string s(buf, static_cast<size_t>(n));
  while (!s.empty() && s.back() == '/') s.pop_back();
  auto p = s.rfind('/');
  return p == std::string::npos ? s : s.substr(p + 1);
}

bool looks_like_busid(const std::string& s) {
  // dddd:bb:dd.f
  if (s.size() != 12) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (i == 4 || i == 7) {
      if (c != ':') return false;
    } else if (i == 10) {
      if (c != '.') return false;
    } else if (!std::isxdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return true;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::optional<double> parse_ib_rate(const std::string& text) {
  // "%d%s Gb/sec (%dX%s)", e.g. "100 Gb/sec (4X EDR)", "2.5 Gb/sec (1X SDR)"
  const std::string s = internal::trim(text);
  if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s[0])))) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (!end || end == s.c_str()) return std::nullopt;
  std::string rest = internal::trim(end);
  if (rest.rfind("Gb/sec", 0) != 0) return std::nullopt;
  if (!(v > 0) || v > 100000) return std::nullopt;
  return v;
}

std::optional<std::string> parse_ib_state(const std::string& text) {
  // "4: ACTIVE", "5: LinkUp"
  const std::string s = internal::trim(text);
  auto colon = s.find(':');
  if (colon == std::string::npos || colon == 0) return std::nullopt;
  for (size_t i = 0; i < colon; ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return std::nullopt;
  std::string name = internal::trim(s.substr(colon + 1));
  if (name.empty() || name.size() > 32) return std::nullopt;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != ' ') return std::nullopt;
  return lower(name);
}

std::vector<Nic> read_sysfs_nics(const std::string& sysfs_root) {
  std::vector<Nic> out;
  const std::string base = sysfs_root + "/class/infiniband";
  for (const auto& dev : list_dir(base)) {
    const std::string d = base + "/" + dev;
    std::string busid = basename_of_link(d + "/device");
    if (!looks_like_busid(busid)) busid.clear();
    const auto netdevs = list_dir(d + "/device/net");
    for (const auto& port_s : list_dir(d + "/ports")) {
      char* end = nullptr;
      long port = std::strtol(port_s.c_str(), &end, 10);
      if (!end || *end || port <= 0 || port > 255) continue;
      const std::string p = d + "/ports/" + port_s;
      Nic n;
      n.name = dev;
      n.port = static_cast<int>(port);
      n.pci_bus_id = busid;
      if (auto v = internal::read_line(p + "/rate")) n.rate_gbps = parse_ib_rate(*v);
      if (auto v = internal::read_line(p + "/state")) n.state = parse_ib_state(*v);
      if (auto v = internal::read_line(p + "/phys_state")) n.phys_state = parse_ib_state(*v);
      if (auto v = internal::read_line(p + "/link_layer")) {
        auto ll = lower(internal::trim(*v));
        if (ll == "infiniband" || ll == "ethernet") n.link_layer = ll;
      }
      // netdev of this port: device/net/<if>/dev_port is 0-based (port-1); single netdev: that one.
      for (const auto& nd : netdevs) {
        auto dp = internal::read_line(d + "/device/net/" + nd + "/dev_port");
        if (dp && std::atoi(internal::trim(*dp).c_str()) == port - 1) {
          n.netdev = nd;
          break;
        }
      }
      if (n.netdev.empty() && netdevs.size() == 1) n.netdev = netdevs.front();
      if (n.link_layer == std::optional<std::string>("ethernet")) {
        // RoCE: the IB rate is derived (older kernels cap it at 100); the netdev speed (Mb/s) is the truth.
        if (!n.netdev.empty())
          if (auto sp = internal::read_line(sysfs_root + "/class/net/" + n.netdev + "/speed")) {
            long mbps = std::atol(internal::trim(*sp).c_str());
            if (mbps > 0) n.rate_gbps = static_cast<double>(mbps) / 1000.0;
          }
        // RoCEv2 GID: the first non-zero GID whose type is "RoCE v2", preferring IPv4-mapped ones (as NCCL).
        std::optional<int> any_v2, v4_v2;
        for (const auto& idx_s : list_dir(p + "/gid_attrs/types")) {
          char* e2 = nullptr;
          long idx = std::strtol(idx_s.c_str(), &e2, 10);
          if (!e2 || *e2 || idx < 0 || idx > 4096) continue;
          auto type = internal::read_line(p + "/gid_attrs/types/" + idx_s);
          if (!type || lower(internal::trim(*type)) != "roce v2") continue;
          auto gid = internal::read_line(p + "/gids/" + idx_s);
          if (!gid) continue;
          std::string g = internal::trim(*gid);
          if (g.empty() || g == "0000:0000:0000:0000:0000:0000:0000:0000") continue;
          if (lower(g).rfind("fe80:", 0) == 0) continue;  // link-local: not routable (NCCL's validGid refuses it)
          if (!any_v2 || idx < *any_v2) any_v2 = static_cast<int>(idx);
          if (g.rfind("0000:0000:0000:0000:0000:ffff:", 0) == 0 && (!v4_v2 || idx < *v4_v2))
            v4_v2 = static_cast<int>(idx);
        }
        n.gid_index = v4_v2 ? v4_v2 : any_v2;
      }
      out.push_back(std::move(n));
    }
  }
  return out;
}

}  // namespace paratune::probe::detail
