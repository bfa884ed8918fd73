#include "paratune/tuning/portability.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "paratune/tuning/svg.h"

namespace paratune::tuning {

namespace {

std::string or_unknown(const std::string& s) { return s.empty() ? "unknown" : s; }

}  // namespace

std::string Platform::key() const { return or_unknown(partition) + "/" + or_unknown(gpu) + "/" + or_unknown(fabric); }

Platform platform_of(const LogEntry& e) {
  return {e.partition, e.scenario ? e.scenario->cluster.gpu : e.gpu_model, e.fabric()};
}

std::optional<Platform> parse_platform(const std::string& key) {
  const size_t a = key.find('/'), b = a == std::string::npos ? a : key.find('/', a + 1);
  if (b == std::string::npos || key.find('/', b + 1) != std::string::npos) return std::nullopt;
  Platform p{key.substr(0, a), key.substr(a + 1, b - a - 1), key.substr(b + 1)};
  if (p.partition.empty() || p.gpu.empty() || p.fabric.empty()) return std::nullopt;
  return p;
}

std::string problem_of(const LogEntry& e) {
  if (!e.scenario) return "";
  return (e.scenario->model.name.empty() ? "unnamed" : e.scenario->model.name) + "@" +
         std::to_string(e.scenario->model.seq_len);
}

double harmonic_portability(const std::vector<double>& e) {
  if (e.empty()) return 0;
  double inv = 0;
  for (double x : e) {
    if (!(x > 0) || !std::isfinite(x)) return 0;  // does not run on one platform: P = 0 (Pennycook)
    inv += 1 / x;
  }
  return double(e.size()) / inv;
}

void PortabilityTally::add(const LogEntry& e) {
  if (!e.scenario || e.partition.empty()) {
    ++skipped_;
    return;
  }
  ++used_;
  const Platform pl = platform_of(e);
  const std::string problem = problem_of(e), key = pl.key();
  const auto achieved = e.achieved_tokens_per_s_per_gpu(), predicted = e.predicted_per_gpu();
  ran_on_[problem].emplace(key, pl);  // the first platform seen with that key stands for it
  There& t = there_[{problem, key}];
  if (predicted) t.best_predicted = std::max(t.best_predicted, *predicted);
  if (achieved) t.best_achieved = std::max(t.best_achieved, *achieved);
  Own& o = apps_[{problem, e.framework()}][key];
  ++o.jobs;
  o.ooms += e.oom.has_value();
  if (!achieved) return;
  ++o.measured;
  if (*achieved > o.achieved) {  // the first job with the best figure names it
    o.achieved = *achieved;
    o.best_job = e.job_id;
  }
}

PortabilityReport PortabilityTally::report(const PortabilityOptions& opt) const {
  PortabilityReport rep;
  rep.jobs_used = used_;
  rep.jobs_skipped = skipped_;
  for (const auto& [app, own] : apps_) {
    ApplicationPortability ap;
    ap.problem = app.first;
    ap.framework = app.second;
    std::vector<Platform> H = opt.platforms;
    if (H.empty())
      for (const auto& [k, pl] : ran_on_.at(app.first)) H.push_back(pl);
    std::vector<double> ep, ea;
    for (const Platform& pl : H) {
      PlatformEfficiency r;
      r.platform = pl;
      if (auto t = there_.find({app.first, pl.key()}); t != there_.end()) {
        r.best_predicted = t->second.best_predicted;
        r.best_achieved = t->second.best_achieved;
      }
      if (auto o = own.find(pl.key()); o != own.end()) {
        r.jobs = o->second.jobs;
        r.measured = o->second.measured;
        r.ooms = o->second.ooms;
        r.achieved = o->second.achieved;
        r.best_job = o->second.best_job;
      }
      if (r.measured == 0) {
        r.why_zero = r.jobs == 0 ? "not run" : r.ooms == r.jobs ? "died of OOM" : "no achieved figures";
      } else {
        if (r.best_predicted > 0) r.e_predicted = r.achieved / r.best_predicted;
        else r.why_zero = "no prediction";
        if (r.best_achieved > 0) r.e_application = r.achieved / r.best_achieved;
      }
      ap.platforms.push_back(r);
      ep.push_back(r.e_predicted);
      ea.push_back(r.e_application);
    }
    ap.p_predicted = harmonic_portability(ep);
    ap.p_application = harmonic_portability(ea);
    rep.applications.push_back(std::move(ap));
  }
  return rep;
}

PortabilityReport portability(const std::vector<const LogEntry*>& entries, const PortabilityOptions& o) {
  PortabilityTally t;
  for (const LogEntry* e : entries) t.add(*e);
  return t.report(o);
}

std::string portability_svg(const PortabilityReport& r) {
  const double row_h = 150, left = 70, bar_w = 18, gap = 26, top = 40;
  size_t widest = 1;
  for (const auto& a : r.applications) widest = std::max(widest, a.platforms.size());
  const double width = left + double(widest) * (2 * bar_w + gap) + 220;
  const double height = top + row_h * double(std::max<size_t>(1, r.applications.size())) + 20;
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    svg::num(width) + "\" height=\"" + svg::num(height) + "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  out += svg::text(10, 20, "Performance portability (Pennycook's P): efficiency per platform; blue = achieved / best "
                           "predicted, green = achieved / best achieved") + "\n";
  double y0 = top;
  for (const auto& a : r.applications) {
    const double base = y0 + row_h - 30, scale = row_h - 60;  // e = 1 is `scale` pixels
    out += svg::text(10, y0 + 12, a.problem + " with " + a.framework, "font-weight=\"bold\"") + "\n";
    out += svg::line(left - 5, base - scale, left + double(a.platforms.size()) * (2 * bar_w + gap), base - scale,
                     "stroke:#999;stroke-dasharray:3,3") + svg::text(left - 40, base - scale + 4, "e = 1") + "\n";
    double x = left;
    for (const auto& p : a.platforms) {
      const double hp = std::min(1.5, p.e_predicted) * scale, ha = std::min(1.5, p.e_application) * scale;
      const std::string tip = p.platform.key() + ": " + (p.why_zero.empty() ? "" : p.why_zero + "; ");
      out += "<rect class=\"eff\" data-kind=\"predicted\" x=\"" + svg::num(x) + "\" y=\"" + svg::num(base - hp) +
             "\" width=\"" + svg::num(bar_w) + "\" height=\"" + svg::num(hp) + "\" fill=\"#4477aa\"><title>" +
             svg::escape(tip + "e_predicted " + svg::num(p.e_predicted)) + "</title></rect>\n";
      out += "<rect class=\"eff\" data-kind=\"application\" x=\"" + svg::num(x + bar_w) + "\" y=\"" +
             svg::num(base - ha) + "\" width=\"" + svg::num(bar_w) + "\" height=\"" + svg::num(ha) +
             "\" fill=\"#228833\"><title>" + svg::escape(tip + "e_application " + svg::num(p.e_application)) +
             "</title></rect>\n";
      out += svg::text(x, base + 14, p.platform.partition) + "\n";
      x += 2 * bar_w + gap;
    }
    out += "<text class=\"pp\" x=\"" + svg::num(x + 10) + "\" y=\"" + svg::num(base - scale / 2) + "\">" +
           svg::escape("P = " + svg::num(a.p_predicted) + " (predicted), " + svg::num(a.p_application) +
                       " (application)") + "</text>\n";
    y0 += row_h;
  }
  return out + "</svg>\n";
}

}  // namespace paratune::tuning
