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
#include "output_file.h"
#include "log_input.h"
#include "log_views.h"
#include "paratune/tuning/scan/log_stream.h"
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
const char* kFooter =
    "exit status: 0 ok, 1 the log cannot be read (--source index: the store is missing or stale) or the SVG\n"
    "written, 2 bad option, 3 --job names no selected job";

struct LogArgs {
  std::vector<std::string> paths;
  std::string svg_path, job, since, until, source = "auto";
  StoreChoice store;
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

void print_suspects(const std::vector<SuspectNode>& nodes, bool as_json, size_t min_jobs, double threshold) {
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
}

// The SVG, written whole or not at all; "wrote FILE" on stderr (stdout may be the table or JSON).
int write_svg(const LogArgs& a, const PlotSample& plots) {
  if (!a.job.empty() && !plots.found_requested()) {
    std::fprintf(stderr, "paratune log: --job %s: no such job among the selected ones; %s not written\n",
                 a.job.c_str(), a.svg_path.c_str());
    return kNothingFits;
  }
  PlotOptions o;
  o.threshold = a.threshold;
  try {
    write_output_file(a.svg_path, plots_svg(plots.entries(), plots.options(o)));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "paratune log: cannot write %s: %s\n", a.svg_path.c_str(), e.what());
    return kFailure;
  }
  std::fprintf(stderr, "paratune log: wrote %s\n", a.svg_path.c_str());
  return kOk;
}

int run(const LogArgs& a) {
  LogFilter filter = a.filter;
  if (!a.since.empty()) filter.since = parse_date(a.since);  // checked by the option's validator
  if (!a.until.empty()) filter.until = parse_date_end(a.until);  // a date alone: through its last second
  StoreChoice store = a.store;
  store.mode = a.source == "stream" ? StoreChoice::Mode::kStream
               : a.source == "index" ? StoreChoice::Mode::kIndex
                                     : StoreChoice::Mode::kAuto;
  // One pass over the log feeds every view asked for; each keeps only what it prints.
  PlotSample plots(a.threshold, a.job);
  SuspectTally suspects(a.threshold);
  OomPrinter ooms(a.as_json);
  JsonArrayPrinter json;
  LogTablePrinter table(a.threshold);
  const bool svg = !a.svg_path.empty();
  const LogStream in = stream_logs(a.paths, "paratune log", filter, [&](LogEntry& e) {
    if (a.suspects) suspects.add(e);
    else if (a.ooms) ooms.add(e);
    else if (a.as_json) json.add(row_json(e, a.threshold));
    else table.add(e);
    if (svg) plots.add(e);  // last: it may keep the entry itself
  }, store);
  if (!in.any) return kFailure;
  const int status = in.complete ? kOk : kFailure;  // what could be read is shown; the status says not all
  if (a.suspects) print_suspects(suspects.nodes(a.min_jobs), a.as_json, a.min_jobs, a.threshold);
  else if (a.ooms) ooms.finish();
  else if (a.as_json) json.finish();
  else table.finish();
  if (svg)
    if (const int s = write_svg(a, plots); s != kOk) return s;
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
  app.add_option("--until", a->until, "jobs that ended at or before DATE (forms as --since)")
      ->type_name("DATE")
      ->check(options::parsed_by([](const std::string& v) { parse_date(v); }));
  app.add_option("--user", a->filter.user, "only this user's jobs")->type_name("U");
  app.add_option("--partition", a->filter.partition, "only this partition's jobs")->type_name("P");
  app.add_option("--job-id", a->filter.job_id, "only this job")->type_name("ID");
  app.add_option("--gpu", a->filter.gpu, "only jobs on this GPU model (as the table's gpu column shows it)")
      ->type_name("GPU");
  app.add_option("--framework", a->filter.framework, "only jobs of this framework (the scenario's, e.g. megatron)")
      ->type_name("NAME");
  app.add_option("--source", a->source,
                 "auto (default): the history store (`paratune index`) when it is current for these logs, else\n"
                 "the logs; index: the store or an error; stream: the logs. The same result either way")
      ->type_name("auto|index|stream")
      ->check(CLI::IsMember({"auto", "index", "stream"}));
  app.add_option("--index", a->store.path, "the history store (default: tuning-index.sqlite beside the first --log)")
      ->type_name("FILE");
  app.add_option("--threshold", a->threshold,
                 "the suspect threshold on the ratio (default 0.7; widened for uncalibrated jobs)")
      ->type_name("R")
      ->check(options::number_in(0, 10, false, false, "a ratio in [0, 10] (0: judge no ratio, as suspect_ratio = 0)"));
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
