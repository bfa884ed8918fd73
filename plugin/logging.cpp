// Logging: spdlog with synchronous sinks only (no threads inside slurmstepd), every line prefixed "paratune:".
#include <unistd.h>

#include <mutex>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include "job/job_files.h"
#include "job/log_text.h"
#include "plugin_state.h"
#include "spank_api.h"

namespace paratune::plugin {

namespace {

// Into Slurm's own log: the slurmd log in slurmstepd, the terminal in srun/sbatch.
class SlurmSink : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    // Escaped and capped: a user's value holding "\n" must not forge a slurmd log line (job/log_text.h).
    const std::string text = job::loggable(std::string_view(msg.payload.data(), msg.payload.size()));
    if (msg.level >= spdlog::level::err) slurm_error("paratune: %s", text.c_str());
    else if (msg.level == spdlog::level::warn) slurm_info("paratune: warning: %s", text.c_str());
    else if (msg.level == spdlog::level::info) slurm_info("paratune: %s", text.c_str());
    else slurm_debug("paratune: %s", text.c_str());
  }
  void flush_() override {}
};

// Into a file descriptor opened safely by the caller (spdlog's file sinks open by name, following symlinks), up to
// the per-job log's cap (job/job_files.h): a job of thousands of steps must not fill log_dir.
class FdSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit FdSink(int fd) : log_(fd, job::kMaxJobLogBytes) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const std::string text = job::loggable(std::string_view(msg.payload.data(), msg.payload.size()));
    spdlog::details::log_msg safe(msg);
    safe.payload = spdlog::string_view_t(text.data(), text.size());
    spdlog::memory_buf_t buf;
    formatter_->format(safe, buf);
    log_.write(std::string(buf.data(), buf.size()));  // best effort: logging never fails a job
  }
  void flush_() override {}

 private:
  job::CappedLog log_;
};

}  // namespace

PluginState& state() {
  static PluginState s;
  return s;
}

spdlog::logger& log() {
  auto& s = state();
  if (!s.log) {
    s.log = std::make_shared<spdlog::logger>("paratune", std::make_shared<SlurmSink>());
    s.log->set_level(spdlog::level::debug);
    s.log->set_pattern("%v");
  }
  return *s.log;
}

void attach_job_log(int fd) {
  auto sink = std::make_shared<FdSink>(fd);
  sink->set_pattern("%Y-%m-%dT%H:%M:%S%z [%l] %v");
  log().sinks().push_back(sink);
}

}  // namespace paratune::plugin
