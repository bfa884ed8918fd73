// The plots of `paratune log --svg FILE`: one SVG document with three panels.
//   1. predicted vs achieved step time per job (log-log; the y = x line; suspect jobs in red)
//   2. achieved/predicted ratio over time, one series per partition (lines at 1 and at the suspect threshold)
//   3. the stacked step-time breakdown of one job's plan (the model's terms), next to its achieved step time
// Each job point is a <circle class="job">, each ratio point a <circle class="ratio">, each breakdown term a
// <rect class="term"> (tests count them).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "paratune/advisor/calibration_file.h"
#include "paratune/tuning/tuning_log.h"

namespace paratune::tuning {

struct PlotOptions {
  double threshold = 0.7;
  const LogEntry* breakdown_job = nullptr;          // nullptr: the latest job with a scenario and plan
  const advisor::Calibration* calibration = nullptr;  // applied to the breakdown when given
  // When the entries are a sample (PlotSample): how many jobs had a ratio, and how many of them were suspect.
  size_t jobs_with_ratio = 0, suspects = 0;
};

// At most this many jobs are drawn as points: beyond it a plot is a cloud, and its SVG hundreds of megabytes.
inline constexpr size_t kMaxPlotJobs = 20000;

// What `paratune log --svg` plots, gathered from a streamed log in bounded memory: the jobs with a ratio (the
// points; past `max_jobs` a uniform random sample of that many, drawn with a fixed seed, so that the same log
// gives the same plot; only what the panels read is kept of each) and the job whose breakdown is drawn.
class PlotSample {
 public:
  PlotSample(double threshold, std::string breakdown_job_id = "", size_t max_jobs = kMaxPlotJobs);
  ~PlotSample();
  void add(LogEntry& e);  // may move from e
  std::vector<const LogEntry*> entries() const;
  // The requested job (breakdown_job_id), else the latest job with a scenario and plan; nullptr if none.
  const LogEntry* breakdown() const;
  bool found_requested() const { return requested_.has_value(); }
  PlotOptions options(PlotOptions o) const;  // o with the breakdown job and the totals filled in

 private:
  double threshold_;
  std::string wanted_;
  size_t max_, seen_ = 0, suspects_ = 0;
  std::vector<LogEntry> kept_;
  std::optional<LogEntry> latest_, requested_;
  struct Rng;
  std::unique_ptr<Rng> rng_;
};

std::string scatter_panel(const std::vector<const LogEntry*>& entries, const PlotOptions& o);
std::string ratio_panel(const std::vector<const LogEntry*>& entries, const PlotOptions& o);
std::string breakdown_panel(const std::vector<const LogEntry*>& entries, const PlotOptions& o);

// The whole document (<?xml ...?><svg ...> the three panels </svg>).
std::string plots_svg(const std::vector<const LogEntry*>& entries, const PlotOptions& o = {});

}  // namespace paratune::tuning
