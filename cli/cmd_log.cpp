// `paratune log [--log FILE] [--since DATE] [--user U] [--partition P] [--json] [--svg FILE] [--suspects]`:
// the site tuning log as a table of predicted vs achieved step times, as JSON, as SVG plots, or as the list of
// nodes that recur in suspect jobs (docs/tuning-log.md).
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "command.h"
#include "options.h"
#include "log_input.h"
#include "log_views.h"
#include "paratune/tuning/plots.h"
#include "paratune/tuning/report.h"
#include "paratune/tuning/stats.h"
#include "paratune/tuning/suspects.h"
#include "paratune/tuning/tuning_log.h"

namespace paratune::cli {
namespace {

using namespace paratune::tuning;

const char* kDescription =
    "Show the site tuning log (default /var/log/paratune/tuning.jsonl): one row per job with the predicted and\n"
    "the achieved (median) step time and their ratio = achieved/predicted throughput; '!' marks a suspect job\n"
    "(flagged by the plugin, or ratio below the threshold, default 0.7: as is when the job's prediction was\n"
    "calibrated, widened by the model's out-of-sample error (40 %, to 0.42) when it was not).\n"
    "--log may be given several times; a directory means every tuning log below it (one per node, gathered by\n"
    "a log shipper), a quoted pattern is expanded. The logs are merged with one line per job id: the most\n"
    "complete copy wins (achieved figures, then an OOM record, then scenario and plan, then the later end).\n"
    "Lines of the log that cannot be read are reported on stderr as FILE:LINE: problem and skipped.";
const char* kFooter = "exit status: 0 ok, 1 the log cannot be read or the SVG written, 2 bad option";

struct LogArgs {
  std::vector<std::string> paths;
  std::string svg_path, job, since;
  LogFilter filter;
  bool as_json = false, suspects = false, ooms = false;
  double threshold = kDefaultSuspectThreshold;
  size_t min_jobs = 2;
};

std::string fixed(double v, int prec = 3) {
  char b[48];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

nlohmann::json row_json(const LogEntry& e, double threshold) {
  nlohmann::json j = {{"line", e.line},           {"job_id", e.job_id},     {"user", e.user},
                      {"partition", e.partition}, {"time", e.time},         {"nodes", e.nodes},
                      {"node_list", e.node_names}, {"gpu_model", e.gpu_model}, {"report", e.report},
                      {"predicted_step_s", e.predicted_step_s}};
  j["achieved_step_s"] = e.achieved_step_s ? nlohmann::json(*e.achieved_step_s) : nlohmann::json(nullptr);
  if (e.achieved_p10_s) j["achieved_p10_s"] = *e.achieved_p10_s;
  if (e.achieved_p90_s) j["achieved_p90_s"] = *e.achieved_p90_s;
  j["steps"] = e.achieved_steps;
  j["ratio"] = e.ratio() ? nlohmann::json(*e.ratio()) : nlohmann::json(nullptr);
  j["suspect"] = flagged(e, threshold);
  // What the verdict was judged against: the plugin's recorded basis when it flagged the job, else ours.
  j["suspect_basis"] = e.flagged && !e.suspect_basis.empty() ? e.suspect_basis : suspect_rule(e, threshold).basis();
  return j;
}

void print_table(const std::vector<const LogEntry*>& rows, double threshold) {
  std::printf("%-16s %-10s %-10s %-10s %5s %-16s %10s %10s %7s\n", "end (UTC)", "job", "user", "partition", "nodes",
              "gpu", "pred s", "achieved s", "ratio");
  std::vector<double> ratios;
  size_t suspects = 0;
  for (const LogEntry* e : rows) {
    const auto r = e->ratio();
    const bool bad = flagged(*e, threshold);
    suspects += bad;
    if (r) ratios.push_back(*r);
    std::printf("%-16s %-10.10s %-10.10s %-10.10s %5d %-16.16s %10s %10s %7s%s\n",
                e->time ? format_date(e->time).c_str() : "-", e->job_id.c_str(), e->user.c_str(),
                e->partition.c_str(), e->nodes, e->gpu_model.c_str(),
                e->predicted_step_s > 0 ? fixed(e->predicted_step_s).c_str() : "-",
                e->achieved_step_s ? fixed(*e->achieved_step_s).c_str() : "-", r ? fixed(*r, 2).c_str() : "-",
                bad ? " !" : (e->achieved_step_s || e->report.empty() ? "" : ("  " + e->report).c_str()));
  }
  const RobustStats st = robust_stats(ratios);
  SuspectRule uncal;
  uncal.threshold = threshold;
  std::printf("\n%zu jobs, %zu with an achieved step time; ratio median %s (p10 %s, p90 %s); %zu suspect (< %s if "
              "calibrated, < %s if not)\n",
              rows.size(), ratios.size(), st.n ? fixed(st.median, 2).c_str() : "-",
              st.n ? fixed(st.p10, 2).c_str() : "-", st.n ? fixed(st.p90, 2).c_str() : "-", suspects,
              fixed(threshold, 2).c_str(), fixed(uncal.effective_threshold(), 2).c_str());
}

int run(const LogArgs& a) {
  const std::vector<std::string>& paths = a.paths;
  const std::string &svg_path = a.svg_path, &job = a.job;
  LogFilter filter = a.filter;
  if (!a.since.empty()) filter.since = parse_date(a.since);  // checked by the option's validator
  const bool as_json = a.as_json, suspects = a.suspects, ooms = a.ooms;
  const double threshold = a.threshold;
  const size_t min_jobs = a.min_jobs;
  const LogRead in = read_logs(paths, "paratune log");
  if (!in.any) return kFailure;
  const int status = in.complete ? kOk : kFailure;  // what could be read is shown; the status says not all
  const auto& log = in.log;
  std::vector<const LogEntry*> rows;
  for (const auto& e : log.entries)
    if (filter.matches(e)) rows.push_back(&e);

  if (!svg_path.empty()) {
    PlotOptions o;
    o.threshold = threshold;
    if (!job.empty()) {
      for (const LogEntry* e : rows)
        if (e->job_id == job) o.breakdown_job = e;
      if (!o.breakdown_job) std::fprintf(stderr, "paratune log: --job %s: not among the selected jobs\n", job.c_str());
    }
    std::ofstream out(svg_path, std::ios::trunc);
    out << plots_svg(rows, o);
    if (!out.good()) {
      std::fprintf(stderr, "paratune log: cannot write %s\n", svg_path.c_str());
      return kFailure;
    }
  }
  if (suspects) {
    const auto nodes = suspect_nodes(rows, threshold, min_jobs);
    if (as_json) {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& n : nodes)
        j.push_back({{"node", n.node}, {"flagged_jobs", n.flagged_jobs}, {"jobs", n.jobs}, {"job_ids", n.job_ids}});
      std::printf("%s\n", j.dump(2).c_str());
    } else if (nodes.empty()) {
      std::printf("no node recurs in %zu or more suspect jobs (threshold %s)\n", min_jobs, fixed(threshold, 2).c_str());
    } else {
      std::printf("%-20s %8s %6s  %s\n", "node", "suspect", "jobs", "suspect job ids");
      for (const auto& n : nodes) {
        std::string ids;
        for (size_t k = 0; k < n.job_ids.size() && k < 10; ++k) ids += (k ? " " : "") + n.job_ids[k];
        if (n.job_ids.size() > 10) ids += " ...";
        std::printf("%-20s %8zu %6zu  %s\n", n.node.c_str(), n.flagged_jobs, n.jobs, ids.c_str());
      }
    }
    return status;
  }
  if (ooms) {
    print_ooms(rows, as_json);
    return status;
  }
  if (as_json) {
    nlohmann::json j = nlohmann::json::array();
    for (const LogEntry* e : rows) j.push_back(row_json(*e, threshold));
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    print_table(rows, threshold);
  }
  return status;
}

Action setup(CLI::App& app, const std::vector<std::string>&) {
  auto a = std::make_shared<LogArgs>();
  describe(app, kDescription);
  app.footer(kFooter);
  app.add_option("--log", a->paths,
                 "a tuning log, a directory of per-node logs or a quoted pattern (repeatable; default\n"
                 "/var/log/paratune/tuning.jsonl)")
      ->type_name("FILE");
  app.add_option("--since", a->since,
                 "jobs that ended at or after DATE (YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS][Z|+HH:MM], or @UNIX)")
      ->type_name("DATE")
      ->check(options::parsed_by([](const std::string& v) { parse_date(v); }));
  app.add_option("--user", a->filter.user, "only this user's jobs")->type_name("U");
  app.add_option("--partition", a->filter.partition, "only this partition's jobs")->type_name("P");
  app.add_option("--threshold", a->threshold,
                 "the suspect threshold on the ratio (default 0.7; widened for uncalibrated jobs)")
      ->type_name("R")
      ->check(options::number_in(0, 10, true, false, "a ratio in (0, 10]"));
  app.add_flag("--json", a->as_json, "the rows as a JSON array instead of the table");
  auto* svg = app.add_option("--svg", a->svg_path,
                             "also write plots: predicted vs achieved (with y = x), ratio over time per partition,\n"
                             "and the step-time breakdown of one job's plan (--job ID; default the latest)")
                  ->type_name("FILE");
  app.add_option("--job", a->job, "the job whose breakdown --svg plots")->type_name("ID")->needs(svg);
  auto* suspects = app.add_flag("--suspects", a->suspects, "list the nodes that recur in suspect jobs");
  app.add_option("--min-jobs", a->min_jobs, "with --suspects: in at least N suspect jobs (default 2)")
      ->type_name("N")
      ->check(options::integer_in(0, 1000000000))
      ->needs(suspects);
  app.add_flag("--oom", a->ooms, "list the jobs that died of an out-of-memory error, with the plan's predicted memory");
  return [a] { return run(*a); };
}

Register reg{"log", "the site tuning log: predicted vs achieved, plots (--svg), suspect nodes", setup};

}  // namespace
}  // namespace paratune::cli
