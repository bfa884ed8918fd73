// Ranking in layout-varying groups (docs/accuracy.md): does the model order layouts of one model on the same GPUs
// and batch as they were measured, compared with baselines that do not look at the layout?
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "accuracy_sections.h"
#include "accuracy_stats.h"

namespace paratune::accuracy {

namespace {

using advisor::Layout;
using advisor::Recompute;

std::string layout_key(const Row& r) {
  const Layout& l = r.l;
  char b[160];
  std::snprintf(b, sizeof b, "tp%d pp%d dp%d cp%d v%d mb%d z%d rc%d", l.tp, l.pp, l.dp, l.cp,
                r.vpp_known ? l.virtual_stages : 0, r.mb_known ? l.micro_batch : 0, l.zero_stage,
                r.rc_known ? int(l.recompute) : -1);
  return b;
}

// Same comparison group, model, GPU, GPU count, batch and precision: only the layout may differ.
std::string fixed_key(const Row& r) {
  return r.group + "|" + r.s.model.name + "|" + r.s.cluster.gpu + "|" + std::to_string(r.s.total_gpus()) + "|" +
         std::to_string(r.s.training.global_batch) + "|" + advisor::to_string(r.s.training.precision) + "|" +
         (r.s.training.fp8_recipe ? advisor::to_string(*r.s.training.fp8_recipe) : "");
}

// Layout-blind: time in proportion to the work (a full recompute adds a forward: 4/3), the rest equal.
double blind_time(const Row& r) { return r.rc_known && r.l.recompute == Recompute::Full ? 4.0 / 3 : 1.0; }

// A rule of thumb that looks at the layout only by its size: fewest model-parallel ranks, then the largest
// micro-batch (as a "time", smaller is better).
double heuristic_time(const Row& r) {
  return double(r.l.tp * r.l.pp * r.l.cp) * 1000.0 - (r.mb_known ? r.l.micro_batch : 1);
}

struct PairScore {
  double concordant = 0;
  int pairs = 0;
  double share() const { return pairs ? concordant / pairs : 0; }
};

// Pairs of different layouts measured at least 2 % apart with the same software; a predicted tie counts half. Two
// runs of one layout, or runs of different releases (whose differences are the software's, 2-8 % for a repeated
// recipe), are not a layout pair.
void score_pairs(const std::vector<size_t>& idx, const std::vector<Row>& rows, const std::vector<double>& pred,
                 PairScore* s, double min_gap = 0.02) {
  for (size_t a = 0; a < idx.size(); ++a)
    for (size_t b = a + 1; b < idx.size(); ++b) {
      const double ma = rows[idx[a]].meas_time_s, mb = rows[idx[b]].meas_time_s;
      if (std::fabs(ma / mb - 1) < min_gap || layout_key(rows[idx[a]]) == layout_key(rows[idx[b]]) ||
          release_of(rows[idx[a]]) != release_of(rows[idx[b]]))
        continue;
      const double pa = pred[idx[a]], pb = pred[idx[b]];
      ++s->pairs;
      if (std::fabs(pa / pb - 1) < 1e-9) s->concordant += 0.5;
      else if ((ma < mb) == (pa < pb)) s->concordant += 1;
    }
}

size_t fastest(const std::vector<size_t>& idx, const std::vector<double>& t) {
  size_t best = idx[0];
  for (size_t i : idx)
    if (t[i] < t[best]) best = i;
  return best;
}

std::map<std::string, std::vector<size_t>> layout_varying_groups(const std::vector<Row>& rows) {
  std::map<std::string, std::vector<size_t>> g;
  for (size_t i = 0; i < rows.size(); ++i)
    if (!rows[i].group.empty()) g[fixed_key(rows[i])].push_back(i);
  for (auto it = g.begin(); it != g.end();) {
    std::set<std::string> layouts;
    for (size_t i : it->second) layouts.insert(layout_key(rows[i]));
    it = layouts.size() < 2 ? g.erase(it) : std::next(it);
  }
  return g;
}

// Whether the rows of a group take more than one value of `f`.
bool varies(const std::vector<size_t>& idx, const std::vector<Row>& rows, const std::function<int(const Row&)>& f) {
  std::set<int> v;
  for (size_t i : idx) v.insert(f(rows[i]));
  return v.size() > 1;
}

// The kinds of layout choice the advice is judged on, each recognised from what the group's rows vary or hold (a
// group can be of several kinds).
struct Kind {
  const char* name;
  std::function<bool(const std::vector<size_t>&, const std::vector<Row>&)> holds;
};

std::vector<Kind> layout_kinds() {
  auto tp = [](const Row& r) { return r.l.tp; };
  auto pp = [](const Row& r) { return r.l.pp; };
  return {
      {"pipeline vs tensor parallelism (both vary)",
       [=](const auto& idx, const auto& rows) { return varies(idx, rows, tp) && varies(idx, rows, pp); }},
      {"interleaved vs plain 1F1B (stated virtual stages vary at PP > 1)",
       [](const auto& idx, const auto& rows) {
         std::vector<size_t> piped;
         for (size_t i : idx)
           if (rows[i].l.pp > 1 && rows[i].vpp_known) piped.push_back(i);
         return varies(piped, rows, [](const Row& r) { return r.l.virtual_stages; });
       }},
      {"ZeRO sharding scope (stated shard group varies)",
       [](const auto& idx, const auto& rows) {
         std::vector<size_t> sharded;
         for (size_t i : idx)
           if (rows[i].l.zero_stage > 0) sharded.push_back(i);
         return varies(sharded, rows, [](const Row& r) { return r.l.shard_group; });
       }},
      {"ZeRO-3 / FSDP without model parallelism",
       [](const auto& idx, const auto& rows) {
         for (size_t i : idx)
           if (rows[i].l.zero_stage == 3 && rows[i].l.tp * rows[i].l.pp * rows[i].l.cp == 1) return true;
         return false;
       }},
      {"small model (hidden <= 2048) on one node",
       [](const auto& idx, const auto& rows) {
         const Row& r = rows[idx[0]];
         return r.s.model.hidden <= 2048 && r.s.total_gpus() <= r.s.cluster.gpus_per_node;
       }},
      {"tensor vs data parallelism at 128-512 GPUs (TP varies)",
       [=](const auto& idx, const auto& rows) {
         const int n = rows[idx[0]].s.total_gpus();
         return n >= 128 && n <= 512 && varies(idx, rows, tp);
       }},
      {"all layout-varying groups", [](const auto&, const auto&) { return true; }},
  };
}

struct Shares {
  double model = 0, blind = 0, heur = 0;
};

// Per kind: how many groups, the mean and the worst share of the best for the model and the baselines, and how
// many groups the model's first layout reaches 97 % of the best in.
void write_kinds(std::ostream& md, const std::vector<std::pair<std::vector<size_t>, Shares>>& groups,
                 const std::vector<Row>& rows) {
  md << "#### Share of the best measured layout, per kind of choice\n\n"
     << "Per layout-varying group, *share of the best* = measured time of the group's fastest layout / measured "
        "time of the layout ranked first (1 = the advice picks the best). The model ranks by its leave-one-source-"
        "out predictions; a baseline's tie is a uniform pick among the tied layouts. Kinds are recognised from the "
        "rows' facts (what the group's layouts vary, model size, GPU count); a group can be of several kinds.\n\n"
     << "| kind of choice | groups | their GPUs (sources) | model: mean (worst) | model >= 97 % | layout-blind: mean "
        "(worst) | rule of thumb: mean (worst) |\n|---|---|---|---|---|---|---|\n";
  std::string lacking;
  for (const Kind& k : layout_kinds()) {
    double sm = 0, sb = 0, sh = 0, wm = 1, wb = 1, wh = 1;
    int n = 0, good = 0;
    std::set<std::string> where;
    for (const auto& [idx, s] : groups) {
      if (!k.holds(idx, rows)) continue;
      ++n;
      where.insert(rows[idx[0]].s.cluster.gpu + " (" + rows[idx[0]].source.substr(0, 1) + ")");
      good += s.model >= 0.97;
      sm += s.model, sb += s.blind, sh += s.heur;
      wm = std::min(wm, s.model), wb = std::min(wb, s.blind), wh = std::min(wh, s.heur);
    }
    if (!n) {
      lacking += std::string(lacking.empty() ? "" : "; ") + k.name;
      continue;
    }
    auto cell = [&](double sum, double worst) { return pct(sum / n) + " (" + pct(worst) + ")"; };
    std::string gpus;
    for (const auto& w : where) gpus += (gpus.empty() ? "" : ", ") + w;
    md << "| " << k.name << " | " << n << " | " << gpus << " | " << cell(sm, wm) << " | " << good << " of " << n << " | "
       << cell(sb, wb) << " | " << cell(sh, wh) << " |\n";
  }
  md << "\nKinds the data has no layout-varying group of: " << (lacking.empty() ? "none" : lacking)
     << ". No group varies pipeline against tensor parallelism on A100s, nor holds ZeRO-3 beyond one node: the "
        "kinds above are judged on the GPUs and sources named. The 512-GPU groups of the Ultra-Scale Playbook sweep "
        "hold only rank-only runs, some of them pathological (several times slower than a neighbouring layout): "
        "their shares say more about those runs than about the layout.\n\n";
}

}  // namespace

// The share of the best measured time that taking the layout `t` ranks first gets: measured best / measured time of
// that layout (1 = the best). Layouts `t` ties (the baselines') count as a uniform pick among them.
double share_of_best(const std::vector<size_t>& idx, const std::vector<double>& meas, const std::vector<double>& t) {
  const double best = meas[fastest(idx, meas)], first = t[fastest(idx, t)];
  double sum = 0;
  int tied = 0;
  for (size_t i : idx)
    if (std::fabs(t[i] / first - 1) < 1e-9) {
      sum += best / meas[i];
      ++tied;
    }
  return sum / tied;
}

// The software release a row was measured with, where its source has several (Megatron-Bridge and dgxc container
// releases, MLPerf rounds: the id's second field); "" for sources of one release.
std::string release_of(const Row& r) {
  for (const char* pre : {"MB-", "DGXC-", "MLPT-"})
    if (r.id.rfind(pre, 0) == 0) {
      const size_t a = r.id.find('-') + 1, b = r.id.find('-', a);
      return r.id.substr(a, b == std::string::npos ? std::string::npos : b - a);
    }
  return "";
}

void write_ranking(std::ostream& md, Report& rep, const HeldOut& held) {
  const auto& rows = rep.rows;
  std::vector<double> meas, blind, heur;
  for (const auto& r : rows) {
    meas.push_back(r.meas_time_s);
    blind.push_back(blind_time(r));
    heur.push_back(heuristic_time(r));
  }
  md << "### Ranking in layout-varying groups\n\n"
     << "Groups of rows with the same model, GPU, GPU count, global batch and precision that differ only in the "
        "layout (parallel degrees, micro-batch, interleaving, ZeRO stage, recompute): the choice the advisor makes. "
        "*Pairs* is the share of pairs of different layouts measured at least 2 % apart that are ordered as "
        "measured with the same software release (runs of different releases differ by software too: not a pair). "
        "The model's "
        "predictions are the leave-one-source-out ones; *layout-blind* predicts every layout of a group alike "
        "(only a full recompute costs 4/3: ties count half), *rule of thumb* prefers the fewest model-parallel "
        "ranks, then the largest micro-batch. Rank-only rows (pathological sweep runs, the sweep's 80B of unknown "
        "shape) take part here.\n\n"
     << "| group | rows | measured best | predicted best | best matches | share of the best: model | layout-blind | "
        "rule of thumb | pairs: model | layout-blind | rule of thumb |\n"
     << "|---|---|---|---|---|---|---|---|---|---|---|\n";
  std::vector<std::pair<std::vector<size_t>, Shares>> shares;
  PairScore model_all, in_all, blind_all, heur_all, model5, blind5, heur5;
  int groups = 0, matches = 0;
  for (const auto& [key, idx] : layout_varying_groups(rows)) {
    PairScore m, b, h, in;
    score_pairs(idx, rows, held.source, &m);
    score_pairs(idx, rows, held.in_sample, &in);
    score_pairs(idx, rows, blind, &b);
    score_pairs(idx, rows, heur, &h);
    // Beyond the sources' run-to-run noise (2-8 % for a repeated recipe, data/calibration/README.md): 5 %.
    score_pairs(idx, rows, held.source, &model5, 0.05);
    score_pairs(idx, rows, blind, &blind5, 0.05);
    score_pairs(idx, rows, heur, &heur5, 0.05);
    const size_t mb = fastest(idx, meas), pb = fastest(idx, held.source);
    const bool match = mb == pb || std::fabs(meas[pb] / meas[mb] - 1) < 0.02;
    ++groups;
    matches += match;
    for (auto [all, one] : {std::pair{&model_all, &m}, {&in_all, &in}, {&blind_all, &b}, {&heur_all, &h}}) {
      all->concordant += one->concordant;
      all->pairs += one->pairs;
    }
    const Shares sh{share_of_best(idx, meas, held.source), share_of_best(idx, meas, blind),
                    share_of_best(idx, meas, heur)};
    shares.emplace_back(idx, sh);
    auto cell = [](const PairScore& s) { return s.pairs ? pct(s.share(), "%.0f %%") : std::string("-"); };
    md << "| " << rows[idx[0]].group << " (" << rows[idx[0]].s.cluster.gpu << ", "
       << advisor::to_string(rows[idx[0]].s.training.precision) << ") | " << idx.size() << " | " << rows[mb].id
       << " | " << rows[pb].id << " | " << (match ? "yes" : "**no**") << " | " << pct(sh.model, "%.0f %%") << " | "
       << pct(sh.blind, "%.0f %%") << " | " << pct(sh.heur, "%.0f %%") << " | " << cell(m) << " | " << cell(b)
       << " | " << cell(h) << " |\n";
  }
  md << "\n**" << pct(model_all.share(), "%.1f %%") << " of " << model_all.pairs
     << " pairs ordered as measured** out of sample (" << formatted(model_all.concordant, "%.1f")
     << " pairs, a tie counting half; in sample " << pct(in_all.share(), "%.0f %%")
     << "), against " << pct(blind_all.share(), "%.0f %%") << " for the layout-blind baseline and "
     << pct(heur_all.share(), "%.0f %%") << " for the rule of thumb; the measured best layout predicted best in "
     << matches << " of " << groups << " groups (a measured tie within 2 % counts as a match). Pairs measured at "
     << "least 5 % apart, beyond the sources' run-to-run noise (2-8 %): " << pct(model5.share(), "%.0f %%")
     << " of " << model5.pairs << " ordered (layout-blind " << pct(blind5.share(), "%.0f %%") << ", rule of thumb "
     << pct(heur5.share(), "%.0f %%") << ").\n\n";
  write_kinds(md, shares, rows);
  char b[200];
  std::snprintf(b, sizeof b,
                "ranking: pairs %.0f %% (blind %.0f %%, rule %.0f %%) of %d; >= 5 %% apart %.0f %% (blind %.0f %%, "
                "rule %.0f %%) of %d; best %d/%d\n",
                100 * model_all.share(), 100 * blind_all.share(), 100 * heur_all.share(), model_all.pairs,
                100 * model5.share(), 100 * blind5.share(), 100 * heur5.share(), model5.pairs, matches, groups);
  rep.summary += b;
}

}  // namespace paratune::accuracy
