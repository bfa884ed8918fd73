// `paratune run [--report FILE] -- CMD [ARGS...]`: run the training command as a child, pass its stdout and stderr
// through byte for byte, recognise the throughput lines of Megatron-LM, DeepSpeed, torchtitan, NeMo/Lightning and
// the HF Trainer (tuning/recognizers.h) and append them as JSON lines to $PARATUNE_REPORT. The child's exit status
// is ours (128+N when it died of signal N); SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 are forwarded.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "command.h"
#include "paratune/tuning/line_assembler.h"
#include "paratune/tuning/recognizers.h"
#include "job/safe_file.h"

namespace paratune::cli {
namespace {

using job::UniqueFd;

const char* kHelp =
    "usage: paratune run [--report FILE] [--global-batch N] [--seq-len N] [--world-size N] -- CMD [ARGS...]\n"
    "\n"
    "Run CMD as a child process. Its stdout and stderr pass through unchanged; lines that carry throughput\n"
    "figures of Megatron-LM (\"elapsed time per iteration (ms)\", \"throughput per GPU (TFLOP/s/GPU)\"),\n"
    "DeepSpeed (\"samples per second\", \"SamplesPerSec\", \"TFLOPs\"), torchtitan (\"tps\", \"tflops\", \"mfu\"),\n"
    "NeMo/Lightning (\"train_step_timing\") and the HF Trainer (\"train_samples_per_second\") are appended to\n"
    "the report file as JSON lines {\"step\": N, \"step_time_s\": T, ...} (README: PARATUNE_REPORT). Out-of-memory\n"
    "deaths (PyTorch \"CUDA/HIP out of memory\", NCCL allocation failures) and the peak memory the framework logs\n"
    "are appended as {\"event\": \"oom\", ...} and {\"event\": \"memory\", \"peak_gib\": X}.\n"
    "\n"
    "  --report FILE      where to append (default: $PARATUNE_REPORT; without either nothing is written)\n"
    "  --global-batch N   sequences per step, to turn samples/s into a step time (default $PARATUNE_GLOBAL_BATCH)\n"
    "  --seq-len N        tokens per sequence, for tokens/s (default: the plan file $PARATUNE_PLAN)\n"
    "  --world-size N     GPUs, for per-GPU tokens/s (default $PARATUNE_TP*PP*DP*CP)\n"
    "\n"
    "SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 are forwarded to CMD (to its process group when run\n"
    "without a terminal). exit status: CMD's own; 128+N if CMD was killed by signal N; 126/127 if CMD could not\n"
    "be executed / found; 2 for a bad option.\n";

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

long long env_ll(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return 0;
  char* end = nullptr;
  const long long x = std::strtoll(v, &end, 10);
  return (end && *end == 0 && x > 0) ? x : 0;
}

// tokens per sequence from the plan file the plugin wrote ($PARATUNE_PLAN: scenario.model.seq_len).
long long plan_seq_len() {
  const char* plan = std::getenv("PARATUNE_PLAN");
  if (!plan || !*plan) return 0;
  try {
    const auto j = nlohmann::json::parse(job::read_bounded(plan, 4 << 20), nullptr, false);
    if (j.is_discarded()) return 0;
    const auto& m = j.at("scenario").at("model").at("seq_len");
    return m.is_number_integer() ? m.get<long long>() : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

bool parse_positive(const std::string& s, long long& out) {
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != 0 || v <= 0) return false;
  out = v;
  return true;
}

// Write all of `data` to fd (our stdout/stderr); false once the reader is gone.
bool write_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += w;
    n -= size_t(w);
  }
  return true;
}

// The report file: opened on the first recognised line, appended one write() per line, never through a symlink.
class ReportWriter {
 public:
  explicit ReportWriter(std::string path) : path_(std::move(path)) {}
  void append(const std::string& line) {
    if (path_.empty() || failed_) return;
    if (!fd_) {
      fd_ = UniqueFd(::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644));
      struct stat st {};
      if (!fd_ || ::fstat(fd_.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        std::fprintf(stderr, "paratune run: cannot append to %s: %s (throughput not recorded)\n", path_.c_str(),
                     fd_ ? "not a regular file" : std::strerror(errno));
        failed_ = true;
        fd_ = UniqueFd();
        return;
      }
    }
    const std::string out = line + "\n";
    if (::write(fd_.get(), out.data(), out.size()) != ssize_t(out.size())) failed_ = true;
    ++written_;
  }
  size_t written() const { return written_; }

