// call_in_child's deadline holds whatever the child does: ignores signals, leaves grandchildren behind, or sits
// in the kernel where SIGKILL cannot reach it (issue 14, item 4: this runs inside slurmd and slurmstepd).
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "temp_dir.h"

#include "paratune/common/child_call.h"

using paratune::fixtures::TempDir;
using paratune::common::call_in_child;
using paratune::common::ChildCallError;
using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;

// Orphans of the call (the worker once its keeper is killed, and what the worker forked) come to this process
// instead of init, so the test can see how they ended and leaves no zombie behind.
class ScopedSubreaper {
 public:
  ScopedSubreaper() { ::prctl(PR_SET_CHILD_SUBREAPER, 1); }
  ~ScopedSubreaper() { ::prctl(PR_SET_CHILD_SUBREAPER, 0); }
  ScopedSubreaper(const ScopedSubreaper&) = delete;
  ScopedSubreaper& operator=(const ScopedSubreaper&) = delete;
};

// Waits (polling, never blocking) up to `limit` for our child `pid` to end; its wait status, or -1.
int reap_within(pid_t pid, std::chrono::milliseconds limit) {
  const auto until = Clock::now() + limit;
  do {
    int st = 0;
    if (::waitpid(pid, &st, WNOHANG) == pid) return st;
    std::this_thread::sleep_for(10ms);
  } while (Clock::now() < until);
  return -1;
}

// The state letter of /proc/PID/stat (R, S, D, Z, ...), '?' when the process does not exist.
char proc_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return '?';
  const auto p = line.rfind(')');
  return p != std::string::npos && p + 2 < line.size() ? line[p + 2] : '?';
}

pid_t read_pid(const std::string& path) {
  pid_t pid = 0;
  std::ifstream(path) >> pid;
  return pid;
}

void write_pid(const std::string& path, pid_t pid) { std::ofstream(path) << pid << std::flush; }

// Expects call_in_child to throw the timeout error; returns how long it took.
Clock::duration expect_timeout(const std::function<std::string()>& work, int timeout_ms) {
  const auto start = Clock::now();
  try {
    call_in_child(work, timeout_ms, "work");
    ADD_FAILURE() << "returned instead of timing out";
  } catch (const ChildCallError& e) {
    EXPECT_NE(std::string(e.what()).find("did not finish within " + std::to_string(timeout_ms) + " ms; stopped it"),
              std::string::npos)
        << e.what();
  }
  return Clock::now() - start;
}


// Blocks every signal in the calling thread and ignores SIGTERM for one test, as slurmstepd's threads do.
class ScopedSignalsLikeSlurmstepd {
 public:
  ScopedSignalsLikeSlurmstepd() {
    sigset_t all;
    ::sigfillset(&all);
    ::pthread_sigmask(SIG_BLOCK, &all, &old_mask_);
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    ::sigemptyset(&ign.sa_mask);
    ::sigaction(SIGTERM, &ign, &old_term_);
  }
  ~ScopedSignalsLikeSlurmstepd() {
    ::sigaction(SIGTERM, &old_term_, nullptr);
    ::pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  ScopedSignalsLikeSlurmstepd(const ScopedSignalsLikeSlurmstepd&) = delete;
  ScopedSignalsLikeSlurmstepd& operator=(const ScopedSignalsLikeSlurmstepd&) = delete;

 private:
  sigset_t old_mask_;
  struct sigaction old_term_ {};
};

// In a forked process: write one page from a userfaultfd-registered mapping nobody serves, so the write waits in
// the kernel (handle_userfault) holding the pipe's mutex. Exit 3: userfaultfd refused (unprivileged and
// vm.unprivileged_userfaultfd=0 allow user-mode faults only, and this fault happens in kernel mode).
[[noreturn]] void hold_pipe_lock(int write_fd) {
  const int uffd = static_cast<int>(::syscall(SYS_userfaultfd, O_CLOEXEC));
  if (uffd < 0) ::_exit(3);
  struct uffdio_api api {};
  api.api = UFFD_API;
  if (::ioctl(uffd, UFFDIO_API, &api) != 0) ::_exit(3);
  const long page = ::sysconf(_SC_PAGESIZE);
  void* mem = ::mmap(nullptr, static_cast<size_t>(page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) ::_exit(3);
  struct uffdio_register reg {};
  reg.range.start = reinterpret_cast<unsigned long>(mem);
  reg.range.len = static_cast<unsigned long>(page);
  reg.mode = UFFDIO_REGISTER_MODE_MISSING;
  if (::ioctl(uffd, UFFDIO_REGISTER, &reg) != 0) ::_exit(3);
  (void)!::write(write_fd, mem, static_cast<size_t>(page));
  ::_exit(0);
}

// Owns the pipe and the process holding its lock. release() kills the holder first: the last close of the pipe
// needs its mutex too, so the descriptors are closed only after.
class PipeLockHolder {
 public:
  PipeLockHolder() {
    if (::pipe(fds_) != 0) {
      skip_reason = "pipe failed";
      return;
    }
    pid_ = ::fork();
    if (pid_ == 0) hold_pipe_lock(fds_[1]);
    // Wait until the holder sits in the fault (wchan names the kernel function), or exits because it cannot.
    for (int i = 0; i < 200; ++i) {
      std::ifstream wchan("/proc/" + std::to_string(pid_) + "/wchan");
      std::string fn;
      std::getline(wchan, fn);
      if (fn == "handle_userfault") return;
      int st;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        skip_reason = "userfaultfd for kernel-mode faults is not allowed here (needs CAP_SYS_PTRACE or "
                      "vm.unprivileged_userfaultfd=1): no way to make an unkillable child";
        return;
      }
      std::this_thread::sleep_for(10ms);
    }
    skip_reason = "the lock holder never blocked in handle_userfault (kernel without /proc/PID/wchan names?)";
  }
  ~PipeLockHolder() {
    release();
    for (int fd : fds_)
      if (fd >= 0) ::close(fd);
  }
  PipeLockHolder(const PipeLockHolder&) = delete;
  PipeLockHolder& operator=(const PipeLockHolder&) = delete;
  int read_fd() const { return fds_[0]; }
  void release() {
    const pid_t p = pid_.exchange(-1);
    if (p <= 0) return;
    ::kill(p, SIGKILL);
    int st;
    while (::waitpid(p, &st, 0) < 0 && errno == EINTR) {
    }
  }
  std::string skip_reason;

 private:
  int fds_[2] = {-1, -1};
  std::atomic<pid_t> pid_{-1};
};

}  // namespace

