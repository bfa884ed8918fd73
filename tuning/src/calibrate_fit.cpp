// The groups' fits (calibrate.h): which jobs form a group, who ran them, how much each user may weigh, the trimmed
// Huber fit of compute_scale (and network_scale) and what each group reports.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "calibrate_detail.h"
#include "huber_sum.h"
#include "paratune/advisor/catalog.h"
#include "paratune/tuning/calibrate.h"
#include "paratune/tuning/robust.h"

namespace paratune::tuning {

using namespace paratune::advisor;
using detail::ConfigIndex;
using detail::fmt;
using detail::golden;

namespace {

struct Group {
  std::string gpu, fabric, framework;
  std::vector<const Sample*> members;
  std::vector<StackKey> stacks;  // the (GPU, fabric, framework) stacks whose jobs it holds
};

std::string framework_of(const Sample& s) { return to_string(s.scenario().training.framework); }
std::string user_name(const Sample& s) { return s.user ? *s.user : "(no user)"; }

// Per (GPU, fabric, framework) when the stack has min_samples jobs; the rest pooled per (GPU, fabric) with
// framework "" (the fallback entry). Jobs of a stack with its own entry stay out of the fallback: they are
// described by their entry and would only pull the fallback towards their stack.
std::vector<Group> make_groups(const std::vector<Sample>& samples, const CalibrateOptions& o) {
  std::map<StackKey, std::vector<const Sample*>> by_stack;
  for (const auto& s : samples)
    by_stack[{gpu_spec(s.scenario().cluster.gpu).key, to_string(s.scenario().cluster.fabric),
              o.per_framework ? framework_of(s) : ""}].push_back(&s);
  std::vector<Group> out;
  std::map<std::pair<std::string, std::string>, Group> pooled;
  for (auto& [key, members] : by_stack) {
    const auto& [gpu, fabric, framework] = key;
    if (!framework.empty() && members.size() >= o.min_samples) {
      out.push_back({gpu, fabric, framework, members, {key}});
      continue;
    }
    Group& p = pooled[{gpu, fabric}];
    p.gpu = gpu;
    p.fabric = fabric;
    p.members.insert(p.members.end(), members.begin(), members.end());
    p.stacks.push_back(key);
  }
  for (auto& [key, g] : pooled) out.push_back(std::move(g));
  return out;
}

std::string stacks_of(const std::vector<const Sample*>& members) {
  std::map<std::string, size_t> n;
  for (const Sample* s : members) ++n[framework_of(*s)];
  std::string out;
  for (const auto& [fw, k] : n) out += (out.empty() ? "" : ", ") + fw;
  return out;
}

// Who ran the jobs: user_of[i] indexes names.
struct Users {
  std::vector<std::string> names;
  std::vector<size_t> of;
  bool any_trusted = false;
};

Users users_of(const std::vector<Sample>& jobs, const CalibrateOptions& o) {
  Users u;
  std::map<std::string, size_t> at;
  for (const auto& s : jobs) {
    const auto [it, fresh] = at.emplace(user_name(s), u.names.size());
    if (fresh) u.names.push_back(it->first);
    u.of.push_back(it->second);
  }
  for (const auto& n : u.names) u.any_trusted = u.any_trusted || o.trusted_users.count(n) > 0;
  return u;
}

bool enough_users(const Users& u, const CalibrateOptions& o) { return u.any_trusted || u.names.size() >= o.min_users; }

std::string not_enough_users(const Users& u, const CalibrateOptions& o) {
  std::string who;
  for (size_t k = 0; k < u.names.size() && k < 3; ++k) who += (k ? ", " : "") + u.names[k];
  return "kept shipped parameters: the jobs of " + std::to_string(u.names.size()) + " user" +
         (u.names.size() == 1 ? "" : "s") + " (" + who + ") < " + std::to_string(o.min_users) +
         " and none trusted (--trust-user)";
}

size_t multinode_of(const std::vector<Sample>& jobs);

// The multi-node jobs alone carry the network's evidence (a single-node job's prediction does not depend on
// network_scale), so the user rules apply to them again: network_scale is fitted only from the multi-node jobs of
// enough users (or a trusted one), each user's share of them capped; else it stays 1 and `why` says so. Without
// this one user's multi-node jobs set the site's network alone, however many users ran single-node jobs.
struct NetworkEvidence {
  std::vector<Sample> jobs;
  std::vector<double> w;
  std::string why_not;  // "" = fitted
};

NetworkEvidence network_evidence(const std::vector<Sample>& local, const CalibrateOptions& o) {
  NetworkEvidence n;
  for (const auto& s : local)
    if (s.scenario().cluster.nodes > 1) n.jobs.push_back(s);
  if (n.jobs.size() < o.min_multinode) {
    n.why_not = std::to_string(n.jobs.size()) + " multi-node jobs < " + std::to_string(o.min_multinode);
  } else if (const Users u = users_of(n.jobs, o); !enough_users(u, o)) {
    n.why_not = "the multi-node jobs of " + std::to_string(u.names.size()) + " user" +
                (u.names.size() == 1 ? "" : "s") + " < " + std::to_string(o.min_users) + ", none trusted";
  } else {
    n.w = user_share_weights(u.of, o.max_user_share);
  }
  return n;
}

// Fit one group's entry on `local` with weights `w`: coordinate descent in log space, compute first (it moves every
// job), then the network on its own evidence (network_evidence). Each loss is the weighted mean Huber loss of the
// log step-time error (squared up to huber_delta, linear beyond) plus a weak pull of log(scale) to 0.
CalibrationEntry fit_entry(const Group& g, const std::vector<Sample>& local, const std::vector<double>& w,
                           const CalibrateOptions& o, std::string* network_not_fitted) {
  CalibrationEntry e;
  e.gpu = g.gpu;
  e.fabric = g.fabric;
  e.framework = g.framework;
  const NetworkEvidence net = network_evidence(local, o);
  const bool fit_net = net.why_not.empty();
  if (network_not_fitted) *network_not_fitted = net.why_not;
  // log(achieved / predicted) as log(achieved) - log(predicted): the first once per job, the second once per
  // configuration and evaluation; the jobs' sum is taken per configuration from sorted prefix sums (huber_sum.h),
  // so that the hundreds of evaluations of a fit cost nothing per job.
  const auto loss_over = [&](const std::vector<Sample>& jobs, const std::vector<double>& weights) {
    auto idx = std::make_shared<ConfigIndex>(jobs);
    std::vector<double> log_achieved(jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i) log_achieved[i] = std::log(jobs[i].achieved_step_s);
    auto huber = std::make_shared<detail::HuberSum>(log_achieved, idx->of, idx->configs.size(), weights, o.huber_delta);
    double wsum = 0;
    for (double x : weights) wsum += x;
    return [&e, &o, idx, huber, wsum](double lc, double ln) {
      e.compute_scale = std::exp(lc);
      e.network_scale = std::exp(ln);
      auto log_pred = idx->predict([&](const Scenario& sc) { return apply_entry(e, sc); });
      for (double& p : log_pred) p = std::log(p);
      return (*huber)(log_pred) / wsum + o.prior_weight * (lc * lc + ln * ln);
    };
  };
  const auto loss = loss_over(local, w);
  double lc = 0, ln = 0;
  if (fit_net) {
    const auto net_loss = loss_over(net.jobs, net.w);
    for (int round = 0; round < 4; ++round) {
      lc = golden([&](double x) { return loss(x, ln); }, std::log(0.2), std::log(2.5));
      ln = golden([&](double x) { return net_loss(lc, x); }, std::log(0.1), std::log(3.0));
    }
  } else {
    lc = golden([&](double x) { return loss(x, ln); }, std::log(0.2), std::log(2.5));
  }
  e.compute_scale = std::exp(lc);
  e.network_scale = std::exp(ln);
  e.samples = int(local.size());
  e.multinode_samples = int(net.jobs.size());
  return e;
}

size_t multinode_of(const std::vector<Sample>& jobs) {
  size_t n = 0;
  for (const auto& s : jobs) n += s.scenario().cluster.nodes > 1;
  return n;
}

// The jobs of `local` within the trimming cut of the entry's log errors (weights w): all of them when those outside
// weigh half or more.
std::vector<Sample> untrimmed(const std::vector<Sample>& local, const std::vector<double>& w, const CalibrationEntry& e,
                              const CalibrateOptions& o, double* cut) {
  const ConfigIndex idx(local);
  const auto pred = idx.predict([&](const Scenario& sc) { return apply_entry(e, sc); });
  std::vector<double> r;
  for (size_t i = 0; i < local.size(); ++i) r.push_back(std::log(local[i].achieved_step_s / pred[idx.of[i]]));
  *cut = trim_cut(r, w, o.trim_k, o.trim_floor);
  const double med = weighted_median(r, w);
  std::vector<Sample> kept;
  double total = 0, trimmed = 0;
  for (size_t i = 0; i < local.size(); ++i) {
    total += w[i];
    if (std::fabs(r[i] - med) <= *cut) kept.push_back(local[i]);
    else trimmed += w[i];
  }
  // Trimming removes a minority that disagrees with the rest; half the weight or more is no minority (two stacks
  // pooled, a site that changed): then the group is fitted whole.
  if (trimmed >= total / 2) return local;
  return kept;
}

// "eve: 20 jobs weighted as 33 %" for each user whose jobs the share cap weighed down.
std::vector<std::string> capped_users(const Users& u, const std::vector<double>& w) {
  std::vector<double> total(u.names.size(), 0);
  std::vector<size_t> jobs(u.names.size(), 0);
  double sum = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    total[u.of[i]] += w[i];
    ++jobs[u.of[i]];
    sum += w[i];
  }
  std::vector<std::string> out;
  for (size_t k = 0; k < u.names.size(); ++k)
    if (total[k] < double(jobs[k]) - 1e-9)
      out.push_back(u.names[k] + ": " + std::to_string(jobs[k]) + " jobs weighted as " +
                    fmt("%.0f %%", 100 * total[k] / sum));
  return out;
}

// The trimmed fit: a first weighted fit, the jobs far off it left out, the rest fitted again (with the share cap
// applied to them anew). Returns false (note set) when what is left is the evidence of too few users.
bool trimmed_fit(const Group& grp, const std::vector<Sample>& local, const CalibrateOptions& o, GroupReport* g,
                 CalibrationEntry* e, std::string* network_not_fitted) {
  Users u = users_of(local, o);
  std::vector<double> w = user_share_weights(u.of, o.max_user_share);
  *e = fit_entry(grp, local, w, o, network_not_fitted);
  g->capped = capped_users(u, w);
  double cut = 0;
  std::vector<Sample> kept = untrimmed(local, w, *e, o, &cut);
  if (kept.size() < local.size()) {
    g->dropped["trimmed (log error " + fmt("%.2f", cut) + " beyond the median)"] += local.size() - kept.size();
    u = users_of(kept, o);
    if (!enough_users(u, o)) {
      g->note = not_enough_users(u, o) + " after trimming";
      return false;
    }
    w = user_share_weights(u.of, o.max_user_share);
    *e = fit_entry(grp, kept, w, o, network_not_fitted);
    for (auto& c : capped_users(u, w)) g->capped.push_back(c + " (after trimming)");
  }
  g->used = kept.size();
  g->users = u.names.size();
  return true;
}

GroupReport report_group(const Group& grp, const CalibrateOptions& o, const StackDrops* drops, Calibration* out) {
  GroupReport g;
  g.gpu = grp.gpu;
  g.fabric = grp.fabric;
  g.framework = grp.framework;
  g.stacks = stacks_of(grp.members);
  g.samples = grp.members.size();
  if (drops)
    for (const auto& k : grp.stacks)
      if (auto it = drops->find(k); it != drops->end())
        for (const auto& [why, n] : it->second) g.dropped[why] += n;
  std::vector<Sample> local;
  for (const Sample* s : grp.members) local.push_back(*s);
  g.multinode = multinode_of(local);
  g.before = error_stats(local, {});
  g.after = g.before;
  const Users u = users_of(local, o);
  g.users = u.names.size();
  if (g.samples < o.min_samples) {
    g.note = "kept shipped parameters: " + std::to_string(g.samples) + " jobs < minimum " + std::to_string(o.min_samples);
    return g;
  }
  if (!enough_users(u, o)) {
    g.note = not_enough_users(u, o);
    return g;
  }
  CalibrationEntry e;
  std::string network_not_fitted;
  if (!trimmed_fit(grp, local, o, &g, &e, &network_not_fitted)) return g;
  g.compute_scale = e.compute_scale;
  g.network_scale = e.network_scale;
  Calibration one;
  one.entries.push_back(e);
  // The group's own jobs (trimmed ones included) under its own entry (a framework-less entry reaches every stack).
  g.after = error_stats(local, one);
  e.error_before = g.before.mean_abs;
  e.error_after = g.after.mean_abs;
  g.fitted = true;
  g.note = "compute_scale " + fmt("%.3f", e.compute_scale) +
           (network_not_fitted.empty() ? ", network_scale " + fmt("%.3f", e.network_scale)
                                       : ", network_scale kept (" + network_not_fitted + ")");
  out->entries.push_back(e);
  return g;
}

}  // namespace

CalibrationResult calibrate(const std::vector<Sample>& samples, const CalibrateOptions& o, const StackDrops* dropped) {
  CalibrationResult res;
  for (const Group& grp : make_groups(samples, o)) res.groups.push_back(report_group(grp, o, dropped, &res.calibration));
  res.before = error_stats(samples, {});
  res.after = error_stats(samples, res.calibration);
  return res;
}

}  // namespace paratune::tuning
