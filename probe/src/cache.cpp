// Per-node probe cache: probe once (slurmd start, as root), reuse in every step of the same boot.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "internal.h"

namespace paratune::probe {

namespace {

// 2: NICs carry name_reported and the topology its nccl_topo_file; a format-1 entry is probed again rather than
// read with those facts missing (a cache of the same boot survives a package upgrade).
constexpr int kCacheFormat = 2;

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

struct DirCloser {
  void operator()(DIR* d) const {
    if (d) ::closedir(d);
  }
};

// The devices that would change a live probe's answer: PCI GPUs/NICs/IB/accelerators and RDMA devices.
std::vector<std::string> device_list(const std::string& sysfs_root) {
  std::vector<std::string> out;
  std::unique_ptr<DIR, DirCloser> d(::opendir((sysfs_root + "/bus/pci/devices").c_str()));
  if (d)
    while (dirent* e = ::readdir(d.get())) {
      std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      auto cls = internal::read_line(sysfs_root + "/bus/pci/devices/" + n + "/class");
      if (!cls) continue;
      std::string c = internal::trim(*cls);  // "0x030200"
      if (c.rfind("0x03", 0) == 0 || c.rfind("0x02", 0) == 0 || c.rfind("0x0c06", 0) == 0 || c.rfind("0x12", 0) == 0)
        out.push_back(n + "=" + c);
    }
  std::unique_ptr<DIR, DirCloser> ib(::opendir((sysfs_root + "/class/infiniband").c_str()));
  if (ib)
    while (dirent* e = ::readdir(ib.get())) {
      std::string n = e->d_name;
      if (n != "." && n != "..") out.push_back("ib:" + n);
    }
  std::sort(out.begin(), out.end());
  return out;
}

// The whole file behind an open descriptor; nullopt on a read error or beyond max_bytes.
std::optional<std::string> read_fd(int fd, size_t max_bytes) {
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes) return std::nullopt;
  }
}

