#include "paratune/tuning/memory_headroom.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cmath>
#include <map>

#include "paratune/advisor/advisor.h"
#include "paratune/advisor/catalog.h"
#include "paratune/advisor/model.h"
#include "paratune/tuning/recognizers.h"

namespace paratune::tuning {

using namespace paratune::advisor;

namespace {

// What an OOM job needed at least: the whole GPU, or what was in use when the allocation failed plus that
// allocation, whichever is more (the message's capacity may be a little below the catalog's: CUDA's context).
// The figures are read again from the message the framework printed, not taken from the record's own fields, which
// a report may set to anything (500 GiB "tried" beside "Tried to allocate 20.00 MiB").
double oom_need(const OomRecord& o, double capacity) {
  double need = capacity;
  const auto f = recognise_oom(o.message);
  if (f && f->capacity_gib && f->free_gib && f->tried_gib)
    need = std::max(need, *f->capacity_gib - *f->free_gib + *f->tried_gib);
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
  out->user = e.user;
  out->oom = e.oom.has_value() && unconfirmed_oom(e).empty();
  // A logged peak beyond the GPU's memory did not happen (the allocator cannot hand out more; 5 % for GB vs GiB
  // and the catalog's rounding).
  if (!out->oom && *e.peak_memory_gib > 1.05 * out->capacity_gib) return "memory: peak above the GPU's memory";
  out->need_gib = out->oom ? oom_need(*e.oom, out->capacity_gib) : *e.peak_memory_gib;
  return "";
}

bool near_limit(const LogEntry& e, const HeadroomOptions& o) {
  const double cap = e.gpu_memory_gib();
  return e.peak_memory_gib && cap > 0 && *e.peak_memory_gib >= o.near_limit * cap;
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string unconfirmed_oom(const LogEntry& e) {
  if (!e.oom) return "no OOM record";
  // The plugin's state: "completed", "failed (exit N)", "killed (signal N)", "unknown" (Slurm's own words from
  // other writers: FAILED, OUT_OF_MEMORY). Only a step that ended badly died of anything.
  const std::string st = lower(e.state);
  const bool failed = st.rfind("failed", 0) == 0 || st.rfind("killed", 0) == 0 || st.rfind("out_of_memory", 0) == 0;
  if (!failed) return "memory: OOM record of a step that did not fail (state '" + e.state.substr(0, 40) + "')";
  if (!recognise_oom(e.oom->message)) return "memory: OOM record without PyTorch's or NCCL's out-of-memory message";
  return "";
}

void add_memory_evidence(const LogEntry& e, const HeadroomOptions& o, std::vector<MemoryEvidence>* out,
                         SkipTally* skipped) {
  const std::string unconfirmed = e.oom ? unconfirmed_oom(e) : "";
  if (!unconfirmed.empty() && skipped) ++(*skipped)[unconfirmed];
  if (!(e.oom && unconfirmed.empty()) && !near_limit(e, o)) return;
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

namespace {

// One job's head-room: its shortfall rounded up to the step, strictly above an OOM job's (so its layout no longer
// fits), at most max_fraction of the GPU.
double job_headroom(const MemoryEvidence& m, const HeadroomOptions& o) {
  const double s = m.shortfall_gib();
  double h = s <= 0 ? 0 : std::ceil(s / o.step_gib) * o.step_gib;
  if (m.oom && h <= s) h += o.step_gib;
  if (m.oom && s <= 0) h = o.step_gib;  // the model said it fits with room to spare, yet it died
  return std::min(h, o.max_fraction * m.capacity_gib);
}

std::string gib(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f GiB", v);
  return b;
}

struct UserClaim {  // the largest head-room one user's evidence asks for, and the job that asks it
  double h = 0, shortfall = 0;
  const MemoryEvidence* job = nullptr;
};

// The group's head-room from its users' claims: the largest a second user's evidence supports, a trusted user's,
// or the largest claim cut to what one user's evidence may set alone.
void settle(HeadroomGroup& g, std::vector<UserClaim> claims, const HeadroomOptions& o, double capacity) {
  std::stable_sort(claims.begin(), claims.end(), [](const UserClaim& a, const UserClaim& b) { return a.h > b.h; });
  const UserClaim& top = claims.front();
  const double alone = std::floor(o.single_user_fraction * capacity / o.step_gib) * o.step_gib;
  double h = std::min(top.h, alone);
  const UserClaim* by = &top;
  if (claims.size() > 1 && claims[1].h > h) { h = claims[1].h; by = &claims[1]; }
  for (const auto& c : claims)
    if (o.trusted_users.count(c.job->user) && c.h > h) { h = c.h; by = &c; }
  g.headroom_gib = h;
  g.worst_job = by->job->job_id;
  g.worst_shortfall_gib = by->shortfall;
  if (top.h > h)
    g.held_back = "job " + top.job->job_id + " of " + (top.job->user.empty() ? "(no user)" : top.job->user) +
                  " asked " + gib(top.h) + "; one user's evidence sets at most " + gib(alone) +
                  " (a second user's or --trust-user for more)";
}

}  // namespace

std::vector<HeadroomGroup> learn_headroom(const std::vector<MemoryEvidence>& evidence, const HeadroomOptions& o) {
  std::map<std::pair<std::string, std::string>, HeadroomGroup> groups;
  std::map<std::pair<std::string, std::string>, std::map<std::string, UserClaim>> claims;
  std::map<std::pair<std::string, std::string>, double> capacity;
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> order;  // users by first appearance
  for (const auto& m : evidence) {
    const std::pair<std::string, std::string> key{m.gpu, m.framework};
    HeadroomGroup& g = groups[key];
    g.gpu = m.gpu;
    g.framework = m.framework;
    (m.oom ? g.oom_jobs : g.near_limit_jobs)++;
    capacity[key] = m.capacity_gib;
    if (!claims[key].count(m.user)) order[key].push_back(m.user);
    UserClaim& c = claims[key][m.user];
    const double h = job_headroom(m, o);
    if (!c.job || h > c.h) c = {h, m.shortfall_gib(), &m};
  }
  std::vector<HeadroomGroup> out;
  for (auto& [k, g] : groups) {
    std::vector<UserClaim> v;
    for (const auto& user : order[k]) v.push_back(claims[k][user]);
    g.users = v.size();
    settle(g, std::move(v), o, capacity[k]);
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<MemoryEntry> memory_entries(const std::vector<HeadroomGroup>& groups) {
  std::vector<MemoryEntry> out;
  for (const auto& g : groups)
    out.push_back({g.gpu, g.framework, g.headroom_gib, int(g.oom_jobs), int(g.near_limit_jobs)});
  return out;
}

}  // namespace paratune::tuning
