#include "paratune/common/safe_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <system_error>

namespace paratune::common {

namespace {

[[noreturn]] void fail(const std::string& what) { throw std::system_error(errno, std::generic_category(), what); }

// Read what is left of an open regular file, up to `limit` bytes (defined below).
std::string read_fd_bounded(int fd, const std::string& path, size_t limit, bool* truncated);

// All of an open file, or an error when it holds more than `limit` bytes: an input cut short would parse as a
// different, valid one. The message starts with the path unless the caller names the file itself.
std::string read_whole_or_refuse(int fd, const std::string& path, size_t limit, bool path_in_message = true) {
  bool truncated = false;
  std::string out = read_fd_bounded(fd, path, limit, &truncated);
  if (truncated)
    throw std::runtime_error((path_in_message ? path + ": " : "") + "larger than " + std::to_string(limit) + " bytes");
  return out;
}

// A path opened for reading that is a regular file, not a symlink to one: O_NONBLOCK so that a FIFO planted under
// the name cannot block the open, O_NOCTTY so that a terminal is never made the controlling one. `st` gets its
// status for the caller's own checks (owner, mode, links).
UniqueFd open_regular_no_symlink(int dirfd, const std::string& path, struct stat* st) {
  UniqueFd fd(::openat(dirfd, path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!fd) return fd;
  if (::fstat(fd.get(), st) != 0) fail("stat " + path);
  if (!S_ISREG(st->st_mode)) throw std::runtime_error(path + ": not a regular file");
  return fd;
}

// Permission bits as an admin types them: "0755", "1777".
std::string octal_mode(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

// A directory root writes into must not let anyone else add, remove or rename entries in it: a user could plant
// a symlink or hard link where root is about to open a file. The sticky bit does not help: it only stops users
// from removing others' entries, not from creating their own under the name root will use.
void require_not_writable_by_others(const std::string& path, mode_t mode) {
  if (mode & (S_IWGRP | S_IWOTH))
    throw std::runtime_error(path + ": mode " + octal_mode(mode) +
                             " is group/world-writable; root-side directories must not be");
}

// A file root appends to (the tuning log) must be the one root created: a second name for it means a user may
// have linked it in (a hard link to /etc/shadow in a directory they can write to), and a file owned by someone
// else is not root's log. Checked on the open descriptor, before anything is written or chmod'ed.
void require_own_single_link(const std::string& name, const struct stat& st) {
  if (st.st_nlink != 1)
    throw std::runtime_error(name + ": has " + std::to_string(st.st_nlink) +
                             " links (a hard link planted by someone?); refusing to append to it");
  if (::geteuid() == 0 && st.st_uid != 0)
    throw std::runtime_error(name + ": owned by uid " + std::to_string(st.st_uid) +
                             ", not root; refusing to append to it");
}

}  // namespace

void write_all(int fd, const std::string& data, const std::string& what) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(what);
    }
    done += static_cast<size_t>(n);
  }
}

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

UniqueFd ensure_directory(const std::string& path, mode_t mode, uid_t owner) {
  const bool created = ::mkdir(path.c_str(), mode) == 0;
  if (!created && errno != EEXIST) fail("mkdir " + path);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) fail("open directory " + path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail("stat " + path);
  if (st.st_uid != owner)
    throw std::runtime_error(path + ": owned by uid " + std::to_string(st.st_uid) + ", expected " +
                             std::to_string(owner) + "; refusing to use it");
  if (owner != 0) return fd;  // the job user's own directory: their umask and their modes are their business
  // Root's new directory gets exactly `mode`, whatever slurmd's umask or an inherited setgid bit made of it; an
  // existing one keeps the admin's mode, which is checked instead.
  if (created && (st.st_mode & 07777) != mode) {
    if (::fchmod(fd.get(), mode) != 0) fail("chmod " + path);
    st.st_mode = (st.st_mode & ~static_cast<mode_t>(07777)) | mode;
  }
  require_not_writable_by_others(path, st.st_mode);
  return fd;
}

