#include "paratune/tuning/plots.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <random>

#include "paratune/advisor/breakdown_terms.h"
#include "paratune/advisor/model.h"
#include "paratune/tuning/report.h"
#include "paratune/tuning/svg.h"
#include "paratune/tuning/suspects.h"

namespace paratune::tuning {

namespace {

constexpr double kW = 800, kH = 400;                 // one panel
constexpr double kL = 70, kR = 240, kT = 40, kB = 50;  // margins (legend on the right: 26 characters fit)
// Distinct colours (Tableau 10 without its red, which marks suspects and the threshold, and its grey, which is the
// achieved bar, then four of Tableau 20's light tones), so that no two breakdown terms share one.
const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf",
                          "#bcbd22", "#393b79", "#8c6d31", "#aec7e8", "#ffbb78", "#98df8a", "#c5b0d5"};
constexpr size_t kColours = sizeof kPalette / sizeof kPalette[0];
static_assert(kColours >= std::size(advisor::kBreakdownTerms), "a breakdown term without its own colour");
constexpr size_t kLegendChars = 26;  // at 12 px sans-serif (about 0.6 em a character) within kR - 30

// A legend label cut to what the legend has room for (the whole text stays in the mark's tooltip).
std::string legend_label(const std::string& s) {
  return s.size() <= kLegendChars ? s : s.substr(0, kLegendChars - 3) + "...";
}

std::string f3(double v) {
  char b[48];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

std::string frame(const std::string& title, const std::string& xlabel, const std::string& ylabel) {
  std::string s = svg::rect(kL, kT, kW - kL - kR, kH - kT - kB, "#ffffff");
  s += svg::line(kL, kH - kB, kW - kR, kH - kB, "stroke:#333");
  s += svg::line(kL, kT, kL, kH - kB, "stroke:#333");
  s += svg::text(kL, 24, title, "font-size=\"15\" font-weight=\"bold\"");
  s += svg::text((kL + kW - kR) / 2, kH - 12, xlabel, "text-anchor=\"middle\"");
  s += svg::text(16, (kT + kH - kB) / 2, ylabel,
                 "text-anchor=\"middle\" transform=\"rotate(-90 16 " + svg::num((kT + kH - kB) / 2) + ")\"");
  return s;
}

// Log-scale ticks (1, 2, 5 x 10^k) inside [lo, hi].
std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> t;
  for (int e = int(std::floor(std::log10(lo))); e <= int(std::ceil(std::log10(hi))); ++e)
    for (double m : {1.0, 2.0, 5.0}) {
      const double v = m * std::pow(10.0, e);
      if (v >= lo * 0.999 && v <= hi * 1.001) t.push_back(v);
    }
  return t;
}

std::vector<double> lin_ticks(double lo, double hi, int n = 6) {
  const double raw = (hi - lo) / n;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) { step = m * mag; break; }
  std::vector<double> t;
  for (double v = std::ceil(lo / step) * step; v <= hi + 1e-9 * step; v += step) t.push_back(v);
  return t;
}

const LogEntry* pick_breakdown_job(const std::vector<const LogEntry*>& entries, const PlotOptions& o) {
  if (o.breakdown_job) return o.breakdown_job;
  const LogEntry* best = nullptr;
  for (const LogEntry* e : entries)
    if (e->scenario && e->layout && (!best || e->time >= best->time)) best = e;
  return best;
}

}  // namespace

