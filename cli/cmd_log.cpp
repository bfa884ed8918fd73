// `paratune log [--log FILE] [--since DATE] [--user U] [--partition P] [--json] [--svg FILE] [--suspects]`:
// the site tuning log as a table of predicted vs achieved step times, as JSON, as SVG plots, or as the list of
// nodes that recur in suspect jobs (docs/tuning-log.md).
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "command.h"
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

const char* kHelp =
    "usage: paratune log [--log FILE|DIR|GLOB]... [--since DATE] [--user U] [--partition P] [--threshold R]\n"
    "                    [--json] [--svg FILE [--job ID]] [--suspects [--min-jobs N]] [--oom]\n"
    "\n"
    "Show the site tuning log (default /var/log/paratune/tuning.jsonl): one row per job with the predicted and\n"
    "the achieved (median) step time and their ratio = achieved/predicted throughput; '!' marks a suspect job\n"
    "(flagged by the plugin, or ratio below the threshold, default 0.7: as is when the job's prediction was\n"
    "calibrated, widened by the model's out-of-sample error (40 %, to 0.42) when it was not).\n"
    "\n"
    "  --since DATE     jobs that ended at or after DATE (YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS][Z|+HH:MM], or @UNIX)\n"
    "  --user U, --partition P   only these jobs\n"
    "  --json           the rows as a JSON array instead of the table\n"
    "  --svg FILE       also write plots: predicted vs achieved (with y = x), ratio over time per partition,\n"
    "                   and the step-time breakdown of one job's plan (--job ID; default the latest)\n"
    "  --suspects       list the nodes that recur in suspect jobs (in at least --min-jobs, default 2)\n"
    "  --oom            list the jobs that died of an out-of-memory error, with the plan's predicted memory\n"
    "\n"
    "--log may be given several times; a directory means every tuning log below it (one per node, gathered by\n"
    "a log shipper), a quoted pattern is expanded. The logs are merged with one line per job id: the most\n"
    "complete copy wins (achieved figures, then an OOM record, then scenario and plan, then the later end).\n"
    "Lines of the log that cannot be read are reported on stderr as FILE:LINE: problem and skipped.\n"
    "exit status: 0 ok, 1 the log cannot be read or the SVG written, 2 bad option\n";

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

int run(const std::vector<std::string>& args) {
  std::vector<std::string> paths;
  std::string svg_path, job;
  LogFilter filter;
  bool as_json = false, suspects = false, ooms = false;
  double threshold = kDefaultSuspectThreshold;
  size_t min_jobs = 2;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool v = i + 1 < args.size();
    try {
      if (a == "--help" || a == "-h") { std::fputs(kHelp, stdout); return kOk; }
      if (a == "--json") as_json = true;
      else if (a == "--suspects") suspects = true;
      else if (a == "--oom") ooms = true;
      else if (a == "--log" && v) paths.push_back(args[++i]);
      else if (a == "--since" && v) filter.since = parse_date(args[++i]);
      else if (a == "--user" && v) filter.user = args[++i];
      else if (a == "--partition" && v) filter.partition = args[++i];
      else if (a == "--svg" && v) svg_path = args[++i];
      else if (a == "--job" && v) job = args[++i];
      else if (a == "--threshold" && v) {
        threshold = std::stod(args[++i]);
        if (!(threshold > 0 && threshold <= 10)) throw std::invalid_argument("--threshold: must be in (0, 10]");
      } else if (a == "--min-jobs" && v) {
        min_jobs = std::stoul(args[++i]);
      } else {
        std::fprintf(stderr, "paratune log: unknown or incomplete option '%s'\n%s", a.c_str(), kHelp);
        return kBadInput;
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "paratune log: %s: %s\n", a.c_str(), e.what());
      return kBadInput;
    }
  }
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

Register reg({"log", "the site tuning log: predicted vs achieved, plots (--svg), suspect nodes", run});

}  // namespace
}  // namespace paratune::cli
