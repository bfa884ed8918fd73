#include "bounded_probe.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <chrono>
#include <string>

#include "safe_file.h"

namespace paratune::job {

namespace {

constexpr size_t kMaxReply = 64 << 20;  // a Topology of a very large node is a few hundred KB

void write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// The child: probe, send "O"+json or "E"+message, leave without running the parent's atexit handlers.
[[noreturn]] void child(int fd, const probe::ProbeOptions& options, const probe::CacheOptions& cache) {
  std::string reply;
  try {
    probe::CacheResult r;
    const auto topo = probe::probe_cached(options, cache, &r);
    reply = std::string(r.hit ? "H" : "O") + r.reason + "\n" + probe::to_json(topo, -1);
  } catch (const std::exception& e) {
    reply = std::string("E") + e.what();
  } catch (...) {
    reply = "Eunknown error in the probe";
  }
  write_all(fd, reply);
  ::_exit(0);
}

}  // namespace

probe::Topology probe_with_deadline(const probe::ProbeOptions& options, const probe::CacheOptions& cache,
                                    int timeout_ms, probe::CacheResult* result) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw probe::ProbeError(std::string("probe: pipe: ") + std::strerror(errno));
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  const pid_t pid = ::fork();
  if (pid < 0) throw probe::ProbeError(std::string("probe: fork: ") + std::strerror(errno));
  if (pid == 0) {
    read_end = UniqueFd();
    child(write_end.get(), options, cache);
  }
  write_end = UniqueFd();

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string reply;
  bool timed_out = false;
  char buf[65536];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    struct pollfd p{read_end.get(), POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      timed_out = ready == 0;
      break;
    }
    ssize_t n = ::read(read_end.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the child is done
    reply.append(buf, static_cast<size_t>(n));
    if (reply.size() > kMaxReply) break;
  }
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out)
    throw probe::ProbeError("probe did not finish within " + std::to_string(timeout_ms) +
                            " ms (hung device, driver or topology file?); stopped it");
  if (reply.empty()) throw probe::ProbeError("probe: the probing process died without an answer");
  if (reply[0] == 'E') throw probe::ProbeError(reply.substr(1));
  const auto nl = reply.find('\n');
  if ((reply[0] != 'O' && reply[0] != 'H') || nl == std::string::npos)
    throw probe::ProbeError("probe: malformed answer from the probing process");
  if (result) {
    result->hit = reply[0] == 'H';
    result->reason = reply.substr(1, nl - 1);
  }
  return probe::from_json(reply.substr(nl + 1), "probe");
}

}  // namespace paratune::job
