#include "paratune/tuning/job_summary.h"

#include <cstdio>

#include "paratune/tuning/suspects.h"

namespace paratune::tuning {

namespace {

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// Printable ASCII only, bounded: the text reaches scontrol's command line and sacct's column output.
std::string printable(const std::string& s, size_t limit) {
  std::string out;
  for (unsigned char c : s) {
    if (out.size() >= limit) break;
    out += (c >= 0x20 && c < 0x7f) ? char(c) : '?';
  }
  return out;
}

std::string oom_part(const LogEntry& e) {
  const OomRecord& o = *e.oom;
  std::string out = "died of " + std::string(o.kind == "nccl" ? "an NCCL allocation failure" :
                                             o.kind == "hip" ? "HIP out of memory" : "CUDA out of memory");
  const double predicted = o.predicted_gib.value_or(e.predicted_memory_gib);
  const double capacity = e.gpu_memory_gib();
  if (predicted > 0)
    out += " (predicted " + fmt("%.1f", predicted) + (capacity > 0 ? " of " + fmt("%.0f", capacity) : "") + " GiB)";
  return out;
}

}  // namespace

std::string layout_summary(const advisor::Layout& l) {
  std::string out = "tp=" + std::to_string(l.tp) + " pp=" + std::to_string(l.pp) + " dp=" + std::to_string(l.dp) +
                    " cp=" + std::to_string(l.cp) + " mb=" + std::to_string(l.micro_batch) +
                    " zero=" + std::to_string(l.zero_stage) + " rc=" + advisor::to_string(l.recompute);
  if (l.virtual_stages > 1) out += " vpp=" + std::to_string(l.virtual_stages);
  if (l.sequence_parallel) out += " sp";
  return out;
}

std::string job_summary(const LogEntry& e, double threshold) {
  std::string out = "paratune: ";
  out += e.framework().empty() ? "" : e.framework() + " ";
  out += e.layout ? layout_summary(*e.layout) : "no plan recorded";
  out += "; predicted " + (e.predicted_step_s > 0 ? fmt("%.3f", e.predicted_step_s) + " s/step" : std::string("-"));
  if (const auto r = e.ratio())
    out += ", achieved " + fmt("%.3f", *e.achieved_step_s) + " s (ratio " + fmt("%.2f", *r) + ")";
  else
    out += ", achieved: " + (e.report.empty() ? std::string("no report") : e.report);
  if (e.oom) out += "; " + oom_part(e);
  if (e.ratio() || e.flagged) out += std::string("; suspect: ") + (flagged(e, threshold) ? "yes" : "no");
  return printable(out, kMaxSummaryBytes);
}

}  // namespace paratune::tuning
