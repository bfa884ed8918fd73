// The double fork of bounded_child.h. What runs after fork() in the keeper is async-signal-safe only: the caller
// may be a multithreaded daemon (slurmstepd), where another thread could have held malloc's lock at fork time.
#include "paratune/common/bounded_child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace paratune::common {

namespace {

using Clock = std::chrono::steady_clock;

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&&) = delete;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

struct Pipe {
  Fd read, write;
};

Pipe make_pipe() {
  int fds[2];
  // O_CLOEXEC: whatever the worker executes does not hold the reply pipe open (and delay EOF) by accident.
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
  return {Fd(fds[0]), Fd(fds[1])};
}

// A keeper that outlived its grace (it only sleeps interruptibly, so this should not happen): reaped by a later
// call instead of blocking this one. Guarded, since several threads of a daemon may run children.
std::mutex abandoned_mutex;
std::vector<pid_t> abandoned;

void reap_abandoned() {
  std::lock_guard lock(abandoned_mutex);
  std::erase_if(abandoned, [](pid_t p) {
    int st;
    const pid_t r = ::waitpid(p, &st, WNOHANG);
    return r == p || (r < 0 && errno == ECHILD);
  });
}

// Inherited dispositions would run the caller's handlers in this copy of it, and an inherited mask (slurmstepd
// blocks SIGALRM, among others) would make alarm() and SIGTERM do nothing: everything back to the defaults, the
// dispositions first so no pending signal reaches an old handler once unblocked. SIGCHLD at its default also
// lets the keeper's waitpid() see the worker even when the caller ignores SIGCHLD. Errors (SIGKILL, SIGSTOP and
// glibc's internal signals refuse) change nothing.
void reset_signals() {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

[[noreturn]] void run_worker(int reply_fd, const std::function<void(int)>& work, unsigned alarm_s) {
  ::alarm(alarm_s);
  try {
    work(reply_fd);
  } catch (...) {
    ::_exit(125);
  }
  ::_exit(0);
}

// The keeper: forks the worker, waits for it, writes its wait status (or -errno of a failed fork), exits.
[[noreturn]] void run_keeper(Pipe& reply, Pipe& status, const std::function<void(int)>& work, unsigned alarm_s) {
  ::setpgid(0, 0);  // the caller does the same from its side: whichever runs first, no window without a group
  reset_signals();
  reply.read.reset();
  status.read.reset();
  const pid_t worker = ::fork();
  if (worker == 0) {
    status.write.reset();
    run_worker(reply.write.get(), work, alarm_s);
  }
  reply.write.reset();  // EOF on the reply pipe then means the worker (and what it forked) let go of it
  int st = worker < 0 ? -errno : 0;
  while (worker > 0 && ::waitpid(worker, &st, 0) < 0) {
    if (errno != EINTR) ::_exit(1);  // nothing to report: the caller sees no status
  }
  const char* p = reinterpret_cast<const char*>(&st);
  for (size_t done = 0; done < sizeof st;) {
    const ssize_t n = ::write(status.write.get(), p + done, sizeof st - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::_exit(0);
}

// Reads the reply and the status pipes until both reach EOF, the deadline passes, or the reply is too big.
void read_until_done(int reply_fd, int status_fd, Clock::time_point deadline, const BoundedChildLimits& limits,
                     BoundedChildResult& out, std::string& status_bytes) {
  bool reply_open = true, status_open = true;
  char buf[65536];
  while (reply_open || status_open) {
    // Rounded up: poll() rounding down would wake just before the deadline and end the call up to 1 ms early.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      out.timed_out = true;
      return;
    }
    struct pollfd p[2] = {{reply_open ? reply_fd : -1, POLLIN, 0}, {status_open ? status_fd : -1, POLLIN, 0}};
    const int ready = ::poll(p, 2, static_cast<int>(left));
    if (ready < 0 && errno != EINTR) return;  // cannot happen with valid descriptors; stop, the group is killed
    for (int i = 0; ready > 0 && i < 2; ++i) {
      if (p[i].revents == 0) continue;
      const ssize_t n = ::read(p[i].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        (i == 0 ? reply_open : status_open) = false;
      } else if (i == 0) {
        out.reply.append(buf, static_cast<size_t>(n));
        if (out.reply.size() > limits.max_reply) {
          out.too_big = true;
          return;
        }
      } else if (status_bytes.size() < sizeof(int)) {
        status_bytes.append(buf, std::min(static_cast<size_t>(n), sizeof(int) - status_bytes.size()));
      }
    }
  }
}

// After the group's SIGKILL: poll for the keeper (never a blocking waitpid), and hand it to a later call if it
// outlives the grace. ECHILD: the caller ignores SIGCHLD or its handler reaped it — gone either way.
bool reap_within(pid_t pid, std::chrono::milliseconds grace) {
  const auto until = Clock::now() + grace;
  while (true) {
    int st;
    const pid_t r = ::waitpid(pid, &st, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) return true;
    if (r < 0 && errno != EINTR) return true;  // not our child at all: nothing to wait for
    if (Clock::now() >= until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::lock_guard lock(abandoned_mutex);
  abandoned.push_back(pid);
  return false;
}

}  // namespace

BoundedChildResult run_bounded_child(const std::function<void(int)>& work, const BoundedChildLimits& limits) {
  reap_abandoned();
  Pipe reply = make_pipe(), status = make_pipe();
  const auto deadline = Clock::now() + limits.deadline;
  const unsigned alarm_s = limits.alarm_s ? limits.alarm_s
                                          : static_cast<unsigned>((limits.deadline.count() + 999) / 1000 + 5);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork");
  if (pid == 0) run_keeper(reply, status, work, alarm_s);
  ::setpgid(pid, pid);  // fails harmlessly if the keeper already did it (or already exited)
  reply.write.reset();
  status.write.reset();

  BoundedChildResult out;
  std::string status_bytes;
  read_until_done(reply.read.get(), status.read.get(), deadline, limits, out, status_bytes);
  // Always, also after a clean end: nothing the work started outlives the call. Before reaping the keeper, whose
  // unreaped pid keeps the group id from being reused. A group that does not exist (setpgid lost to an early
  // exit) falls back to the keeper alone.
  if (::kill(-pid, SIGKILL) != 0) ::kill(pid, SIGKILL);
  out.keeper_abandoned = !reap_within(pid, limits.grace);
  if (status_bytes.size() == sizeof(int)) {
    int st;
    std::memcpy(&st, status_bytes.data(), sizeof st);
    if (st < 0) {
      out.fork_errno = -st;
    } else {
      out.status_known = true;
      out.status = st;
    }
  }
  return out;
}

}  // namespace paratune::common