std::string scatter_panel(const std::vector<const LogEntry*>& entries, const PlotOptions& o) {
  std::vector<const LogEntry*> pts;
  for (const LogEntry* e : entries)
    if (e->ratio()) pts.push_back(e);
  std::string s = "<g class=\"panel scatter\">\n";
  const size_t total = std::max(o.jobs_with_ratio, pts.size());
  s += frame("Predicted vs achieved step time (" + std::to_string(total) + " jobs" +
                 (total > pts.size() ? ", " + std::to_string(pts.size()) + " drawn at random)" : ")"),
             "predicted step time (s)", "achieved median step time (s)");
  if (pts.empty()) {
    s += svg::text(kW / 2, kH / 2, "no job with both a prediction and an achieved step time", "text-anchor=\"middle\"");
    return s + "</g>\n";
  }
  double lo = 1e300, hi = 0;
  for (const LogEntry* e : pts) {
    lo = std::min({lo, e->predicted_step_s, *e->achieved_step_s});
    hi = std::max({hi, e->predicted_step_s, *e->achieved_step_s});
  }
  lo = std::pow(10.0, std::floor(std::log10(lo)));
  hi = std::pow(10.0, std::ceil(std::log10(hi)));
  if (hi <= lo) hi = lo * 10;
  const double pw = kW - kL - kR, ph = kH - kT - kB;
  auto X = [&](double v) { return kL + pw * (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)); };
  auto Y = [&](double v) { return kH - kB - ph * (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)); };
  for (double t : log_ticks(lo, hi)) {
    s += svg::line(X(t), kT, X(t), kH - kB, "stroke:#eee");
    s += svg::line(kL, Y(t), kW - kR, Y(t), "stroke:#eee");
    s += svg::text(X(t), kH - kB + 16, f3(t), "text-anchor=\"middle\" font-size=\"11\"");
    s += svg::text(kL - 6, Y(t) + 4, f3(t), "text-anchor=\"end\" font-size=\"11\"");
  }
  s += svg::line(X(lo), Y(lo), X(hi), Y(hi), "stroke:#555;stroke-dasharray:6 4", "identity");
  s += svg::text(X(hi) - 4, Y(hi) + 14, "y = x", "text-anchor=\"end\" font-size=\"11\"");
  size_t suspects = 0;
  for (const LogEntry* e : pts) {
    const bool bad = flagged(*e, o.threshold);
    suspects += bad;
    s += svg::circle(X(e->predicted_step_s), Y(*e->achieved_step_s), 4, bad ? "#d62728" : "#1f77b4",
                     bad ? "job suspect" : "job",
                     "job " + e->job_id + " (" + e->partition + "): predicted " + f3(e->predicted_step_s) +
                         " s, achieved " + f3(*e->achieved_step_s) + " s, ratio " + f3(*e->ratio()));
  }
  s += svg::circle(kW - kR + 20, kT + 10, 4, "#1f77b4", "legend", "ok");
  s += svg::text(kW - kR + 30, kT + 14, "job", "font-size=\"12\"");
  s += svg::circle(kW - kR + 20, kT + 30, 4, "#d62728", "legend", "suspect");
  s += svg::text(kW - kR + 30, kT + 34, "suspect (" + std::to_string(std::max(suspects, o.suspects)) + ")",
                 "font-size=\"12\"");
  s += svg::text(kW - kR + 12, kT + 60, "above the line:", "font-size=\"11\"");
  s += svg::text(kW - kR + 12, kT + 74, "slower than predicted", "font-size=\"11\"");
  return s + "</g>\n";
}

std::string ratio_panel(const std::vector<const LogEntry*>& entries, const PlotOptions& o) {
  std::map<std::string, std::vector<const LogEntry*>> by;
  for (const LogEntry* e : entries)
    if (e->ratio() && e->time > 0) by[e->partition.empty() ? "(none)" : e->partition].push_back(e);
  std::string s = "<g class=\"panel ratio\">\n";
  s += frame("Achieved / predicted throughput over time, per partition", "job end (UTC)", "ratio");
  if (by.empty()) {
    s += svg::text(kW / 2, kH / 2, "no job with a ratio and an end time", "text-anchor=\"middle\"");
    return s + "</g>\n";
  }
  long long t0 = std::numeric_limits<long long>::max(), t1 = 0;
  double rmax = 1.2;
  for (auto& [p, v] : by) {
    std::sort(v.begin(), v.end(), [](const LogEntry* a, const LogEntry* b) { return a->time < b->time; });
    for (const LogEntry* e : v) {
      t0 = std::min(t0, e->time);
      t1 = std::max(t1, e->time);
      rmax = std::max(rmax, *e->ratio());
    }
  }
  rmax = std::min(rmax * 1.05, 5.0);
  if (t1 <= t0) t1 = t0 + 3600;
  const double pw = kW - kL - kR, ph = kH - kT - kB;
  auto X = [&](long long t) { return kL + pw * double(t - t0) / double(t1 - t0); };
  auto Y = [&](double r) { return kH - kB - ph * std::min(r, rmax) / rmax; };
  for (double t : lin_ticks(0, rmax)) {
    s += svg::line(kL, Y(t), kW - kR, Y(t), "stroke:#eee");
    s += svg::text(kL - 6, Y(t) + 4, f3(t), "text-anchor=\"end\" font-size=\"11\"");
  }
  for (int i = 0; i <= 4; ++i) {
    const long long t = t0 + (t1 - t0) * i / 4;
    s += svg::text(X(t), kH - kB + 16, format_date(t), "text-anchor=\"middle\" font-size=\"10\"");
  }
  s += svg::line(kL, Y(1), kW - kR, Y(1), "stroke:#555;stroke-dasharray:6 4", "unity");
  // The thresholds the jobs shown are judged by: as given for calibrated predictions, widened for the others.
  bool calibrated = false, uncalibrated = false;
  for (const auto& [p, v] : by)
    for (const LogEntry* e : v) (e->predicted_calibrated ? calibrated : uncalibrated) = true;
  for (const bool cal : {true, false}) {
    if (cal ? !calibrated : !uncalibrated) continue;
    SuspectRule rule;
    rule.threshold = o.threshold;
    rule.calibrated = cal;
    const double t = rule.effective_threshold();
    s += svg::line(kL, Y(t), kW - kR, Y(t), "stroke:#d62728;stroke-dasharray:2 3", "threshold");
    s += svg::text(kW - kR - 4, Y(t) - 4,
                   "suspect below " + f3(t) + (cal ? " (calibrated prediction)" : " (uncalibrated prediction)"),
                   "text-anchor=\"end\" font-size=\"10\" fill=\"#d62728\"");
  }
  int k = 0;
  for (const auto& [p, v] : by) {
    const std::string color = kPalette[size_t(k) % kColours];
    std::string pts;
    for (const LogEntry* e : v) pts += svg::num(X(e->time)) + "," + svg::num(Y(*e->ratio())) + " ";
    if (v.size() > 1) s += "<polyline class=\"series\" fill=\"none\" stroke=\"" + color + "\" points=\"" + pts + "\"/>\n";
    for (const LogEntry* e : v)
      s += svg::circle(X(e->time), Y(*e->ratio()), 3, color, "ratio",
                       p + " job " + e->job_id + " " + format_date(e->time) + ": ratio " + f3(*e->ratio()));
    s += svg::rect(kW - kR + 14, kT + 6 + 18 * k, 10, 10, color, "legend", p);
    s += svg::text(kW - kR + 30, kT + 15 + 18 * k, legend_label(p + " (" + std::to_string(v.size()) + ")"),
                   "font-size=\"12\"");
    ++k;
  }
  return s + "</g>\n";
}

