#include "child_call.h"

#include <chrono>
#include <system_error>

#include "paratune/probe/bounded_child.h"
#include "safe_file.h"

namespace paratune::job {

namespace {

// In the worker: "O"+answer or "E"+message. Never throws: nothing may unwind into the caller's code there.
void run_child(int fd, const std::function<std::string()>& work) {
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

// The fork, the deadline and the killing are probe::run_bounded_child's (see bounded_child.h for why a double
// fork and a process group): a child stuck in the kernel is left to init after the grace instead of hanging
// slurmd or the job step in waitpid().
std::string call_in_child(const std::function<std::string()>& work, int timeout_ms, const std::string& what,
                          size_t max_reply) {
  probe::BoundedChildLimits limits;
  limits.deadline = std::chrono::milliseconds(timeout_ms);
  limits.max_reply = max_reply + 1;  // the reply's first byte is the O/E tag
  probe::BoundedChildResult r;
  try {
    r = probe::run_bounded_child([&](int fd) { run_child(fd, work); }, limits);
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

}  // namespace paratune::job
