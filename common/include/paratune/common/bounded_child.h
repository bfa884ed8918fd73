// Run a piece of work in a forked process with a deadline that holds even when the work cannot be killed.
// Used inside slurmd and slurmstepd (common/src/child_call.cpp, the hwloc XML check in probe/src/hwloc_probe.cpp):
// there a wedged driver ioctl or a dead device's sysfs read leaves the work in uninterruptible sleep, where
// SIGKILL does nothing until the kernel call returns — a blocking waitpid() on it would hang the daemon.
//
// Shape (a double fork, chosen so the caller never waits on the work itself):
//   caller ──fork──> keeper (own process group) ──fork──> worker (same group) runs `work`
// The keeper only waits for the worker and passes its wait status back through a pipe, then exits. On the
// deadline the caller kills the whole group (keeper, worker and anything the worker started in it) and waits a
// short grace for the keeper, which sleeps interruptibly and so always dies. A worker stuck in the kernel is left
// behind, but never as the caller's zombie: its parent (the keeper) is gone, so it belongs to init (or the
// nearest subreaper), which reaps it whenever the kernel call ends and the pending SIGKILL takes effect.
// The caller learns the worker's exit status from the pipe, not from waitpid(), so a caller whose SIGCHLD is
// ignored (the kernel reaps its children) or whose own handler reaps every child still gets it.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

namespace paratune::common {

struct BoundedChildLimits {
  std::chrono::milliseconds deadline{10000};
  // After the deadline's SIGKILL, how long to wait for the keeper before giving up on it (it never needs long).
  std::chrono::milliseconds grace{300};
  // More than this many bytes on the reply descriptor stops the work (too_big).
  size_t max_reply = 64u << 20;
  // alarm() armed in the worker, so it does not outlive the caller by much when the caller itself dies; 0 picks
  // the deadline rounded up plus 5 s.
  unsigned alarm_s = 0;
};

struct BoundedChildResult {
  std::string reply;          // what the worker wrote to its reply descriptor
  bool timed_out = false;     // the deadline passed; the process group was killed
  bool too_big = false;       // the reply passed max_reply; the process group was killed
  bool status_known = false;  // the worker ended and `status` is its waitpid() status
  int status = 0;
  int fork_errno = 0;         // the keeper could not fork the worker (errno), else 0
  bool keeper_abandoned = false;  // the keeper outlived the grace (not expected); it is reaped on a later call
};

// Runs `work(reply_fd)` in the worker with every signal unblocked and at its default action (slurmstepd blocks
// SIGALRM and others, and its handlers must not run in a forked copy of it). Returning from `work` exits the
// worker with status 0; an exception escaping it exits with 125 (never unwinding into the caller's code). The
// worker and everything it starts in its process group is killed when the call ends. Throws std::system_error
// when the pipes or the first fork cannot be made.
BoundedChildResult run_bounded_child(const std::function<void(int reply_fd)>& work, const BoundedChildLimits& limits);

}  // namespace paratune::common
