#include "user_identity.h"

#include <grp.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace paratune::job {

namespace {

[[noreturn]] void fail(const std::string& what, const JobUser& u) {
  throw std::runtime_error("could not become uid " + std::to_string(u.uid) + " gid " + std::to_string(u.gid) +
                           ": " + what + ": " + std::strerror(errno));
}

// After the drop: the uid change reset the dumpable flag to fs.suid_dumpable (which a site may have set to 1), so
// it is cleared again — the user must not ptrace a copy of slurmstepd or read its memory — and the environment,
// slurmstepd's own (not the job's), is emptied: nothing of the daemon's reaches code that handles the user's input.
void seal() {
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  ::clearenv();
}

}  // namespace

void become_user_for_good(const JobUser& u) {
  if (!u.known) throw std::runtime_error("the job's uid/gid are unknown (Slurm did not return them)");
  if (::getuid() != 0 && ::geteuid() != 0) return seal();  // not privileged: nothing to drop
  // user_init: effective uid is the user's, real uid root. Regain root first: only root may set all three ids.
  if (::geteuid() != 0 && ::seteuid(0) != 0) fail("seteuid(0)", u);
  if (::setgroups(u.groups.size(), u.groups.empty() ? nullptr : u.groups.data()) != 0) fail("setgroups", u);
  if (::setresgid(u.gid, u.gid, u.gid) != 0) fail("setresgid", u);
  if (::setresuid(u.uid, u.uid, u.uid) != 0) fail("setresuid", u);
  if (u.uid != 0 && ::seteuid(0) == 0) {
    errno = EPERM;
    fail("root could be regained", u);
  }
  seal();
}

std::vector<gid_t> groups_of(const std::string& name, gid_t primary) {
  int n = 64;
  for (int attempt = 0; attempt < 6; ++attempt) {
    std::vector<gid_t> groups(static_cast<size_t>(n));
    int count = n;
    if (::getgrouplist(name.c_str(), primary, groups.data(), &count) >= 0) {
      groups.resize(static_cast<size_t>(count));
      return groups;
    }
    n = count > n ? count : n * 4;  // glibc sets count to the number needed
  }
  return {primary};
}

}  // namespace paratune::job
