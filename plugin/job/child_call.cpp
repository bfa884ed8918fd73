#include "child_call.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "safe_file.h"

namespace paratune::job {

namespace {

// The child: "O"+answer or "E"+message, then leave without running the parent's atexit handlers.
[[noreturn]] void run_child(int fd, const std::function<std::string()>& work) {
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
  ::_exit(0);
}

}  // namespace

std::string call_in_child(const std::function<std::string()>& work, int timeout_ms, const std::string& what,
                          size_t max_reply) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw ChildCallError(what + ": pipe: " + std::strerror(errno));
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  const pid_t pid = ::fork();
  if (pid < 0) throw ChildCallError(what + ": fork: " + std::strerror(errno));
  if (pid == 0) {
    read_end = UniqueFd();
    run_child(write_end.get(), work);
  }
  write_end = UniqueFd();

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string reply;
  bool timed_out = false, too_big = false;
  char buf[65536];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    struct pollfd p {read_end.get(), POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      timed_out = ready == 0;
      break;
    }
    const ssize_t n = ::read(read_end.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the child is done
    reply.append(buf, static_cast<size_t>(n));
    if (reply.size() > max_reply + 1) {
      too_big = true;
      break;
    }
  }
  if (timed_out || too_big) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out)
    throw ChildCallError(what + " did not finish within " + std::to_string(timeout_ms) + " ms; stopped it");
  if (too_big) throw ChildCallError(what + ": answer larger than " + std::to_string(max_reply) + " bytes");
  if (reply.empty()) throw ChildCallError(what + ": the child process died without an answer");
  if (reply[0] == 'E') throw ChildCallError(reply.substr(1));
  if (reply[0] != 'O') throw ChildCallError(what + ": malformed answer from the child process");
  return reply.substr(1);
}

}  // namespace paratune::job
