// common::run_bounded_child (bounded_child.h): statuses come back through the pipe whatever the caller's SIGCHLD,
// and the worker starts with clean signals even when the caller (slurmstepd) blocks SIGALRM.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "helpers.h"
#include "paratune/common/bounded_child.h"

using paratune::common::BoundedChildLimits;
using paratune::common::run_bounded_child;
using namespace std::chrono_literals;

namespace {

// Sets a signal's disposition for one test and puts the old one back.
class ScopedDisposition {
 public:
  ScopedDisposition(int sig, void (*handler)(int)) : sig_(sig) {
    struct sigaction sa {};
    sa.sa_handler = handler;
    ::sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, &old_);
  }
  ~ScopedDisposition() { ::sigaction(sig_, &old_, nullptr); }
  ScopedDisposition(const ScopedDisposition&) = delete;
  ScopedDisposition& operator=(const ScopedDisposition&) = delete;

 private:
  int sig_;
  struct sigaction old_ {};
};

// Blocks signals in the calling thread for one test, as slurmstepd does in the threads that call the plugin.
class ScopedBlock {
 public:
  explicit ScopedBlock(std::initializer_list<int> sigs) {
    sigset_t set;
    ::sigemptyset(&set);
    for (int s : sigs) ::sigaddset(&set, s);
    ::pthread_sigmask(SIG_BLOCK, &set, &old_);
  }
  ~ScopedBlock() { ::pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  ScopedBlock(const ScopedBlock&) = delete;
  ScopedBlock& operator=(const ScopedBlock&) = delete;

 private:
  sigset_t old_;
};

// In the worker: no gtest assertions there (a failure would be reported by a forked copy of the test).
void write_str(int fd, const std::string& s) {
  if (::write(fd, s.data(), s.size()) != static_cast<ssize_t>(s.size())) ::_exit(99);
}

}  // namespace

TEST(BoundedChild, ReplyAndExitStatusComeBack) {
  BoundedChildLimits l;
  l.deadline = 5s;
  auto r = run_bounded_child(
      [](int fd) {
        write_str(fd, "hello");
        ::_exit(7);
      },
      l);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.reply, "hello");
  ASSERT_TRUE(r.status_known);
  ASSERT_TRUE(WIFEXITED(r.status));
  EXPECT_EQ(WEXITSTATUS(r.status), 7);
}

TEST(BoundedChild, AnEscapingExceptionExitsWith125) {
  auto r = run_bounded_child([](int) { throw std::runtime_error("x"); }, {});
  ASSERT_TRUE(r.status_known);
  ASSERT_TRUE(WIFEXITED(r.status));
  EXPECT_EQ(WEXITSTATUS(r.status), 125);
}

// With SIGCHLD ignored the kernel reaps the caller's children and waitpid() cannot see their status; the
// worker's status comes from the keeper, whose SIGCHLD is back at its default.
TEST(BoundedChild, ACrashIsSeenWhenTheCallerIgnoresSigchld) {
  ScopedDisposition ign(SIGCHLD, SIG_IGN);
  auto r = run_bounded_child([](int) { ::raise(SIGSEGV); }, {});
  ASSERT_TRUE(r.status_known);
  ASSERT_TRUE(WIFSIGNALED(r.status));
  EXPECT_EQ(WTERMSIG(r.status), SIGSEGV);
}

// slurmstepd blocks SIGALRM; a forked child inherits the mask, and alarm() alone would then never end it.
TEST(BoundedChild, AlarmEndsTheWorkerWhenTheCallerBlocksSigalrm) {
  ScopedBlock block({SIGALRM, SIGTERM});
  ScopedDisposition ign(SIGALRM, SIG_IGN);  // an ignored disposition is inherited too
  BoundedChildLimits l;
  l.deadline = 10s;
  l.alarm_s = 1;
  const auto start = std::chrono::steady_clock::now();
  auto r = run_bounded_child([](int) { ::pause(); }, l);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_FALSE(r.timed_out);
  ASSERT_TRUE(r.status_known);
  ASSERT_TRUE(WIFSIGNALED(r.status));
  EXPECT_EQ(WTERMSIG(r.status), SIGALRM);
}

TEST(BoundedChild, ATooLongReplyStopsTheWorker) {
  BoundedChildLimits l;
  l.deadline = 10s;
  l.max_reply = 10;
  const auto start = std::chrono::steady_clock::now();
  auto r = run_bounded_child(
      [](int fd) {
        for (;;) write_str(fd, "0123456789");
      },
      l);
  EXPECT_TRUE(r.too_big);
  EXPECT_FALSE(r.timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

// The hwloc XML check (hwloc_probe.cpp) on a file that crashes hwloc 2.9's importer, from a caller ignoring
// SIGCHLD: still reported as a crash, not as a lost process or a success.
TEST(BoundedChild, HwlocXmlCheckSeesTheCrashWithSigchldIgnored) {
  const std::string xml = probe_test::fixture("../../fuzz/regressions/hwloc_xml/numanode-without-complete-nodeset.xml");
  ASSERT_TRUE(probe_test::exists(xml)) << xml;
  ScopedDisposition ign(SIGCHLD, SIG_IGN);
  ScopedBlock block({SIGALRM});
  try {
    probe_test::load(xml);
    FAIL() << "a corrupt XML loaded";
  } catch (const paratune::probe::ProbeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("numanode-without-complete-nodeset.xml"), std::string::npos) << msg;
    EXPECT_NE(msg.find("crashes on this XML"), std::string::npos) << msg;  // as in fuzz/regressions
  }
}