void write_file_atomic(int dirfd, const std::string& name, const std::string& content, mode_t mode, bool exact_mode) {
  const std::string tmp = "." + name + ".tmp." + std::to_string(::getpid());
  UniqueFd fd(::openat(dirfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd) fail("create " + tmp);
  try {
    if (exact_mode && ::fchmod(fd.get(), mode) != 0) fail("chmod " + tmp);
    write_all(fd.get(), content, "write " + tmp);
    if (::fsync(fd.get()) != 0) fail("fsync " + tmp);
  } catch (...) {
    ::unlinkat(dirfd, tmp.c_str(), 0);
    throw;
  }
  if (::renameat(dirfd, tmp.c_str(), dirfd, name.c_str()) != 0) {
    int saved = errno;
    ::unlinkat(dirfd, tmp.c_str(), 0);
    errno = saved;
    fail("rename " + tmp + " to " + name);
  }
}

std::string append_line(int dirfd, const std::string& name, const std::string& line, mode_t mode, long group) {
  UniqueFd fd(::openat(dirfd, name.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd) fail("open " + name + " for appending");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail("stat " + name);
  if (!S_ISREG(st.st_mode)) throw std::runtime_error(name + ": not a regular file");
  require_own_single_link(name, st);
  if (st.st_uid == ::geteuid()) {
    if ((st.st_mode & 07777) != mode && ::fchmod(fd.get(), mode) != 0) fail("chmod " + name);
    if (group >= 0 && st.st_gid != static_cast<gid_t>(group) && ::fchown(fd.get(), -1, static_cast<gid_t>(group)) != 0)
      fail("chgrp " + name);
  }
  // Concurrent jobs append to the same log: lock, but never wait without bound inside slurmstepd. The lock is a
  // separate file that only its owner can open (mode 0600): a log the policy makes readable (0644) could otherwise
  // be flock'ed by any user, stalling every job's end by the whole wait.
  const std::string lock_name = "." + name + ".lock";
  UniqueFd lock = lock_in_directory(dirfd, lock_name, 200);
  const bool locked = bool(lock);
  const int lock_errno = errno;  // EWOULDBLOCK: held elsewhere for the whole wait; else flock refused (NFS nolock)
  const std::string unlocked =
      locked ? std::string()
             : "the lock " + lock_name + " was " +
                   (lock_errno == EWOULDBLOCK ? std::string("not had within 2 s")
                                              : "refused (" + std::string(std::strerror(lock_errno)) + ")") +
                   "; the line was written without it (O_APPEND, one write)";
  // O_APPEND + one write keeps lines whole even if the lock could not be had in 2 s.
  std::string data = line;
  if (data.empty() || data.back() != '\n') data.push_back('\n');
  struct stat before {};
  const bool know_size = locked && ::fstat(fd.get(), &before) == 0;
  ssize_t n;
  do {
    n = ::write(fd.get(), data.data(), data.size());
  } while (n < 0 && errno == EINTR);
  if (n >= 0 && static_cast<size_t>(n) != data.size()) {
    // A full disk took part of the line: cut it off again, so that every line of the log stays whole JSON.
    const int saved = ENOSPC;
    if (know_size && ::ftruncate(fd.get(), before.st_size) == 0) {
      errno = saved;
      fail("append to " + name + " (partial line removed)");
    }
    throw std::runtime_error(name + ": short write (disk full?)");
  }
  if (n < 0) fail("append to " + name);
  return unlocked;
}  // closing `lock` releases the flock

UniqueFd lock_in_directory(int dirfd, const std::string& lock_name, int attempts) {
  // Read-write, not read-only: an NFS client emulates flock() as a whole-file fcntl() lock, and an exclusive one
  // needs a descriptor open for writing (flock(2), NOTES); read-only, LOCK_EX fails there with EBADF.
  UniqueFd lock(::openat(dirfd, lock_name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  struct stat lock_st {};
  if (!lock || ::fstat(lock.get(), &lock_st) != 0 || !S_ISREG(lock_st.st_mode)) fail("open the lock " + lock_name);
  require_own_single_link(lock_name, lock_st);
  if ((lock_st.st_mode & 077) != 0 && ::fchmod(lock.get(), 0600) != 0) fail("chmod " + lock_name);
  for (int attempt = 0; attempt < attempts; ++attempt) {
    if (::flock(lock.get(), LOCK_EX | LOCK_NB) == 0) return lock;
    if (errno != EWOULDBLOCK && errno != EINTR) break;
    struct timespec ts{0, 10 * 1000 * 1000};
    ::nanosleep(&ts, nullptr);
  }
  return UniqueFd();
}

std::string read_owned_file_at(int dirfd, const std::string& name, size_t limit, bool* missing) {
  *missing = false;
  struct stat st {};
  UniqueFd fd = open_regular_no_symlink(dirfd, name, &st);
  if (!fd) {
    if (errno == ENOENT) {
      *missing = true;
      return {};
    }
    fail("open " + name);
  }
  require_own_single_link(name, st);
  if (st.st_uid != ::geteuid()) throw std::runtime_error(name + ": not owned by this process's user; refused");
  return read_whole_or_refuse(fd.get(), name, limit);
}

std::string read_bounded(const std::string& path, size_t limit, bool* truncated) {
  struct stat st {};
  UniqueFd fd = open_regular_no_symlink(AT_FDCWD, path, &st);
  if (!fd) fail("open " + path);
  return read_fd_bounded(fd.get(), path, limit, truncated);
}

std::string read_input_file(const std::string& path, size_t limit) {
  // Symlinks followed (a user's own file named on a command line), so not open_regular_no_symlink.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!fd) throw std::runtime_error(std::string("cannot open (") + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw std::runtime_error(std::string("cannot stat (") + std::strerror(errno) + ")");
  if (S_ISDIR(st.st_mode)) throw std::runtime_error("a directory, not a file");
  if (!S_ISREG(st.st_mode)) throw std::runtime_error("not a regular file (a FIFO, socket or device is not read)");
  return read_whole_or_refuse(fd.get(), path, limit, false);
}

std::string read_trusted_file(const std::string& path, size_t limit, uid_t owner) {
  struct stat st {};
  UniqueFd fd = open_regular_no_symlink(AT_FDCWD, path, &st);
  if (!fd) fail("open " + path);
  if (st.st_uid != owner)
    throw std::runtime_error(path + ": owned by uid " + std::to_string(st.st_uid) + ", not " + std::to_string(owner) +
                             ": refused");
  if (st.st_mode & (S_IWGRP | S_IWOTH)) throw std::runtime_error(path + ": writable by group or others: refused");
  return read_whole_or_refuse(fd.get(), path, limit);
}

namespace {

std::string read_fd_bounded(int fd, const std::string& path, size_t limit, bool* truncated) {
  std::string out;
  out.resize(limit + 1);
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("read " + path);
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (truncated) *truncated = got > limit;
  out.resize(std::min(got, limit));
  return out;
}

}  // namespace

}  // namespace paratune::common