TEST(ChildCall, NormalWorkReturnsItsAnswer) {
  EXPECT_EQ(call_in_child([] { return std::string("forty-two"); }, 5000, "work"), "forty-two");
}

TEST(ChildCall, TheChildsExceptionMessageComesBack) {
  try {
    call_in_child([]() -> std::string { throw std::runtime_error("no such device"); }, 5000, "work");
    FAIL() << "no exception";
  } catch (const ChildCallError& e) {
    EXPECT_STREQ(e.what(), "no such device");
  }
}

// Default grace 300 ms: the whole call stays well inside deadline + grace + scheduling slack.
TEST(ChildCall, AChildIgnoringSignalsAndLoopingIsStoppedAtTheDeadline) {
  const auto took = expect_timeout(
      [] {
        for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGALRM}) ::signal(sig, SIG_IGN);
        std::atomic<unsigned long> spins{0};
        while (true) spins.fetch_add(1, std::memory_order_relaxed);  // busy, never in a wait SIGTERM could end
        return std::string();
      },
      300);
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 1500ms);
}

// The child forks a grandchild (same process group) that would sleep a minute: the deadline's SIGKILL goes to the
// whole group, so the grandchild is dead right after the call, not a minute later.
TEST(ChildCall, AGrandchildOfTheChildDiesWithIt) {
  TempDir t;
  const std::string pid_file = t.path + "/grandchild.pid";
  ScopedSubreaper subreaper;
  expect_timeout(
      [&] {
        const pid_t g = ::fork();
        if (g == 0) {
          ::sleep(60);
          ::_exit(0);
        }
        write_pid(pid_file, g);
        ::pause();
        return std::string();
      },
      500);
  const pid_t g = read_pid(pid_file);
  ASSERT_GT(g, 0);
  const int st = reap_within(g, 2000ms);  // ours by now (subreaper): its parent, the child, is dead
  ASSERT_NE(st, -1) << "the grandchild is still running, state " << proc_state(g);
  EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) << st;
  errno = 0;
  EXPECT_EQ(::kill(g, 0), -1);
  EXPECT_EQ(errno, ESRCH);
}

// slurmstepd blocks signals (SIGALRM among them) in its threads; a forked child inherits the mask and the ignored
// dispositions. The child must start clean, or alarm() and SIGTERM do nothing there.
TEST(ChildCall, TheChildStartsWithNoSignalBlockedOrIgnored) {
  ScopedSignalsLikeSlurmstepd like_slurmstepd;
  const std::string status = call_in_child(
      [] {
        std::ifstream in("/proc/self/status");
        std::string line, out;
        while (std::getline(in, line))
          if (line.rfind("SigBlk:", 0) == 0 || line.rfind("SigIgn:", 0) == 0) out += line + "\n";
        return out;
      },
      5000, "work");
  EXPECT_NE(status.find("SigBlk:\t0000000000000000\n"), std::string::npos) << status;
  EXPECT_NE(status.find("SigIgn:\t0000000000000000\n"), std::string::npos) << status;
}

