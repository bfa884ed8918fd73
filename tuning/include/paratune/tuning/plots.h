// The plots of `paratune log --svg FILE`: one SVG document with three panels.
//   1. predicted vs achieved step time per job (log-log; the y = x line; suspect jobs in red)
//   2. achieved/predicted ratio over time, one series per partition (lines at 1 and at the suspect threshold)
//   3. the stacked step-time breakdown of one job's plan (the model's terms), next to its achieved step time
// Each job point is a <circle class="job">, each ratio point a <circle class="ratio">, each breakdown term a
// <rect class="term"> (tests count them).
#pragma once

#include <string>
#include <vector>

#include "paratune/advisor/calibration_file.h"
#include "paratune/tuning/tuning_log.h"

namespace paratune::tuning {

struct PlotOptions {
  double threshold = 0.7;
  const LogEntry* breakdown_job = nullptr;          // nullptr: the latest job with a scenario and plan
  const advisor::Calibration* calibration = nullptr;  // applied to the breakdown when given
};

std::string scatter_panel(const std::vector<const LogEntry*>& entries, const PlotOptions& o);
std::string ratio_panel(const std::vector<const LogEntry*>& entries, const PlotOptions& o);
std::string breakdown_panel(const std::vector<const LogEntry*>& entries, const PlotOptions& o);

// The whole document (<?xml ...?><svg ...> the three panels </svg>).
std::string plots_svg(const std::vector<const LogEntry*>& entries, const PlotOptions& o = {});

}  // namespace paratune::tuning
