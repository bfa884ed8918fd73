// Reading the policy file: bounded size, and (for the plugin) the ownership/permission check on the very
// descriptor that is then read, so that nothing can be swapped in between.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "internal.h"
#include "paratune/policies/policy.h"

namespace paratune::policies {

namespace {

constexpr const char* kWhy = "refused (a user-writable policy is a privilege escalation path)";

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

[[noreturn]] void fail(const std::string& path, const std::string& what, PolicyError::Kind kind) {
  throw PolicyError(path + ": " + what, kind);
}

int open_policy(const std::string& path) {
  // O_NONBLOCK: a FIFO planted at the path must not hang slurmstepd (it is refused as not a regular file).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd >= 0) return fd;
  const int err = errno;
  if (err == ELOOP) fail(path, std::string("is a symbolic link: ") + kWhy, PolicyError::Kind::Insecure);
  if (err == ENOENT) fail(path, "cannot open: " + std::string(std::strerror(err)), PolicyError::Kind::Missing);
  fail(path, "cannot open: " + std::string(std::strerror(err)), PolicyError::Kind::Unreadable);
}

void check_fd(int fd, const std::string& path, uid_t expected_owner) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    fail(path, "cannot stat: " + std::string(std::strerror(errno)), PolicyError::Kind::Unreadable);
  if (!S_ISREG(st.st_mode)) fail(path, std::string("not a regular file: ") + kWhy, PolicyError::Kind::Insecure);
  if (st.st_uid != expected_owner)
    fail(path,
         "owned by uid " + std::to_string(st.st_uid) + ", not uid " + std::to_string(expected_owner) + ": " + kWhy,
         PolicyError::Kind::Insecure);
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    fail(path, "writable by group or others (mode " + detail::fmt_octal_mode(st.st_mode & 07777) + "): " + kWhy,
         PolicyError::Kind::Insecure);
}

std::string read_fd(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    fail(path, "cannot stat: " + std::string(std::strerror(errno)), PolicyError::Kind::Unreadable);
  if (!S_ISREG(st.st_mode)) fail(path, "not a regular file", PolicyError::Kind::Unreadable);
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(path, "cannot read: " + std::string(std::strerror(errno)), PolicyError::Kind::Unreadable);
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxPolicyBytes)
      fail(path, "larger than " + std::to_string(kMaxPolicyBytes) + " bytes: refused", PolicyError::Kind::Unreadable);
  }
  return text;
}

}  // namespace

void check_policy_file_security(const std::string& path, uid_t expected_owner) {
  Fd fd(open_policy(path));
  check_fd(fd.get(), path, expected_owner);
}

void check_policy_file_security(const std::string& path) { check_policy_file_security(path, 0); }

PolicyFile load_policy(const std::string& path) {
  Fd fd(open_policy(path));
  return parse_policy(read_fd(fd.get(), path), path);
}

PolicyFile load_policy_secure(const std::string& path, uid_t expected_owner) {
  Fd fd(open_policy(path));
  check_fd(fd.get(), path, expected_owner);
  return parse_policy(read_fd(fd.get(), path), path);
}

}  // namespace paratune::policies