// A child that SIGKILL truly cannot end, as in a wedged driver ioctl: it reads a pipe whose lock (pipe->mutex,
// taken with the uninterruptible mutex_lock) is held by another process — one writing from a userfaultfd page
// that nobody ever fills, so its copy from user memory waits inside the kernel with the lock held. The child is
// in D state and stays there after SIGKILL (checked below) until the test kills the lock holder. call_in_child
// must still come back within its deadline plus the grace; the old blocking waitpid() hung here (a watchdog then
// frees the child after 10 s so such a failure is a failure, not a hung test run).
TEST(ChildCall, AChildSigkillCannotEndIsAbandonedAfterTheGrace) {
  PipeLockHolder holder;
  if (!holder.skip_reason.empty()) GTEST_SKIP() << holder.skip_reason;
  TempDir t;
  const std::string pid_file = t.path + "/worker.pid";
  ScopedSubreaper subreaper;
  std::atomic<bool> returned{false};
  std::thread watchdog([&] {
    for (int i = 0; i < 200 && !returned; ++i) std::this_thread::sleep_for(50ms);
    if (!returned) holder.release();
  });
  // The child holds none of the caller's descriptors (they point at /dev/null there): it opens the same pipe anew
  // through the caller's /proc entry, which reaches the same pipe and its lock.
  const std::string pipe_path = "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(holder.read_fd());
  const auto took = expect_timeout(
      [&] {
        write_pid(pid_file, ::getpid());
        const int read_fd = ::open(pipe_path.c_str(), O_RDONLY);
        char c;
        (void)!::read(read_fd, &c, 1);  // D state here, waiting for pipe->mutex
        return std::string("read returned");
      },
      300);
  returned = true;
  watchdog.join();
  EXPECT_LT(took, 2000ms);
  const pid_t w = read_pid(pid_file);
  ASSERT_GT(w, 0);
  // Killed at the deadline (over 300 ms ago with the grace) and still there, in the kernel: truly unkillable.
  EXPECT_EQ(proc_state(w), 'D');
  holder.release();  // the lock is free: the pending SIGKILL ends the child, reaped here (subreaper)
  const int st = reap_within(w, 5000ms);
  ASSERT_NE(st, -1) << "the abandoned child did not end once freed, state " << proc_state(w);
  EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) << st;
}

// Hardening round 3, finding 5: the children are copies of slurmstepd. They must not dump core, the job's user must
// not be able to ptrace them, and they hold none of the daemon's descriptors while they read what the user wrote.
TEST(ChildHardening, TheChildIsNotDumpableAndHasNoCoreLimit) {
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_CORE, &saved), 0);
  struct rlimit some = saved;
  some.rlim_cur = saved.rlim_max == RLIM_INFINITY ? (1u << 20) : saved.rlim_max;  // as much as we may
  ASSERT_EQ(::setrlimit(RLIMIT_CORE, &some), 0);
  const std::string parent = std::to_string(::prctl(PR_GET_DUMPABLE)) + "," + std::to_string(some.rlim_cur);
  const std::string child = call_in_child(
      [] {
        struct rlimit r {};
        ::getrlimit(RLIMIT_CORE, &r);
        return std::to_string(::prctl(PR_GET_DUMPABLE)) + "," + std::to_string(r.rlim_cur) + "," +
               std::to_string(r.rlim_max);
      },
      5000, "hardening");
  ::setrlimit(RLIMIT_CORE, &saved);
  EXPECT_EQ(child, "0,0,0");
  if (some.rlim_cur > 0) {
    EXPECT_EQ(parent, "1," + std::to_string(some.rlim_cur));  // control: the caller's differ
  }
}

TEST(ChildHardening, TheChildHoldsNoneOfTheCallersDescriptors) {
  TempDir t;
  const std::string secret = t.path + "/secret.log";
  const int file_fd = ::open(secret.c_str(), O_WRONLY | O_CREAT, 0600);  // no O_CLOEXEC: inherited by a fork
  int sv[2];
  ASSERT_GE(file_fd, 0);
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  auto target = [](int fd) {
    char buf[512] = {};
    const ssize_t n = ::readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("closed");
  };
  const std::string seen = call_in_child(
      [&] {
        std::string out;
        for (int fd : {0, 1, 2, file_fd, sv[0], sv[1]}) out += target(fd) + ";";
        // Writing to a remembered number reaches /dev/null, not the caller's file.
        (void)!::write(file_fd, "leak", 4);
        return out;
      },
      5000, "hardening");
  EXPECT_EQ(seen, "/dev/null;/dev/null;/dev/null;/dev/null;/dev/null;/dev/null;");
  EXPECT_EQ(target(file_fd), secret);  // control: the caller still holds its file
  struct stat st {};
  ASSERT_EQ(::stat(secret.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 0);
  ::close(file_fd);
  ::close(sv[0]);
  ::close(sv[1]);
}
