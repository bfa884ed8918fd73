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
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "command.h"
#include "options.h"
#include "paratune/tuning/line_assembler.h"
#include "paratune/tuning/recognizers.h"
#include "paratune/tuning/run_tally.h"
#include "paratune/common/safe_file.h"

namespace paratune::cli {
namespace {

using common::UniqueFd;

const char* kDescription =
    "Run CMD as a child process: paratune run [OPTIONS] -- CMD [ARGS...]. Its stdout and stderr pass through\n"
    "unchanged; lines that carry throughput figures of Megatron-LM (\"elapsed time per iteration (ms)\",\n"
    "\"throughput per GPU (TFLOP/s/GPU)\"), DeepSpeed (\"samples per second\", \"SamplesPerSec\", \"TFLOPs\"),\n"
    "torchtitan (\"tps\", \"tflops\", \"mfu\"), NeMo/Lightning (\"train_step_timing\") and the HF Trainer\n"
    "(\"train_samples_per_second\") are appended to the report file as JSON lines {\"step\": N, \"step_time_s\": T,\n"
    "...} (README: PARATUNE_REPORT). Out-of-memory deaths (PyTorch \"CUDA/HIP out of memory\", NCCL allocation\n"
    "failures) and the peak memory the framework logs are appended as {\"event\": \"oom\", ...} and\n"
    "{\"event\": \"memory\", \"peak_gib\": X}. Without \"--\" the command starts at the first word that is not an\n"
    "option. On standard error paratune run warns (once per kind) about recognised lines it cannot turn into a\n"
    "step time and what to pass, warns when there is no report path, and ends with one summary line: steps,\n"
    "median step time, tokens/s and what was written where (--quiet: none of these).";
const char* kFooter =
    "SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 are forwarded to CMD (to its process group when run\n"
    "without a terminal). exit status: CMD's own; 128+N if CMD was killed by signal N; 126/127 if CMD could not\n"
    "be executed / found; 2 for a bad option.";

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
    const auto j = nlohmann::json::parse(common::read_bounded(plan, 4 << 20), nullptr, false);
    if (j.is_discarded()) return 0;
    const auto& m = j.at("scenario").at("model").at("seq_len");
    return m.is_number_integer() ? m.get<long long>() : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

// Write all of `data` to fd (our stdout/stderr); false once the reader is gone. A descriptor we inherited in
// non-blocking mode (EAGAIN) waits for room instead of losing the rest of the output.
bool write_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        pollfd p{fd, POLLOUT, 0};
        if (::poll(&p, 1, -1) >= 0 || errno == EINTR) continue;
      }
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
      // O_NONBLOCK: a FIFO planted at the path (no reader) must not hold the open, and with it the child's output
      // and the signals we forward; a regular file ignores the flag.
      fd_ = UniqueFd(::open(path_.c_str(),
                            O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0644));
      const int open_errno = errno;
      struct stat st {};
      if (!fd_ || ::fstat(fd_.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        const bool fifo = !fd_ && open_errno == ENXIO;  // a FIFO without a reader
        std::fprintf(stderr, "paratune run: cannot append to %s: %s (throughput not recorded)\n", path_.c_str(),
                     fd_ || fifo ? "not a regular file" : std::strerror(open_errno));
        failed_ = true;
        fd_ = UniqueFd();
        return;
      }
    }
    const std::string out = line + "\n";
    if (::write(fd_.get(), out.data(), out.size()) != ssize_t(out.size())) failed_ = true;
    else ++written_;
  }
  tuning::ReportDestination destination() const { return {path_, written_, failed_}; }

 private:
  std::string path_;
  UniqueFd fd_;
  bool failed_ = false;
  size_t written_ = 0;
};

// Our own lines on stderr (warnings, the summary): held back while the child's stderr is in the middle of a line,
// so that they never split one of its lines.
class Diagnostics {
 public:
  explicit Diagnostics(bool quiet) : quiet_(quiet) {}
  void say(const std::string& text) {
    if (quiet_) return;
    pending_ += "paratune run: " + text + "\n";
    if (at_line_start_) flush();
  }
  void child_wrote(const char* data, size_t n) {
    if (n > 0) at_line_start_ = data[n - 1] == '\n' || data[n - 1] == '\r';  // a progress bar redraws
    if (at_line_start_) flush();
  }
  void finish() {  // the child's stderr has ended: whatever it left unterminated, our lines start on their own
    if (!at_line_start_ && !pending_.empty()) pending_.insert(0, "\n");
    at_line_start_ = true;
    flush();
  }

 private:
  void flush() {
    if (pending_.empty()) return;
    write_all(STDERR_FILENO, pending_.data(), pending_.size());
    pending_.clear();
  }
  bool quiet_;
  bool at_line_start_ = true;
  std::string pending_;
};

