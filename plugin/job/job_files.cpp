#include "job_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <memory>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "node_checks.h"

namespace paratune::job {

using common::UniqueFd;
using common::write_file_atomic;
using common::read_owned_file_at;

namespace {

struct DirCloser {
  void operator()(DIR* d) const { ::closedir(d); }
};
using Dir = std::unique_ptr<DIR, DirCloser>;

// A listing of `dirfd` that does not move the caller's descriptor (fdopendir takes over a duplicate).
Dir list(int dirfd) {
  const int dup = ::fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return nullptr;
  Dir d(::fdopendir(dup));
  if (!d) {
    ::close(dup);
    return nullptr;
  }
  ::rewinddir(d.get());  // the duplicate shares the offset an earlier listing moved
  return d;
}

bool is_dot(const char* n) { return n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0')); }

// Removes every regular file (and symlink: never followed) of `dirfd`; returns how many entries are left.
size_t empty_directory(int dirfd, const std::string& keep = "") {
  std::vector<std::string> names;
  Dir d = list(dirfd);
  while (d && names.size() < 100000) {
    const dirent* e = ::readdir(d.get());
    if (!e) break;
    if (!is_dot(e->d_name)) names.emplace_back(e->d_name);
  }
  size_t left = 0;
  for (const auto& n : names) {
    if (n == keep) {
      ++left;
      continue;
    }
    struct stat st {};
    if (::fstatat(dirfd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode) || ::unlinkat(dirfd, n.c_str(), 0) != 0) ++left;
  }
  return left;
}

// The newest change of a job directory: the directory itself (entries added or removed) and its log (appends).
std::time_t newest_change(int dirfd, const struct stat& dir_st) {
  std::time_t t = dir_st.st_mtime;
  struct stat st {};
  if (::fstatat(dirfd, kJobLogName, &st, AT_SYMLINK_NOFOLLOW) == 0) t = std::max(t, st.st_mtime);
  return t;
}

}  // namespace

std::string job_dir_name(const std::string& job_id) {
  std::string out;
  for (char c : job_id.substr(0, 64))
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-') ? c : '_';
  return out.empty() ? "_" : out;
}

UniqueFd open_job_dir(int jobs_dirfd, const std::string& job_id, bool create) {
  const std::string name = job_dir_name(job_id);
  const bool created = create && ::mkdirat(jobs_dirfd, name.c_str(), 0750) == 0;
  if (create && !created && errno != EEXIST) throw std::system_error(errno, std::generic_category(), "mkdir jobs/" + name);
  UniqueFd fd(::openat(jobs_dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    if (!create && errno == ENOENT) return fd;
    throw std::system_error(errno, std::generic_category(), "open jobs/" + name);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw std::system_error(errno, std::generic_category(), "stat jobs/" + name);
  if (created && (st.st_mode & 07777) != 0750 && ::fchmod(fd.get(), 0750) == 0) st.st_mode = (st.st_mode & ~07777u) | 0750;
  if (st.st_uid != ::geteuid())
    throw std::runtime_error("jobs/" + name + ": owned by uid " + std::to_string(st.st_uid) + "; refusing to use it");
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    throw std::runtime_error("jobs/" + name + ": group/world-writable; refusing to use it");
  return fd;
}

UniqueFd open_job_dir_in(const std::string& log_dir, const std::string& job_id) {
  common::ensure_directory(log_dir, 0755, 0);
  UniqueFd jobs = common::ensure_directory(log_dir + "/jobs", 0750, 0);
  return open_job_dir(jobs.get(), job_id);
}

void record_partition(int job_dirfd, const std::string& partition) {
  write_file_atomic(job_dirfd, kPartitionRecordName, partition + "\n", 0600);
}

std::optional<std::string> recorded_partition(int job_dirfd) {
  try {
    bool missing = false;
    std::string text = read_owned_file_at(job_dirfd, kPartitionRecordName, 256, &missing);
    if (missing) return std::nullopt;
    if (!text.empty() && text.back() == '\n') text.pop_back();
    if (text.empty() || text.find('\n') != std::string::npos) return std::nullopt;
    return text;
  } catch (const std::exception&) {
    return std::nullopt;  // not root's, a link, too large: not a record
  }
}

void CappedLog::write(const std::string& text) {
  struct stat st {};
  if (fd_ < 0 || ::fstat(fd_, &st) != 0) return;
  const size_t size = static_cast<size_t>(st.st_size);
  if (size >= cap_) return;
  ssize_t ignored;
  if (size + text.size() >= cap_) {
    const std::string last = "paratune: this job's log reached its cap of " + std::to_string(cap_) +
                             " bytes; further messages are in the Slurm log only\n";
    ignored = ::write(fd_, last.data(), last.size());
  } else {
    ignored = ::write(fd_, text.data(), text.size());  // best effort: logging never fails a job
  }
  (void)ignored;
}

JobEnd finish_job_dir(int jobs_dirfd, const std::string& job_id) {
  JobEnd out;
  UniqueFd dir = open_job_dir(jobs_dirfd, job_id, false);
  if (!dir) return out;
  const auto checks = collect_node_checks(dir.get());
  out.node_checks = checks.value("checked", 0);
  out.mismatches = checks.contains("mismatch") ? static_cast<int>(checks["mismatch"].size()) : 0;
  if (out.node_checks > 0) {
    out.summary = "at the job's end: " + std::to_string(out.node_checks) + " inherited-plan check(s) left here, " +
                  std::to_string(out.mismatches) + " with another topology fingerprint";
    if (!checks["plan_unreadable"].empty()) out.summary += ", plan file not readable on " + checks["plan_unreadable"].dump();
  }
  const size_t left = empty_directory(dir.get(), kJobLogName);
  struct stat st {};
  const bool has_log = ::fstatat(dir.get(), kJobLogName, &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (left == 0 && !has_log) out.directory_removed = ::unlinkat(jobs_dirfd, job_dir_name(job_id).c_str(), AT_REMOVEDIR) == 0;
  return out;
}

JobsGc collect_old_jobs(int jobs_dirfd, std::time_t now, long max_age_s, size_t max_entries) {
  JobsGc out;
  std::vector<std::string> names;
  Dir d = list(jobs_dirfd);
  while (d) {
    const dirent* e = ::readdir(d.get());
    if (!e) break;
    if (is_dot(e->d_name)) continue;
    if (names.size() >= max_entries) {
      out.stopped_early = true;
      break;
    }
    names.emplace_back(e->d_name);
  }
  d.reset();
  out.looked_at = names.size();
  for (const auto& n : names) {
    struct stat st {};
    if (::fstatat(jobs_dirfd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      UniqueFd sub(::openat(jobs_dirfd, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub || now - newest_change(sub.get(), st) <= max_age_s) {
        ++out.kept;
        continue;
      }
      const bool gone = empty_directory(sub.get()) == 0 && ::unlinkat(jobs_dirfd, n.c_str(), AT_REMOVEDIR) == 0;
      ++(gone ? out.removed : out.kept);
    } else if (now - st.st_mtime > max_age_s && !n.empty() && n[0] != '.' &&
               ::unlinkat(jobs_dirfd, n.c_str(), 0) == 0) {
      ++out.removed;  // a flat file of an earlier release (<jobid>.log, .line, .node-*)
    } else {
      ++out.kept;
    }
  }
  return out;
}

}  // namespace paratune::job
