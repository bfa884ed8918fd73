#include "tuning_index.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <string_view>

#include <nlohmann/json.hpp>

#include "paratune/common/safe_file.h"

namespace paratune::job {

using common::UniqueFd;
using common::ensure_directory;
using common::write_file_atomic;

namespace {

constexpr off_t kTail = off_t(4) << 20;  // other jobs' lines may follow ours before we look: a few MiB at most

std::string shard_of(const std::string& job_id) {
  return job_id.size() >= 2 ? job_id.substr(job_id.size() - 2) : job_id;
}

// The offset of the last copy of `needle` ('\n'-terminated) that starts a line in the file's last kTail bytes.
off_t find_line(int fd, const std::string& needle, dev_t* dev, ino_t* ino) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) throw std::runtime_error("not a regular file");
  *dev = st.st_dev;
  *ino = st.st_ino;
  const off_t start = std::max<off_t>(0, st.st_size - kTail);
  std::string tail(size_t(st.st_size - start), '\0');
  size_t got = 0;
  while (got < tail.size()) {
    const ssize_t k = ::pread(fd, tail.data() + got, tail.size() - got, start + off_t(got));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    got += size_t(k);
  }
  tail.resize(got);
  for (size_t at = tail.rfind(needle); at != std::string::npos; at = at ? tail.rfind(needle, at - 1) : std::string::npos)
    if ((at == 0 && start == 0) || (at > 0 && tail[at - 1] == '\n')) return start + off_t(at);
  throw std::runtime_error("the line is not among the log's last " + std::to_string(kTail >> 20) + " MiB");
}

}  // namespace

std::string index_marker_path(const std::string& name, const std::string& job_id) {
  return name + ".index/" + shard_of(job_id) + "/" + job_id;
}

std::string index_marker_text(const std::string& name, unsigned long long dev, unsigned long long inode,
                              unsigned long long offset, unsigned long long length) {
  return nlohmann::json{{"file", name}, {"dev", dev}, {"inode", inode}, {"offset", offset}, {"length", length}}.dump() +
         "\n";
}

std::string index_tuning_line(const std::string& dir_path, int dirfd, const std::string& name,
                              const std::string& job_id, const std::string& line, mode_t mode, long group) noexcept {
  try {
    if (job_id.empty() || job_id.find_first_not_of("0123456789_") != std::string::npos)
      return "job id '" + job_id + "' is not a Slurm job id; not indexed";
    UniqueFd log(::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    if (!log) return name + ": cannot open to index the job's line";
    dev_t dev = 0;
    ino_t ino = 0;
    const std::string needle = line.empty() || line.back() != '\n' ? line + "\n" : line;
    const off_t offset = find_line(log.get(), needle, &dev, &ino);
    const std::string marker = index_marker_text(name, dev, ino, static_cast<unsigned long long>(offset),
                                                 needle.size() - 1);
    const std::string index_dir = dir_path + "/" + name + ".index";
    ensure_directory(index_dir, 0755, 0);
    UniqueFd shard = ensure_directory(index_dir + "/" + shard_of(job_id), 0755, 0);
    write_file_atomic(shard.get(), job_id, marker, mode, true);
    if (group >= 0 && ::fchownat(shard.get(), job_id.c_str(), static_cast<uid_t>(-1), static_cast<gid_t>(group),
                                 AT_SYMLINK_NOFOLLOW) != 0)
      return index_marker_path(name, job_id) + ": chgrp failed; the marker keeps root's group";
    return "";
  } catch (const std::exception& e) {
    return name + ": " + e.what();
  }
}

}  // namespace paratune::job
