#include <sys/wait.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <functional>

#include <gtest/gtest.h>

#include "job/user_identity.h"

using namespace paratune::job;

namespace {

constexpr uid_t kNobody = 65534;
constexpr gid_t kNogroup = 65534;

// Run `body` in a forked child; its exit code is the test's verdict (0 = all good).
int in_child(const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

}  // namespace

TEST(UserIdentity, UnknownUserIsRefused) {
  JobUser unknown;  // uid/gid defaults: what a failed spank_get_item would leave
  EXPECT_THROW(become_user_for_good(unknown), std::runtime_error);
}

TEST(UserIdentity, RootBecomesTheUserForGoodFromAnEffectiveUserSetup) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to change identity";
  // As in slurmstepd's user_init: effective uid the user's, real uid root. Afterwards all three ids and the groups
  // are the user's and root cannot be regained.
  const int rc = in_child([] {
    if (::setegid(kNogroup) != 0 || ::seteuid(kNobody) != 0) return 1;
    JobUser u{kNobody, kNogroup, {kNogroup, 4242}, true};
    try {
      become_user_for_good(u);
    } catch (...) {
      return 2;
    }
    uid_t r, e, s;
    gid_t rg, eg, sg;
    if (::getresuid(&r, &e, &s) != 0 || r != kNobody || e != kNobody || s != kNobody) return 3;
    if (::getresgid(&rg, &eg, &sg) != 0 || rg != kNogroup || eg != kNogroup || sg != kNogroup) return 4;
    gid_t groups[8];
    const int n = ::getgroups(8, groups);
    // Supplementary groups kept (a report in a group-only directory stays readable); the kernel sorts them.
    if (n != 2 || (groups[0] != 4242 && groups[1] != 4242)) return 5;
    if (::seteuid(0) == 0 || ::setuid(0) == 0) return 6;
    return 0;
  });
  EXPECT_EQ(rc, 0);
}

TEST(UserIdentity, UnprivilegedProcessIsLeftAsItIs) {
  const int rc = in_child([] {
    if (::geteuid() == 0 && (::setresgid(kNogroup, kNogroup, kNogroup) != 0 || ::setresuid(kNobody, kNobody, kNobody) != 0))
      return 1;
    const uid_t before = ::getuid();
    try {
      become_user_for_good(JobUser{before, ::getgid(), {}, true});
    } catch (...) {
      return 2;
    }
    return ::getuid() == before ? 0 : 3;
  });
  EXPECT_EQ(rc, 0);
}

TEST(UserIdentity, GroupsOfRootIncludeItsPrimaryGroup) {
  const auto groups = groups_of("root", 0);
  ASSERT_FALSE(groups.empty());
  EXPECT_EQ(groups.front(), 0u);
}

// Hardening round 3, finding 5: after the drop the child is the user's, so it must not be dumpable (the uid change
// sets the flag to fs.suid_dumpable, which a site may have at 1: the user could then ptrace a copy of slurmstepd)
// and must hold nothing of slurmstepd's environment.
TEST(UserIdentity, TheUsersChildIsNotDumpableAndHasAnEmptyEnvironment) {
  const int rc = in_child([] {
    ::setenv("PARATUNE_DAEMON_SECRET", "x", 1);
    ::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);  // as after a uid change with fs.suid_dumpable = 1
    const bool root = ::geteuid() == 0;
    try {
      become_user_for_good(JobUser{root ? kNobody : ::getuid(), root ? kNogroup : ::getgid(), {}, true});
    } catch (...) {
      return 1;
    }
    if (::prctl(PR_GET_DUMPABLE) != 0) return 2;
    if (::getenv("PARATUNE_DAEMON_SECRET") || (environ && environ[0])) return 3;
    return 0;
  });
  EXPECT_EQ(rc, 0);
}