std::string breakdown_panel(const std::vector<const LogEntry*>& entries, const PlotOptions& o) {
  std::string s = "<g class=\"panel breakdown\">\n";
  const LogEntry* e = pick_breakdown_job(entries, o);
  if (!e) {
    s += frame("Step-time breakdown", "seconds per step", "");
    s += svg::text(kW / 2, kH / 2, "no job with a scenario and a plan", "text-anchor=\"middle\"");
    return s + "</g>\n";
  }
  advisor::Evaluator::Result r;
  try {
    const advisor::ModelParams p =
        o.calibration ? advisor::calibrated_params(*o.calibration, *e->scenario) : advisor::shipped_params();
    advisor::Evaluator ev(*e->scenario, e->scenario->training.framework, p);
    r = ev.evaluate(*e->layout);
  } catch (const std::exception& ex) {
    s += frame("Step-time breakdown of job " + e->job_id, "seconds per step", "");
    s += svg::text(kW / 2, kH / 2, std::string("cannot predict this job: ") + ex.what(), "text-anchor=\"middle\"");
    return s + "</g>\n";
  }
  if (!std::isfinite(r.step_s) || r.step_s <= 0) {
    s += frame("Step-time breakdown of job " + e->job_id, "seconds per step", "");
    s += svg::text(kW / 2, kH / 2, "cannot predict this job: the model gives no finite step time for its plan",
                   "text-anchor=\"middle\"");
    return s + "</g>\n";
  }
  const auto& b = r.br;
  const double total = r.step_s;
  const double achieved = e->achieved_step_s.value_or(0);
  const double xmax = std::max(total, achieved) * 1.1;
  const auto& l = *e->layout;
  const std::string model = e->scenario->model.name.empty() ? "" : e->scenario->model.name + ", ";
  s += frame("Step-time breakdown of job " + e->job_id + " (" + model + "tp" + std::to_string(l.tp) + " pp" +
                 std::to_string(l.pp) + " dp" + std::to_string(l.dp) + " cp" + std::to_string(l.cp) + ")",
             "seconds per step", "");
  const double pw = kW - kL - kR;
  auto X = [&](double v) { return kL + pw * v / xmax; };
  for (double t : lin_ticks(0, xmax)) {
    s += svg::line(X(t), kT, X(t), kH - kB, "stroke:#eee");
    s += svg::text(X(t), kH - kB + 16, f3(t), "text-anchor=\"middle\" font-size=\"11\"");
  }
  const double y1 = kT + 60, y2 = kT + 180, bh = 60;
  s += svg::text(kL + 4, y1 - 8, "predicted " + f3(total) + " s" + (o.calibration ? " (calibrated)" : ""), "font-size=\"12\"");
  double x = 0;
  int k = 0, legend = 0;
  for (const advisor::BreakdownTerm& term : advisor::kBreakdownTerms) {  // every term, the MoE and offload ones too
    const char* name = term.name;
    const double v = b.*term.field;
    const std::string color = kPalette[size_t(k) % kColours];
    if (v > 0 && std::isfinite(v)) {
      s += svg::rect(X(x), y1, X(x + v) - X(x), bh, color, "term", std::string(name) + ": " + f3(v) + " s");
      s += svg::rect(kW - kR + 14, kT + 6 + 18 * legend, 10, 10, color, "legend", name);
      s += svg::text(kW - kR + 30, kT + 15 + 18 * legend, legend_label(std::string(name) + " " + f3(v) + " s"),
                     "font-size=\"11\"");
      ++legend;
    }
    if (std::isfinite(v)) x += v;
    ++k;
  }
  if (achieved > 0) {
    s += svg::text(kL + 4, y2 - 8, "achieved (median) " + f3(achieved) + " s", "font-size=\"12\"");
    s += svg::rect(X(0), y2, X(achieved) - X(0), bh, "#7f7f7f", "achieved",
                   "achieved median " + f3(achieved) + " s over " + std::to_string(e->achieved_steps) + " steps");
    if (e->achieved_p10_s && e->achieved_p90_s)
      s += svg::line(X(*e->achieved_p10_s), y2 + bh / 2, X(*e->achieved_p90_s), y2 + bh / 2, "stroke:#000;stroke-width:2",
                     "spread");
  } else {
    s += svg::text(kL + 4, y2 + 20, "no achieved step time recorded", "font-size=\"12\"");
  }
  return s + "</g>\n";
}

