#include "paratune/common/child_call.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include <chrono>
#include <system_error>

#include "paratune/common/bounded_child.h"
#include "paratune/common/safe_file.h"

namespace paratune::common {

namespace {

// Every descriptor of the caller but the reply pipe, and stdin/stdout/stderr, made to point at /dev/null: the
// child then holds nothing of slurmstepd's (its sockets to slurmd and srun, the job's log, the log directory,
// other steps' pipes) while it reads what the user controls. Pointed at /dev/null rather than closed, so that a
// library that still logs to a descriptor number it remembers (libslurm's log file, in the slurmctld queries)
// writes into /dev/null, never into whatever the child opens next under that number.
void release_descriptors(int& reply_fd) {
  const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd < 0) return;
  if (reply_fd <= 2) reply_fd = ::fcntl(reply_fd, F_DUPFD_CLOEXEC, 3);  // keep the pipe off 0..2
  std::vector<int> open_fds;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      open_fds.push_back(std::atoi(e->d_name));
    }
    ::closedir(d);  // its own descriptor, listed above, is gone now: dup2 onto it below is harmless
  } else {
    for (int fd = 0; fd < 65536; ++fd)
      if (::fcntl(fd, F_GETFD) >= 0) open_fds.push_back(fd);
  }
  for (int fd : {0, 1, 2}) open_fds.push_back(fd);
  for (int fd : open_fds)
    if (fd != reply_fd && fd != null_fd) ::dup2(null_fd, fd);
  if (null_fd > 2) ::close(null_fd);
}

// The child is a copy of slurmstepd's memory (the job's environment, the policy, other steps' state): it must not
// dump core anywhere, and the job's user — whose uid some children take — must not ptrace it or read its
// /proc/PID/mem and environ (the kernel's default for a process that changed uid is sysctl fs.suid_dumpable,
// which a site may have set to 1). user_identity.cpp sets the flag again after the uid change, which resets it.
void harden_child(int& reply_fd) {
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  const struct rlimit no_core {0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  release_descriptors(reply_fd);
}

// In the worker: "O"+answer or "E"+message. Never throws: nothing may unwind into the caller's code there.
void run_child(int fd, const std::function<std::string()>& work) {
  harden_child(fd);
  std::string reply;
  try {
    reply = "O" + work();
  } catch (const std::exception& e) {
    reply = std::string("E") + e.what();
  } catch (...) {
    reply = "Eunknown error";
  }
  try {
    write_all(fd, reply, "reply");
  } catch (...) {
    // The parent is gone or stopped reading: nobody is left to tell.
  }
}

}  // namespace

// The fork, the deadline and the killing are run_bounded_child's (see bounded_child.h for why a double
// fork and a process group): a child stuck in the kernel is left to init after the grace instead of hanging
// slurmd or the job step in waitpid().
std::string call_in_child(const std::function<std::string()>& work, int timeout_ms, const std::string& what,
                          size_t max_reply) {
  BoundedChildLimits limits;
  limits.deadline = std::chrono::milliseconds(timeout_ms);
  limits.max_reply = max_reply + 1;  // the reply's first byte is the O/E tag
  BoundedChildResult r;
  try {
    r = run_bounded_child([&](int fd) { run_child(fd, work); }, limits);
  } catch (const std::system_error& e) {
    throw ChildCallError(what + ": " + e.what());
  }
  if (r.timed_out)
    throw ChildCallError(what + " did not finish within " + std::to_string(timeout_ms) + " ms; stopped it");
  if (r.too_big) throw ChildCallError(what + ": answer larger than " + std::to_string(max_reply) + " bytes");
  const std::string& reply = r.reply;
  if (reply.empty()) throw ChildCallError(what + ": the child process died without an answer");
  if (reply[0] == 'E') throw ChildCallError(reply.substr(1));
  if (reply[0] != 'O') throw ChildCallError(what + ": malformed answer from the child process");
  return reply.substr(1);
}

}  // namespace paratune::common
