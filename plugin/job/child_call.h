// Run a piece of work in a forked child with a deadline and get its string answer back through a pipe.
// Used inside slurmstepd where nothing may block without bound and privileges must not change in the daemon
// itself (it has other threads): the child may drop to the job user, hang, or crash — the parent only waits
// until the deadline, kills it, and reports.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

namespace paratune::job {

struct ChildCallError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// `work` runs in the child; its return value comes back, an exception's message comes back as ChildCallError.
// Throws ChildCallError on timeout ("<what> did not finish within N ms ..."), a dead child, or a reply over
// `max_reply` bytes.
std::string call_in_child(const std::function<std::string()>& work, int timeout_ms, const std::string& what,
                          size_t max_reply = 64u << 20);

}  // namespace paratune::job