std::string file_key(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return path + ":missing";
  return path + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

std::string source_key_base(const ProbeOptions& o) {
  if (!o.topology_file.empty()) {
    if (o.topology_file.rfind("builtin:", 0) == 0) return o.topology_file;
    return "file:" + file_key(o.topology_file);
  }
  if (!o.fsroot.empty()) return "fsroot:" + o.fsroot;
  return "live:" + o.sysfs_root + (o.use_ibverbs ? ":verbs" : "") + (o.use_nvml ? ":nvml" : "");
}

std::string source_key(const ProbeOptions& o) {
  std::string k = source_key_base(o);
  if (!o.nccl_topo_file.empty()) k += ";nccl-topo:" + file_key(o.nccl_topo_file);
  return k;
}

// The cache is written only into a directory that its owner alone can change: in one that others may write to, a
// user could plant the temporary name or swap the entry between the rename and the next read (the rule slurmd's
// start applies to the same directory; a planted file would still be refused on read, but root must not write
// there at all). The checks are made on a descriptor of the directory, and the temporary file is created and
// renamed through that same descriptor, so what was checked is what is written into.
bool write_atomically(const std::string& path, const std::string& content, uid_t owner, std::string& why) {
  const auto slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  Fd d;
  d.fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st {};
  if (d.fd < 0 || ::fstat(d.fd, &st) != 0) {
    why = "cache directory " + dir + ": " + std::strerror(errno);
    return false;
  }
  if (st.st_uid != owner || (st.st_mode & (S_IWGRP | S_IWOTH))) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    why = "cache directory " + dir + " (owner uid " + std::to_string(st.st_uid) + ", mode " + mode +
          ") must be owned by uid " + std::to_string(owner) + " and not group/world-writable; cache not written";
    return false;
  }
  // O_EXCL | O_NOFOLLOW in a directory no one else can write to: a name of our own, never someone's file.
  Fd f;
  std::string tmp;
  for (int attempt = 0; attempt < 100 && f.fd < 0; ++attempt) {
    tmp = name + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(attempt);
    f.fd = ::openat(d.fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (f.fd < 0 && errno != EEXIST) break;
  }
  if (f.fd < 0) {
    why = std::string("cannot create temp file: ") + std::strerror(errno);
    return false;
  }
  bool ok = ::fchmod(f.fd, 0644) == 0;
  size_t off = 0;
  while (ok && off < content.size()) {
    ssize_t n = ::write(f.fd, content.data() + off, content.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ok = false;
    else off += static_cast<size_t>(n);
  }
  ok = ok && ::fsync(f.fd) == 0;
  ok = ::close(f.fd) == 0 && ok;
  f.fd = -1;
  if (!ok || ::renameat(d.fd, tmp.c_str(), d.fd, name.c_str()) != 0) {
    why = std::string("cannot write cache: ") + std::strerror(errno);
    ::unlinkat(d.fd, tmp.c_str(), 0);
    return false;
  }
  return true;
}

}  // namespace

Topology probe_cached(const ProbeOptions& options, const CacheOptions& cache, CacheResult* result) {
  CacheResult local;
  CacheResult& r = result ? *result : local;
  r = {};
  const std::string boot_id = internal::trim(internal::read_line(cache.boot_id_file).value_or(""));
  const std::string src = source_key(options);
  const std::vector<std::string> devices =
      (options.topology_file.empty() && options.fsroot.empty()) ? device_list(options.sysfs_root)
                                                                 : std::vector<std::string>{};

  if (cache.path.empty()) {
    r.reason = "no cache path";
  } else {
    // The checks and the read on one descriptor opened without following a symlink: no window in which the
    // checked file can be swapped for another (O_NONBLOCK: a FIFO planted there cannot block the open).
    Fd f;
    f.fd = ::open(cache.path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    const int open_errno = errno;
    struct stat st {};
    if (f.fd < 0 && open_errno == ENOENT) {
      r.reason = "missing";
    } else if (f.fd < 0 && open_errno == ELOOP) {
      r.reason = "not a regular file";
    } else if (f.fd < 0 || ::fstat(f.fd, &st) != 0) {
      r.reason = "unreadable";
    } else if (!S_ISREG(st.st_mode)) {
      r.reason = "not a regular file";
    } else if (st.st_uid != cache.owner_uid) {
      r.reason = "not owned by uid " + std::to_string(cache.owner_uid);
    } else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
      r.reason = "group/world-writable";
    } else if (boot_id.empty()) {
      r.reason = "no boot id";
    } else if (auto text = read_fd(f.fd, 16u << 20); !text) {
      r.reason = "unreadable";
    } else {
      try {
        auto j = nlohmann::json::parse(*text);
        if (!j.is_object() || !j.contains("paratune_probe_cache") || j["paratune_probe_cache"] != kCacheFormat)
          r.reason = "other cache format";
        else if (j.value("boot_id", "") != boot_id) r.reason = "other boot";
        else if (j.value("source", "") != src) r.reason = "other source";
        else if (j.value("devices", std::vector<std::string>{}) != devices) r.reason = "device list changed";
        else {
          Topology t = from_json(j.at("topology").dump(), cache.path);
          detail::apply_allocation(t, options.allocated_gpus);
          t.fingerprint = compute_fingerprint(t);
          r.hit = true;
          r.reason = "same boot, same devices";
          return t;
        }
      } catch (const std::exception& e) {
        r.reason = std::string("corrupt: ") + e.what();
      }
    }
  }

  ProbeOptions all = options;
  all.allocated_gpus.clear();
  Topology t = probe(all);
  if (cache.write && !cache.path.empty() && !boot_id.empty() && ::geteuid() == cache.owner_uid) {
    nlohmann::ordered_json j;
    j["paratune_probe_cache"] = kCacheFormat;
    j["boot_id"] = boot_id;
    j["source"] = src;
    j["devices"] = devices;
    j["topology"] = nlohmann::ordered_json::parse(to_json(t, -1));
    std::string why;
    const std::string text = j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
    if (!write_atomically(cache.path, text, cache.owner_uid, why)) r.reason += "; " + why;
  }
  detail::apply_allocation(t, options.allocated_gpus);
  t.fingerprint = compute_fingerprint(t);
  return t;
}

}  // namespace paratune::probe
