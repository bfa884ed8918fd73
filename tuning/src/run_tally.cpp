#include "paratune/tuning/run_tally.h"

#include <cstdio>
#include <string>
#include <vector>

#include "paratune/tuning/report.h"

namespace paratune::tuning {
namespace {

constexpr size_t kMaxKeptSamples = 200000;  // summarize_report's own bound (ReportLimits::max_samples)

// The figure a line gave instead of a step time, in the framework's words.
const char* figure_name(const Figures& f) {
  if (f.samples_per_s && *f.samples_per_s > 0) return "samples/s";
  if (f.tokens_per_s_per_gpu && *f.tokens_per_s_per_gpu > 0) return "tokens/s per GPU";
  if (f.tflops_per_gpu) return "TFLOP/s per GPU only";
  return "no throughput figure";
}

std::string fixed(double v, int decimals) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

std::string plural(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

std::optional<std::string> RunTally::unusable(const Figures& f, const StepContext& ctx) {
  ++unusable_;
  const auto missing = missing_context(f, ctx);
  std::string key = std::string(to_string(f.source)) + "|" + figure_name(f);
  for (const auto& m : missing) key += std::string("|") + m.what;
  if (!warned_.insert(key).second) return std::nullopt;
  std::string w = std::string("warning: ") + to_string(f.source) + " lines with " + figure_name(f) +
                  " and no step time are not recorded";
  if (missing.empty()) return w + ": the framework logs no figure a step time can be derived from";
  std::string what, remedy;
  for (size_t i = 0; i < missing.size(); ++i) {
    what += std::string(i ? ", " : "") + missing[i].what;
    remedy += std::string(i ? ", " : "") + missing[i].remedy;
  }
  return w + ": the " + what + (missing.size() == 1 ? " is" : " are") + " not known; pass " + remedy +
         " (warned once)";
}

void RunTally::recorded(const std::string& line) {
  ++recorded_;
  if (recorded_ <= kMaxKeptSamples) samples_ += line + "\n";
}

std::string RunTally::summary(const ReportDestination& dest) const {
  std::string out;
  const ReportSummary s = summarize_report(samples_);
  if (!s.valid) {
    out = "no step times recognised in the output";
  } else {
    out = plural(s.samples, "step", "steps");
    if (s.warmup_excluded) out += " (" + std::to_string(s.warmup_excluded) + " warm-up)";
    out += ", median step time " + fixed(s.step_time.median, 3) + " s, ";
    if (const auto tps = s.tokens_per_s()) out += fixed(*tps, 0) + " tokens/s";
    else out += "tokens/s not known (--global-batch and --seq-len give it)";
  }
  if (unusable_) out += ", " + plural(unusable_, "recognised line", "recognised lines") + " not usable (warned)";
  if (dest.path.empty()) {
    out += "; nothing written: no report path (--report FILE or $PARATUNE_REPORT)";
  } else if (dest.failed) {
    out += "; could not write " + dest.path + " (" + plural(dest.lines_appended, "line", "lines") + " appended)";
  } else if (dest.lines_appended == 0) {
    out += "; nothing appended to " + dest.path;
  } else {
    out += "; " + plural(dest.lines_appended, "line", "lines") + " appended to " + dest.path;
  }
  return out;
}

std::string no_report_path_warning() {
  return "warning: no report path (--report FILE or $PARATUNE_REPORT): the throughput of this run is not recorded";
}

}  // namespace paratune::tuning