struct PlotSample::Rng {
  std::mt19937_64 gen{20250301};
};

PlotSample::PlotSample(double threshold, std::string breakdown_job_id, size_t max_jobs)
    : threshold_(threshold), wanted_(std::move(breakdown_job_id)), max_(max_jobs), rng_(std::make_unique<Rng>()) {}
PlotSample::~PlotSample() = default;

void PlotSample::add(LogEntry& e) {
  if (e.ratio()) {
    // Only what the point panels read: the rest (scenario, nodes, notes) is most of an entry's memory.
    LogEntry point;
    point.job_id = e.job_id;
    point.partition = e.partition;
    point.time = e.time;
    point.predicted_step_s = e.predicted_step_s;
    point.achieved_step_s = e.achieved_step_s;
    point.predicted_calibrated = e.predicted_calibrated;
    point.flagged = e.flagged;
    point.suspect_basis = e.suspect_basis;
    suspects_ += flagged(point, threshold_);
    if (kept_.size() < max_) {
      kept_.push_back(std::move(point));
    } else {  // reservoir sampling (Vitter's algorithm R): every job equally likely to be drawn
      const size_t j = std::uniform_int_distribution<size_t>(0, seen_)(rng_->gen);
      if (j < max_) kept_[j] = std::move(point);
    }
    ++seen_;
  }
  if (!wanted_.empty()) {
    if (e.job_id == wanted_) requested_ = std::move(e);  // the last line of the job, as the list's last match
  } else if (e.scenario && e.layout && (!latest_ || e.time >= latest_->time)) {
    latest_ = std::move(e);
  }
}

std::vector<const LogEntry*> PlotSample::entries() const {
  std::vector<const LogEntry*> out;
  for (const auto& e : kept_) out.push_back(&e);
  return out;
}

const LogEntry* PlotSample::breakdown() const {
  if (requested_) return &*requested_;
  return latest_ ? &*latest_ : nullptr;
}

PlotOptions PlotSample::options(PlotOptions o) const {
  o.breakdown_job = breakdown();
  o.jobs_with_ratio = seen_;
  o.suspects = suspects_;
  return o;
}

std::string plots_svg(const std::vector<const LogEntry*>& entries, const PlotOptions& o) {
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + svg::num(kW) + "\" height=\"" + svg::num(3 * kH) +
       "\" viewBox=\"0 0 " + svg::num(kW) + " " + svg::num(3 * kH) + "\" font-family=\"sans-serif\">\n";
  s += "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#fafafa\"/>\n";
  s += scatter_panel(entries, o);
  s += "<g transform=\"translate(0 " + svg::num(kH) + ")\">\n" + ratio_panel(entries, o) + "</g>\n";
  s += "<g transform=\"translate(0 " + svg::num(2 * kH) + ")\">\n" + breakdown_panel(entries, o) + "</g>\n";
  return s + "</svg>\n";
}

}  // namespace paratune::tuning
