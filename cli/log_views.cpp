#include "log_views.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "paratune/tuning/job_summary.h"

namespace paratune::cli {

using tuning::LogEntry;

namespace {

std::string fixed1(double v) {
  if (!(v > 0)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
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

void print_ooms(const std::vector<const LogEntry*>& rows, bool as_json) {
  nlohmann::json arr = nlohmann::json::array();
  size_t n = 0;
  if (!as_json)
    std::printf("%-16s %-10s %-10s %-16s %-10s %-5s %9s %6s  %s\n", "end (UTC)", "job", "partition", "gpu",
                "framework", "kind", "pred GiB", "GiB", "plan");
  for (const LogEntry* e : rows) {
    if (!e->oom) continue;
    ++n;
    if (as_json) {
      arr.push_back(oom_json(*e));
      continue;
    }
    const double predicted = e->oom->predicted_gib.value_or(e->predicted_memory_gib);
    std::printf("%-16s %-10.10s %-10.10s %-16.16s %-10.10s %-5.5s %9s %6s  %s\n",
                e->time ? tuning::format_date(e->time).c_str() : "-", e->job_id.c_str(), e->partition.c_str(),
                e->gpu_model.c_str(), e->framework().c_str(), e->oom->kind.c_str(),
                fixed1(predicted).c_str(), fixed1(e->gpu_memory_gib()).c_str(),
                e->layout ? tuning::layout_summary(*e->layout).c_str() : "-");
  }
  if (as_json) std::printf("%s\n", arr.dump(2).c_str());
  else std::printf("\n%zu of %zu jobs died of an out-of-memory error\n", n, rows.size());
}

}  // namespace paratune::cli