 private:
  std::string path_;
  UniqueFd fd_;
  bool failed_ = false;
  size_t written_ = 0;
};

struct Scanner {
  tuning::StepContext ctx;
  ReportWriter* report;
  std::optional<long long> last_step;  // several ranks print the same step: record it once
  bool oom_written = false;            // several ranks print their OOM: the first one is the job's
  double peak_gib = 0;                 // the largest peak memory written so far
  void operator()(std::string_view line) {
    memory_events(line);
    const auto f = tuning::recognise_line(line);
    if (!f) return;
    if (f->step && last_step && *f->step <= *last_step) return;
    const auto j = tuning::report_line(*f, ctx);
    if (!j) return;
    if (f->step) last_step = f->step;
    report->append(j->dump());
  }
  // Out-of-memory deaths and peak memory (docs/tuning-log.md): what `paratune calibrate` learns head-room from.
  void memory_events(std::string_view line) {
    constexpr auto replace = nlohmann::json::error_handler_t::replace;  // the line's bytes are the job's
    if (const auto peak = tuning::recognise_peak_memory_gib(line); peak && *peak > peak_gib * 1.001) {
      peak_gib = *peak;
      report->append(tuning::memory_report_line(*peak).dump());
    }
    if (oom_written) return;
    if (const auto oom = tuning::recognise_oom(line)) {
      oom_written = true;
      report->append(tuning::oom_report_line(*oom, line).dump(-1, ' ', false, replace));
    }
  }
};

int run(const std::vector<std::string>& args) {
  std::string report_path = std::getenv("PARATUNE_REPORT") ? std::getenv("PARATUNE_REPORT") : "";
  tuning::StepContext ctx;
  ctx.global_batch = env_ll("PARATUNE_GLOBAL_BATCH");
  {
    const long long tp = env_ll("PARATUNE_TP"), pp = env_ll("PARATUNE_PP"), dp = env_ll("PARATUNE_DP"),
                    cp = env_ll("PARATUNE_CP");
    if (tp && pp && dp) ctx.world_size = tp * pp * dp * (cp ? cp : 1);
  }
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") { ++i; break; }
    if (a == "--help" || a == "-h") { std::fputs(kHelp, stdout); return kOk; }
    const bool has_value = i + 1 < args.size();
    if (a == "--report" && has_value) { report_path = args[++i]; continue; }
    if ((a == "--global-batch" || a == "--seq-len" || a == "--world-size") && has_value) {
      long long v = 0;
      if (!parse_positive(args[i + 1], v)) {
        std::fprintf(stderr, "paratune run: %s needs a positive integer, got '%s'\n", a.c_str(), args[i + 1].c_str());
        return kBadInput;
      }
      (a == "--global-batch" ? ctx.global_batch : a == "--seq-len" ? ctx.seq_len : ctx.world_size) = v;
      ++i;
      continue;
    }
    if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "paratune run: unknown or incomplete option '%s'\n%s", a.c_str(), kHelp);
      return kBadInput;
    }
    break;  // the command starts here (no "--")
  }
  if (i >= args.size()) {
    std::fprintf(stderr, "paratune run: no command given\n%s", kHelp);
    return kBadInput;
  }
  if (ctx.seq_len == 0) ctx.seq_len = plan_seq_len();
  std::vector<std::string> cmd(args.begin() + long(i), args.end());

  int out_pipe[2], err_pipe[2], exec_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) || ::pipe2(err_pipe, O_CLOEXEC) || ::pipe2(exec_pipe, O_CLOEXEC)) {
    std::fprintf(stderr, "paratune run: pipe: %s\n", std::strerror(errno));
    return kFailure;
  }
  UniqueFd out_r(out_pipe[0]), out_w(out_pipe[1]), err_r(err_pipe[0]), err_w(err_pipe[1]), exec_r(exec_pipe[0]),
      exec_w(exec_pipe[1]);

  // Signals arrive through a signalfd: blocked from before the fork, restored in the child before exec.
  sigset_t mask, old;
  sigemptyset(&mask);
  for (int s : kForwarded) sigaddset(&mask, s);
  sigaddset(&mask, SIGCHLD);
  if (::sigprocmask(SIG_BLOCK, &mask, &old) != 0) return kFailure;
  UniqueFd sfd(::signalfd(-1, &mask, SFD_CLOEXEC));
  if (!sfd) {
    std::fprintf(stderr, "paratune run: signalfd: %s\n", std::strerror(errno));
    return kFailure;
  }
  const bool own_group = !::isatty(STDIN_FILENO);  // without a terminal, signals reach the child only through us

  std::vector<char*> argv;
  for (auto& a : cmd) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    std::fprintf(stderr, "paratune run: fork: %s\n", std::strerror(errno));
    return kFailure;
  }
  if (pid == 0) {  // child: only async-signal-safe calls from here to exec
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    if (own_group) ::setpgid(0, 0);
    ::dup2(out_w.get(), STDOUT_FILENO);
    ::dup2(err_w.get(), STDERR_FILENO);
    ::execvp(argv[0], argv.data());
    const int e = errno;
    [[maybe_unused]] ssize_t ignored = ::write(exec_w.get(), &e, sizeof e);
    ::_exit(e == ENOENT ? 127 : 126);
  }
  if (own_group) ::setpgid(pid, pid);  // also from here: no race with the first forwarded signal
  ::signal(SIGPIPE, SIG_IGN);          // our reader may go away; the child keeps running and we keep draining
  out_w = UniqueFd();
  err_w = UniqueFd();
  exec_w = UniqueFd();
  int exec_errno = 0;
  while (::read(exec_r.get(), &exec_errno, sizeof exec_errno) < 0 && errno == EINTR) {
  }
  if (exec_errno != 0) {
    ::waitpid(pid, nullptr, 0);
    std::fprintf(stderr, "paratune run: %s: %s\n", cmd[0].c_str(), std::strerror(exec_errno));
    return exec_errno == ENOENT ? 127 : 126;
  }

  ReportWriter report(report_path);
  Scanner scan{ctx, &report, std::nullopt, false, 0};
  tuning::LineAssembler out_lines, err_lines;
  bool out_open = true, err_open = true, our_out_ok = true, our_err_ok = true;
  std::optional<int> status;
  std::optional<std::chrono::steady_clock::time_point> exited_at;
  std::vector<char> buf(1 << 16);
  while (true) {
    if (status && !out_open && !err_open) break;
    // A grandchild may keep the pipes open after the child exited: drain for at most 5 s more.
    if (exited_at && std::chrono::steady_clock::now() - *exited_at > std::chrono::seconds(5)) break;
    pollfd fds[3] = {{out_open ? out_r.get() : -1, POLLIN, 0}, {err_open ? err_r.get() : -1, POLLIN, 0},
                     {sfd.get(), POLLIN, 0}};
    const int n = ::poll(fds, 3, status ? 200 : -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int k = 0; k < 2; ++k) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t got = ::read(fds[k].fd, buf.data(), buf.size());
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        (k == 0 ? out_open : err_open) = false;
        (k == 0 ? out_lines : err_lines).finish(std::ref(scan));
        continue;
      }
      bool& ok = k == 0 ? our_out_ok : our_err_ok;
      if (ok) ok = write_all(k == 0 ? STDOUT_FILENO : STDERR_FILENO, buf.data(), size_t(got));
      (k == 0 ? out_lines : err_lines).feed(std::string_view(buf.data(), size_t(got)), std::ref(scan));
    }
    if (fds[2].revents & POLLIN) {
      signalfd_siginfo si{};
      if (::read(sfd.get(), &si, sizeof si) != ssize_t(sizeof si)) continue;
      const int sig = int(si.ssi_signo);
      if (sig == SIGCHLD) {
        int st = 0;
        if (!status && ::waitpid(pid, &st, WNOHANG) == pid) {
          status = st;
          exited_at = std::chrono::steady_clock::now();
        }
      } else if (!status) {
        ::kill(own_group ? -pid : pid, sig);
      }
    }
  }
  if (!status) {  // the pipes closed before SIGCHLD was read
    int st = 0;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    status = st;
  }
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  if (WIFEXITED(*status)) return WEXITSTATUS(*status);
  if (WIFSIGNALED(*status)) return 128 + WTERMSIG(*status);
  return kFailure;
}

Register reg({"run", "run a training command and record its throughput to $PARATUNE_REPORT", run});

}  // namespace
}  // namespace paratune::cli
