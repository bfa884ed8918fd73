// Run a piece of work in a forked child with a deadline and get its string answer back through a pipe.
// Used inside slurmstepd where nothing may block without bound and privileges must not change in the daemon
// itself (it has other threads): the child may drop to the job user, hang, or crash — the parent only waits
// until the deadline, kills the child's process group, and reports. A child stuck in the kernel (D state), which
// SIGKILL cannot end, is abandoned to init after a short grace (probe/bounded_child.h) instead of being waited for.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

namespace paratune::common {

struct ChildCallError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// `work` runs in the child; its return value comes back, an exception's message comes back as ChildCallError.
// Returns or throws within about timeout_ms plus a grace of 300 ms, whatever the child does.
// Throws ChildCallError on timeout ("<what> did not finish within N ms ..."), a dead child, or a reply over
// `max_reply` bytes.
std::string call_in_child(const std::function<std::string()>& work, int timeout_ms, const std::string& what,
                          size_t max_reply = 64u << 20);

}  // namespace paratune::common
