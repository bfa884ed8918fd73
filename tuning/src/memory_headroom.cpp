#include "paratune/tuning/memory_headroom.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "paratune/advisor/advisor.h"
#include "paratune/advisor/catalog.h"
#include "paratune/advisor/model.h"

namespace paratune::tuning {

using namespace paratune::advisor;

namespace {

// What an OOM job needed at least: the whole GPU, or what was in use when the allocation failed plus that
// allocation, whichever is more (the message's capacity may be a little below the catalog's: CUDA's context).
double oom_need(const OomRecord& o, double capacity) {
  double need = capacity;
  if (o.capacity_gib && o.free_gib && o.tried_gib) need = std::max(need, *o.capacity_gib - *o.free_gib + *o.tried_gib);
  return need;
}

// Why a candidate cannot be used ("" when it can); fills `out`.
std::string evidence_of(const LogEntry& e, MemoryEvidence* out) {
  if (!e.scenario || !e.layout) return "memory: no scenario or plan";
  if (!is_gpu_key(e.scenario->cluster.gpu)) return "memory: unknown GPU";
  try {
    validate(*e.scenario);
    const Framework f = e.scenario->training.framework;
    if (!layout_problem(*e.scenario, *e.layout, f).empty()) return "memory: invalid plan";
    const Evaluator ev(*e.scenario, f, shipped_params());  // headroom_gib 0: the model's own reserve only
    out->job_id = e.job_id;
    out->gpu = gpu_spec(e.scenario->cluster.gpu).key;
    out->framework = to_string(f);
    out->capacity_gib = ev.capacity_gib();
    out->predicted_gib = ev.memory_gib(*e.layout);
  } catch (const std::exception&) {
    return "memory: scenario the model rejects";
  }
  out->oom = e.oom.has_value();
  out->need_gib = out->oom ? oom_need(*e.oom, out->capacity_gib) : *e.peak_memory_gib;
  return "";
}

bool candidate(const LogEntry& e, const HeadroomOptions& o) {
  if (e.oom) return true;
  const double cap = e.gpu_memory_gib();
  return e.peak_memory_gib && cap > 0 && *e.peak_memory_gib >= o.near_limit * cap;
}

}  // namespace

void add_memory_evidence(const LogEntry& e, const HeadroomOptions& o, std::vector<MemoryEvidence>* out,
                         SkipTally* skipped) {
  if (!candidate(e, o)) return;
  MemoryEvidence m;
  const std::string why = evidence_of(e, &m);
  if (why.empty()) out->push_back(std::move(m));
  else if (skipped) ++(*skipped)[why];
}

std::vector<MemoryEvidence> memory_evidence(const std::vector<LogEntry>& entries, const HeadroomOptions& o,
                                            SkipTally* skipped) {
  std::vector<MemoryEvidence> out;
  for (const auto& e : entries) add_memory_evidence(e, o, &out, skipped);
  return out;
}

std::vector<HeadroomGroup> learn_headroom(const std::vector<MemoryEvidence>& evidence, const HeadroomOptions& o) {
  std::map<std::pair<std::string, std::string>, HeadroomGroup> groups;
  for (const auto& m : evidence) {
    HeadroomGroup& g = groups[{m.gpu, m.framework}];
    g.gpu = m.gpu;
    g.framework = m.framework;
    (m.oom ? g.oom_jobs : g.near_limit_jobs)++;
    // Rounded up to the step; an OOM job's shortfall strictly below the head-room, so its layout no longer fits.
    const double s = m.shortfall_gib();
    double h = s <= 0 ? 0 : std::ceil(s / o.step_gib) * o.step_gib;
    if (m.oom && h <= s) h += o.step_gib;
    if (m.oom && s <= 0) h = o.step_gib;  // the model said it fits with room to spare, yet it died
    h = std::min(h, o.max_fraction * m.capacity_gib);
    if (g.worst_job.empty() || h > g.headroom_gib) {
      g.headroom_gib = h;
      g.worst_job = m.job_id;
      g.worst_shortfall_gib = s;
    }
  }
  std::vector<HeadroomGroup> out;
  for (auto& [k, g] : groups) out.push_back(std::move(g));
  return out;
}

std::vector<MemoryEntry> memory_entries(const std::vector<HeadroomGroup>& groups) {
  std::vector<MemoryEntry> out;
  for (const auto& g : groups)
    out.push_back({g.gpu, g.framework, g.headroom_gib, int(g.oom_jobs), int(g.near_limit_jobs)});
  return out;
}

}  // namespace paratune::tuning