struct Scanner {
  tuning::StepContext ctx;
  ReportWriter* report;
  tuning::RunTally* tally;
  Diagnostics* diag;
  std::optional<long long> last_step;  // several ranks print the same step: record it once
  bool oom_written = false;            // several ranks print their OOM: the first one is the job's
  double peak_gib = 0;                 // the largest peak memory written so far
  void operator()(std::string_view line) {
    memory_events(line);
    const auto f = tuning::recognise_line(line);
    if (!f) return;
    if (f->step && last_step && *f->step <= *last_step) return;
    const auto j = tuning::report_line(*f, ctx);
    if (!j) {
      if (const auto w = tally->unusable(*f, ctx)) diag->say(*w);
      return;
    }
    if (f->step) last_step = f->step;
    const std::string out = j->dump();
    report->append(out);
    tally->recorded(out);
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

struct RunArgs {
  std::optional<std::string> report;
  long long global_batch = 0, seq_len = 0, world_size = 0;
  bool quiet = false;
};

int run(const RunArgs& args, std::vector<std::string> cmd) {
  const char* env_report = std::getenv("PARATUNE_REPORT");
  std::string report_path = args.report ? *args.report : env_report ? env_report : "";
  tuning::StepContext ctx;
  ctx.global_batch = args.global_batch ? args.global_batch : env_ll("PARATUNE_GLOBAL_BATCH");
  if (args.world_size) {
    ctx.world_size = args.world_size;
  } else {
    const long long tp = env_ll("PARATUNE_TP"), pp = env_ll("PARATUNE_PP"), dp = env_ll("PARATUNE_DP"),
                    cp = env_ll("PARATUNE_CP");
    if (tp && pp && dp) ctx.world_size = tp * pp * dp * (cp ? cp : 1);
  }
  ctx.seq_len = args.seq_len;
  if (ctx.seq_len == 0) ctx.seq_len = plan_seq_len();

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

  Diagnostics diag(args.quiet);
  if (report_path.empty()) diag.say(tuning::no_report_path_warning());
  ReportWriter report(report_path);
  tuning::RunTally tally;
  Scanner scan{ctx, &report, &tally, &diag, std::nullopt, false, 0};
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
      // Where the child's stderr now stands before scanning, so that a warning the scan raises waits for the end of
      // a line this chunk left open instead of splitting it.
      if (k == 1) diag.child_wrote(buf.data(), size_t(got));
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
  diag.say(tally.summary(report.destination()));
  diag.finish();
  if (WIFEXITED(*status)) return WEXITSTATUS(*status);
  if (WIFSIGNALED(*status)) return 128 + WTERMSIG(*status);
  return kFailure;
}

Action setup(CLI::App& app, const std::vector<std::string>& after_dashes) {
  auto a = std::make_shared<RunArgs>();
  describe(app, kDescription);
  app.footer(kFooter);
  app.add_option("--report", a->report,
                 "where to append (default: $PARATUNE_REPORT; without either nothing is written)")
      ->type_name("FILE");
  app.add_option("--global-batch", a->global_batch,
                 "sequences per step, to turn samples/s into a step time (default $PARATUNE_GLOBAL_BATCH)")
      ->type_name("N")
      ->check(options::positive_integer());
  app.add_option("--seq-len", a->seq_len, "tokens per sequence, for tokens/s (default: the plan file $PARATUNE_PLAN)")
      ->type_name("N")
      ->check(options::positive_integer());
  app.add_option("--world-size", a->world_size, "GPUs, for per-GPU tokens/s (default $PARATUNE_TP*PP*DP*CP)")
      ->type_name("N")
      ->check(options::positive_integer());
  app.add_flag("-q,--quiet", a->quiet, "no warnings and no summary line on standard error");
  app.prefix_command();  // without "--": the command starts at the first word that is not an option
  return [a, &app, after_dashes] {
    // prefix_command() put the words from the first non-option on into remaining(): then that is the command, and
    // a "--" later on is one of its own words; otherwise the command is what follows our "--".
    std::vector<std::string> cmd = app.remaining();
    if (!cmd.empty() && cmd.front().rfind("-", 0) == 0) {
      std::fprintf(stderr, "paratune run: unknown option '%s'\nrun 'paratune run --help' for the options\n",
                   cmd.front().c_str());
      return int(kBadInput);
    }
    if (cmd.empty() && !after_dashes.empty()) cmd.assign(after_dashes.begin() + 1, after_dashes.end());
    else cmd.insert(cmd.end(), after_dashes.begin(), after_dashes.end());
    if (cmd.empty()) {
      std::fprintf(stderr, "paratune run: no command given (paratune run [OPTIONS] -- CMD [ARGS...])\n");
      return int(kBadInput);
    }
    return run(*a, std::move(cmd));
  };
}

Register reg{"run", "run a training command and record its throughput to $PARATUNE_REPORT", setup, true};

}  // namespace
}  // namespace paratune::cli
