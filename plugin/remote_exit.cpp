// task_exit and exit of the remote context (slurmstepd): how the step's tasks ended on this node, and at the step's
// end on node 0 of the deciding step, once per job, the job's line in the site tuning log (the decision's record,
// the other nodes' checks, what the job's report says; written by job/tuning_log_writer.h), with admin_comment=yes
// its summary in the job's AdminComment (admin_comment.h), and this step's events in the node's metrics file.
// Nothing here fails the job: every problem is logged and counted.
#include <sys/wait.h>

#include <ctime>
#include <stdexcept>

#include "admin_comment.h"
#include "job/admin_comment_text.h"
#include "job/log_text.h"
#include "job/metrics_file.h"
#include "job/node_checks.h"
#include "job/report_reader.h"
#include "job/tuning_line.h"
#include "job/tuning_log_writer.h"
#include "job/tuning_record.h"
#include "remote.h"

namespace paratune::plugin::remote {

namespace {

constexpr int kReportTimeoutMs = 5000;

// The line into the site tuning log, where and how the policy says: its path, mode and group, indexed for
// `paratune summary --job` (job/tuning_log_writer.h). Throws when the line could not be appended.
void write_tuning_line(const std::string& text) {
  auto& s = state();
  const auto written = job::append_tuning_line(s.policy.log, s.config.log_dir, s.job.job_id, text);
  for (const auto& warning : written.warnings) log().warn("{}", warning);
  if (!written.error.empty()) throw std::runtime_error(written.error);
}

// One tuning-log line per job: the first deciding step of the job claims it (jobs/<id>/line, created O_EXCL in
// the job's root-owned directory); later deciding steps (several sruns in one salloc) write none.
// A marker that cannot be made (read-only log_dir, while the policy puts the tuning log elsewhere) must not cost
// the line: the step writes it, and the Slurm log says why the job may then have more than one.
job::LineClaim claim_tuning_line(const std::string& job_id) {
  const auto claim = job::claim_tuning_line(state().config.log_dir, job_id);
  if (!claim.problem.empty())
    log().warn("tuning log: cannot mark job {} as logged ({}); writing its line anyway", job_id, claim.problem);
  return claim;
}

// What the job achieved, from its report: read and parsed as the job's user in a bounded child, the fields made
// here from its typed answer (job/report_reader.h). A bad report never stops the line from being written; its
// "report" field then says why in the reader's fixed words, never the user's.
void add_report(nlohmann::json& line) {
  auto& s = state();
  if (s.report_path.empty()) {
    line["report"] = "missing";
    return;
  }
  auto fields = job::report_fields_as_user(s.report_path, s.user, line["predicted"], s.policy.suspect_ratio,
                                           kReportTimeoutMs);
  job::add_report_fields(line, std::move(fields),
                         s.node_names.empty() ? std::vector<std::string>{s.job.hostname} : s.node_names);
}

// What the other nodes' steps found (node_checks.h): their fingerprint checks and whether they saw the plan file.
void add_node_checks(nlohmann::json& line) {
  try {
    job::add_node_checks(line, job::collect_node_checks(job_directory().get()));
  } catch (const std::exception& e) {
    log().warn("tuning log: the other nodes' checks are not included: {}", e.what());
  }
}

// admin_comment=yes: the job's summary into its AdminComment (admin_comment.h), from the line just made; a failure
// is logged and counted, the job and its line are not affected.
void write_admin_comment(spank_t sp, const std::string& line_text, job::MetricsEvents& ev) {
  auto& s = state();
  std::string problem;
  std::string text;
  try {
    text = job::admin_comment_summary(line_text, s.policy.suspect_ratio);
    problem = set_admin_comment(item<uint32_t>(sp, S_JOB_ID, 0), text);
  } catch (const std::exception& e) {
    problem = e.what();
  }
  if (problem.empty()) {
    log().info("job {} step {}: AdminComment set: {}", s.job.job_id, s.job.step_id, text);
    return;
  }
  ev.failures.push_back("admin_comment");
  log().warn("job {} step {}: AdminComment not set: {}", s.job.job_id, s.job.step_id, job::capped(problem, 512));
}

// The job's tuning-log line (node 0 of the deciding step, once per job); its events go to `ev`.
void write_job_line(spank_t sp, job::MetricsEvents& ev) {
  auto& s = state();
  if (!s.decision) return;
  if (s.job.state.empty()) s.job.state = "unknown";
  if (item<uint32_t>(sp, S_JOB_NODEID, 0) != 0) return;  // one line per job: node 0 writes it
  std::string text;  // the line, once made: the AdminComment comes from it even when the log cannot take it
  bool give_back = false;  // this step made the job's marker: a line it cannot write gives the claim back
  try {
    const job::LineClaim claim = claim_tuning_line(s.job.job_id);
    if (!claim.write) {
      log().debug("job {} step {}: the job's tuning-log line was written by an earlier step", s.job.job_id,
                  s.job.step_id);
      return;
    }
    give_back = claim.problem.empty();
    auto line = job::tuning_record(s.job, *s.spec, s.decision->record, s.env_outcome, std::time(nullptr));
    if (!s.node_list_problem.empty()) line["node_list_withheld"] = s.node_list_problem;
    add_node_checks(line);
    add_report(line);
    job::line_events(line, ev);
    text = job::tuning_line_text(std::move(line));
    write_tuning_line(text);
    log().debug("job {} step {}: tuning-log line written", s.job.job_id, s.job.step_id);
    give_back = false;
  } catch (const std::exception& e) {
    ev.failures.push_back("tuning_log");
    log().error("exit: tuning log: {}", e.what());
  }
  if (give_back) {
    const std::string problem = job::release_tuning_line(s.config.log_dir, s.job.job_id);
    if (problem.empty())
      log().info("job {}: no tuning-log line written; a later step of the job may write it", s.job.job_id);
    else
      log().warn("job {}: no tuning-log line written, and its marker stays: {}", s.job.job_id, problem);
  }
  if (s.config.admin_comment && !text.empty()) write_admin_comment(sp, text, ev);
}

// metrics_file=: this step's events on this node into the node_exporter textfile (metrics_file.h).
void update_metrics(const job::MetricsEvents& ev) {
  const auto& path = state().config.metrics_file;
  if (path.empty() || ev.empty()) return;
  try {
    job::update_metrics_file(path, ev, std::time(nullptr));
  } catch (const std::exception& e) {
    log().warn("metrics file: {}", e.what());
  }
}

}  // namespace

void note_task_exit(spank_t sp) {
  // How the step ended, for the tuning log: the worst task status of this node wins.
  auto& s = state();
  int status = 0;
  if (!s.decision || spank_get_item(sp, S_TASK_EXIT_STATUS, &status) != ESPANK_SUCCESS) return;
  std::string st = "completed";
  if (WIFSIGNALED(status)) st = "killed (signal " + std::to_string(WTERMSIG(status)) + ")";
  else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) st = "failed (exit " + std::to_string(WEXITSTATUS(status)) + ")";
  if (s.job.state.empty() || s.job.state == "completed") s.job.state = st;
}

void end_step(spank_t sp) {
  auto& s = state();
  job::MetricsEvents ev;
  ev.partition = s.job.partition;
  ev.failures = s.metric_failures;
  write_job_line(sp, ev);
  update_metrics(ev);
}

}  // namespace paratune::plugin::remote
