#include "log_views.h"

#include <cstdio>

#include "paratune/tuning/job_summary.h"
#include "paratune/tuning/stats.h"
#include "paratune/tuning/suspects.h"

namespace paratune::cli {

using tuning::LogEntry;

namespace {

std::string fixed1(double v) {
  if (!(v > 0)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

std::string fixed(double v, int prec = 3) {
  char b[48];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

nlohmann::json opt(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

nlohmann::json oom_json(const LogEntry& e) {
  const auto& o = *e.oom;
  const double predicted = o.predicted_gib.value_or(e.predicted_memory_gib);
  return {{"job_id", e.job_id}, {"user", e.user}, {"partition", e.partition}, {"time", e.time},
          {"gpu_model", e.gpu_model}, {"framework", e.framework()}, {"model", e.model()},
          {"plan", e.layout ? tuning::layout_summary(*e.layout) : ""},
          {"predicted_memory_gib", predicted > 0 ? nlohmann::json(predicted) : nlohmann::json(nullptr)},
          {"gpu_memory_gib", e.gpu_memory_gib() > 0 ? nlohmann::json(e.gpu_memory_gib()) : nlohmann::json(nullptr)},
          {"kind", o.kind}, {"tried_gib", opt(o.tried_gib)}, {"capacity_gib", opt(o.capacity_gib)},
          {"free_gib", opt(o.free_gib)}, {"message", o.message}, {"file", e.file}, {"line", e.line}};
}

}  // namespace

void JsonArrayPrinter::add(const nlohmann::json& element) {
  // dump(2) of an array: "[\n", each element indented by two more spaces, ",\n" between, "\n]".
  const std::string text = element.dump(2);
  std::string out = n_++ ? ",\n  " : "[\n  ";
  for (char c : text) {
    out += c;
    if (c == '\n') out += "  ";  // no raw newline inside a dumped string: every one ends a line
  }
  std::fputs(out.c_str(), stdout);
}

void JsonArrayPrinter::finish() { std::fputs(n_ ? "\n]\n" : "[]\n", stdout); }

void LogTablePrinter::header() {
  if (started_) return;
  started_ = true;
  std::printf("%-16s %-10s %-10s %-10s %5s %-16s %10s %10s %7s\n", "end (UTC)", "job", "user", "partition", "nodes",
              "gpu", "pred s", "achieved s", "ratio");
}

void LogTablePrinter::add(const LogEntry& e) {
  header();
  ++rows_;
  const auto r = e.ratio();
  const bool bad = tuning::flagged(e, threshold_);
  suspects_ += bad;
  if (r) ratios_.push_back(*r);
  std::printf("%-16s %-10.10s %-10.10s %-10.10s %5d %-16.16s %10s %10s %7s%s\n",
              e.time ? tuning::format_date(e.time).c_str() : "-", e.job_id.c_str(), e.user.c_str(),
              e.partition.c_str(), e.nodes, e.gpu_model.c_str(),
              e.predicted_step_s > 0 ? fixed(e.predicted_step_s).c_str() : "-",
              e.achieved_step_s ? fixed(*e.achieved_step_s).c_str() : "-", r ? fixed(*r, 2).c_str() : "-",
              bad ? " !" : (e.achieved_step_s || e.report.empty() ? "" : ("  " + e.report).c_str()));
}

void LogTablePrinter::finish() {
  header();
  const tuning::RobustStats st = tuning::robust_stats(std::move(ratios_));
  tuning::SuspectRule uncal;
  uncal.threshold = threshold_;
  std::printf("\n%zu jobs, %zu with an achieved step time; ratio median %s (p10 %s, p90 %s); %zu suspect (< %s if "
              "calibrated, < %s if not)\n",
              rows_, st.n, st.n ? fixed(st.median, 2).c_str() : "-", st.n ? fixed(st.p10, 2).c_str() : "-",
              st.n ? fixed(st.p90, 2).c_str() : "-", suspects_, fixed(threshold_, 2).c_str(),
              fixed(uncal.effective_threshold(), 2).c_str());
}

void OomPrinter::add(const LogEntry& e) {
  if (!as_json_ && !started_)
    std::printf("%-16s %-10s %-10s %-16s %-10s %-5s %9s %6s  %s\n", "end (UTC)", "job", "partition", "gpu",
                "framework", "kind", "pred GiB", "GiB", "plan");
  started_ = true;
  ++rows_;
  if (!e.oom) return;
  ++ooms_;
  if (as_json_) return json_.add(oom_json(e));
  const double predicted = e.oom->predicted_gib.value_or(e.predicted_memory_gib);
  std::printf("%-16s %-10.10s %-10.10s %-16.16s %-10.10s %-5.5s %9s %6s  %s\n",
              e.time ? tuning::format_date(e.time).c_str() : "-", e.job_id.c_str(), e.partition.c_str(),
              e.gpu_model.c_str(), e.framework().c_str(), e.oom->kind.c_str(), fixed1(predicted).c_str(),
              fixed1(e.gpu_memory_gib()).c_str(), e.layout ? tuning::layout_summary(*e.layout).c_str() : "-");
}

void OomPrinter::finish() {
  if (as_json_) return json_.finish();
  if (!started_)
    std::printf("%-16s %-10s %-10s %-16s %-10s %-5s %9s %6s  %s\n", "end (UTC)", "job", "partition", "gpu",
                "framework", "kind", "pred GiB", "GiB", "plan");
  std::printf("\n%zu of %zu jobs died of an out-of-memory error\n", ooms_, rows_);
}

}  // namespace paratune::cli
