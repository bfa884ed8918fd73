// What `paratune run` tells its user about the output it scanned, so that no throughput is lost without a word:
//   - a warning, once per kind (framework, figure, what is missing), for recognised throughput lines that the
//     context cannot turn into a step time (torchtitan's per-GPU tokens/s without the global batch, sequence length
//     or world size; samples/s without the global batch), naming what is missing and what to pass;
//   - a one-line summary at exit: steps, median step time, tokens/s (the same warm-up rule and median the plugin
//     records at job end: summarize_report) and what was written where.
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <string>

#include "paratune/tuning/recognizers.h"

namespace paratune::tuning {

// Where the report lines went (the writer's view at exit).
struct ReportDestination {
  std::string path;           // empty: no report path was given
  size_t lines_appended = 0;  // sample and event lines written
  bool failed = false;        // the file could not be opened or written
};

class RunTally {
 public:
  // A recognised line for which report_line() gave nothing: the warning to print the first time its kind is seen
  // (without the "paratune run: " prefix), nullopt for a kind already warned about. Counted either way.
  std::optional<std::string> unusable(const Figures& f, const StepContext& ctx);
  // A sample line that was recorded (report_line()'s JSON, dumped).
  void recorded(const std::string& report_line);

  size_t unusable_lines() const { return unusable_; }
  size_t recorded_lines() const { return recorded_; }

  // "4 steps (1 warm-up), median step time 5.362 s, 24414 tokens/s; 6 lines appended to FILE", and what was not
  // recorded and why (without the "paratune run: " prefix).
  std::string summary(const ReportDestination& dest) const;

 private:
  std::set<std::string> warned_;
  std::string samples_;  // the recorded sample lines, as the report holds them
  size_t unusable_ = 0, recorded_ = 0;
};

// The warning for a run without a report path (without the "paratune run: " prefix).
std::string no_report_path_warning();

}  // namespace paratune::tuning
