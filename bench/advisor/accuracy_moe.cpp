// The mixture-of-experts section of docs/accuracy.md: the all-to-all efficiencies read from alltoall_bw.csv, the MoE
// terms fitted on the MoE rows only (the dense parameters as shipped), out of sample by source and by model, the
// ranking of expert layouts in layout-varying groups, every row.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>
#include <thread>

#include "accuracy_sections.h"
#include "accuracy_stats.h"
#include "moe_data.h"

namespace paratune::accuracy {

std::string expert_layout(const advisor::Layout& l) {
  std::string s = "tp" + std::to_string(l.tp) + " pp" + std::to_string(l.pp) + " ep" + std::to_string(l.ep);
  if (l.etp > 1) s += " etp" + std::to_string(l.etp);
  if (l.cp > 1) s += " cp" + std::to_string(l.cp);
  if (l.virtual_stages > 1) s += " v" + std::to_string(l.virtual_stages);
  return s + " mb" + std::to_string(l.micro_batch);
}

namespace {

using advisor::Layout;
using calib::has;
using Key = std::function<std::string(const Row&)>;

std::string f2(double v, const char* fmt = "%.2f") { return formatted(v, fmt); }


// Refit the MoE terms without each value of `key`, predict that value's rows (two threads).
std::vector<double> held_out_moe(const std::vector<Row>& rows, const ModelParams& start, const Key& key) {
  std::vector<std::string> values;
  for (const auto& r : rows)
    if (std::find(values.begin(), values.end(), key(r)) == values.end()) values.push_back(key(r));
  std::vector<double> out(rows.size(), 0);
  auto work = [&](size_t first) {
    for (size_t v = first; v < values.size(); v += 2) {
      double loss = 0;
      const ModelParams p = calib::moe_fit_where(rows, start, [&](const Row& r) { return key(r) != values[v]; }, &loss);
      for (size_t i = 0; i < rows.size(); ++i)
        if (key(rows[i]) == values[v]) out[i] = calib::predict_row(rows[i], p).time_s;
    }
  };
  std::thread other(work, 1);
  work(0);
  other.join();
  return out;
}

Stats table(std::ostream& md, const std::vector<Row>& rows, const std::vector<double>& pred, const Key& key,
            const char* what) {
  std::map<std::string, Stats> per;
  Stats all;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].rank_only) continue;  // the source's own "known issue" rows: ranked, not scored
    const double e = throughput_error(rows[i], pred[i]);
    per[key(rows[i])].add(e);
    all.add(e);
  }
  md << "| held-out " << what << " | rows | MAPE | median APE | signed median | over-predicted | max error |\n"
     << "|---|---|---|---|---|---|---|\n";
  for (const auto& [k, st] : per) md << "| " << k << " | " << stats_cells(st) << " |\n";
  md << "| **all (each row predicted without its " << what << ")** | " << stats_cells(all, true) << " |\n\n";
  return all;
}

// Groups of one model on one system, GPU count, batch and precision whose rows differ in the expert layout. Their
// layouts were mostly measured at different software releases (NVIDIA's recipe changed with the release), so a
// cross-release pair mixes software and layout; only same-release pairs compare layouts alone, and each layout is
// judged at its best measured release (the fastest software it ran with).
struct RankScore {
  int groups = 0, first = 0, pairs = 0, same_release_pairs = 0, within5 = 0, rule_within5 = 0, blind_within5 = 0;
  double concordant = 0, same_release_concordant = 0, share = 0, rule_share = 0, blind_share = 0;
};

// A layout of a group: its best measured time (and that run's release) and its lowest predicted time over the rows
// that ran it (the rows' other knobs, e.g. the dispatcher, may differ by release).
struct LayoutSeen {
  double best_meas = 0, pred = 0;
  std::string release;
  const Row* row = nullptr;
};

// The rule of thumb for MoE (issue text and common practice): the expert group inside one NVLink domain, the
// smallest TP, then the widest EP there, the shallowest pipeline, the largest micro-batch; lower keys first.
auto rule_of_thumb_key(const Row& r) {
  const Layout& l = r.l;
  // Megatron-Core orders expert ranks etp-ep-dp: the expert group spans ep x etp consecutive GPUs, whatever the TP.
  const bool outside = l.ep * l.etp > std::max(1, r.s.cluster.nvlink_domain);
  return std::tuple(outside, l.tp, -l.ep, l.pp, l.virtual_stages, -l.micro_batch);
}

// The shares of the best measured time that the model's first layout, the rule of thumb's and a layout-blind pick
// get (share_of_best over the group's layouts, each at its best measured time).
struct Shares {
  double model = 0, rule = 0, blind = 0;
};
Shares layout_shares(const std::map<std::string, LayoutSeen>& seen) {
  std::vector<size_t> idx;
  std::vector<double> meas, pred, rule, blind;
  for (const auto& [name, s] : seen) {
    idx.push_back(idx.size());
    meas.push_back(s.best_meas);
    pred.push_back(s.pred);
    blind.push_back(1.0);
    double ahead = 1;  // the rule's order as a positive "time": 1 + the layouts it puts first (ties alike)
    for (const auto& [other, o] : seen) ahead += rule_of_thumb_key(*o.row) < rule_of_thumb_key(*s.row);
    rule.push_back(ahead);
  }
  return {share_of_best(idx, meas, pred), share_of_best(idx, meas, rule), share_of_best(idx, meas, blind)};
}

void score_group(const std::vector<Row>& rows, const std::vector<double>& pred, const std::vector<size_t>& idx,
                 RankScore* sc) {
  for (size_t a = 0; a < idx.size(); ++a)
    for (size_t b = a + 1; b < idx.size(); ++b) {
      const Row &ra = rows[idx[a]], &rb = rows[idx[b]];
      if (expert_layout(ra.l) == expert_layout(rb.l) || std::fabs(ra.meas_time_s / rb.meas_time_s - 1) < 0.02)
        continue;
      const bool ordered = (ra.meas_time_s < rb.meas_time_s) == (pred[idx[a]] < pred[idx[b]]);
      ++sc->pairs;
      sc->concordant += ordered;
      if (release_of(ra) == release_of(rb)) ++sc->same_release_pairs, sc->same_release_concordant += ordered;
    }
}

RankScore rank_groups(std::ostream& md, const std::vector<Row>& rows, const std::vector<double>& pred) {
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const std::string k = r.s.model.name + " | " + r.s.cluster.gpu + " | " + std::to_string(r.s.total_gpus()) +
                          " GPUs | GBS " + std::to_string(r.s.training.global_batch) + " | " + r.f.at("precision");
    groups[k].push_back(i);
  }
  RankScore sc;
  md << "| group | layouts | measured best (release) | model's first (its best measured release) | share of the best: model "
        "| rule of thumb | layout-blind |\n|---|---|---|---|---|---|---|\n";
  for (const auto& [k, idx] : groups) {
    std::map<std::string, LayoutSeen> seen;
    for (size_t i : idx) {
      LayoutSeen& s = seen[expert_layout(rows[i].l)];
      const double low_pred = s.row ? std::min(s.pred, pred[i]) : pred[i];
      if (!s.row || rows[i].meas_time_s < s.best_meas) s = {rows[i].meas_time_s, 0, release_of(rows[i]), &rows[i]};
      s.pred = low_pred;
    }
    if (seen.size() < 2) continue;
    const auto best = std::min_element(seen.begin(), seen.end(), [](const auto& a, const auto& b) {
      return a.second.best_meas < b.second.best_meas;
    });
    const auto first = std::min_element(seen.begin(), seen.end(), [](const auto& a, const auto& b) {
      return a.second.pred < b.second.pred;
    });
    const auto [model, rule, blind] = layout_shares(seen);
    ++sc.groups;
    sc.first += best == first;
    sc.share += model, sc.rule_share += rule, sc.blind_share += blind;
    sc.within5 += model >= 0.95, sc.rule_within5 += rule >= 0.95, sc.blind_within5 += blind >= 0.95;
    score_group(rows, pred, idx, &sc);
    md << "| " << k << " | " << seen.size() << " | " << best->first << " (" << best->second.release << ") | "
       << first->first << " (" << first->second.release << ") | " << pct(model, "%.0f %%") << " | "
       << pct(rule, "%.0f %%") << " | " << pct(blind, "%.0f %%") << " |\n";
  }
  md << "\n";
  return sc;
}

}  // namespace

void write_moe(std::ostream& md, MoeInputs& in) {
  std::vector<Row>& rows = in.rows;
  ModelParams start = in.base;
  const double nvl = calib::a2a_efficiency(in.a2a, false), net = calib::a2a_efficiency(in.a2a, true);
  if (nvl > 0) start.a2a_nvl_eff = nvl;
  if (net > 0) start.a2a_net_eff = net;
  md << "## Mixture of experts\n\n"
     << rows.size() << " MoE rows from ";
  for (size_t i = 0; i < in.csvs.size(); ++i) md << (i ? " and " : "") << "`" << in.csvs[i] << "`";
  md << " (rerun with `--moe FILE` for each and `--a2a data/calibration/published/alltoall_bw.csv`). Rows not used or not scored:";
  for (const auto& [why, n] : in.skipped) md << " " << n << " " << why << ";";
  md << " (kept in the files). The dense parameters stay as shipped (the dense rows above never see an MoE row); "
        "only the MoE terms below are fitted, on the MoE rows alone, out of sample first. Knobs a table does not "
        "state (recompute; the token dispatcher of the Megatron-Bridge rows; the pipeline stage split, which NVIDIA's "
        "DeepSeek-V3 recipes and MLPerf runs set with --pipeline-model-parallel-layout: the framework's own or the "
        "one balanced by cost, as advise plans it) are set to the fastest choice that fits, as for the dense rows. The Megatron-Bridge MoE benchmarks force-balance the routing (its footnote); "
        "the MLPerf runs route for real, and only they constrain `moe_route_imbalance`.\n\n";

  md << "### All-to-all bandwidth (`alltoall_bw.csv`)\n\n"
     << "Training-mode dispatch measurements (DeepEP normal kernels, HybridEP; decode-mode, latency-only and "
        "secondary-source rows left out), as a fraction of the limiting link's per-direction line rate:\n\n"
     << "| row | GPU | EP ranks | link | measured GB/s | line GB/s | fraction |\n|---|---|---|---|---|---|---|\n";
  for (const auto& p : in.a2a)
    md << "| " << p.id << " | " << p.gpu << " | " << p.ep << " | " << (p.network ? "NIC" : "NVLink") << " | "
       << f2(p.measured_gbps, "%.0f") << " | " << f2(p.link_gbps, "%.0f") << " | "
       << f2(p.measured_gbps / p.link_gbps) << " |\n";
  md << "\nMedians: `a2a_nvl_eff` = " << f2(start.a2a_nvl_eff) << " over NVLink, `a2a_net_eff` = "
     << f2(start.a2a_net_eff) << " over the NICs (of the ring-achieved NIC rate's line rate); the model's dispatch "
        "time is the slower of its NVLink share and its network share at these rates (docs/model.md §9).\n\n";

  const Key by_source = [](const Row& r) { return r.source; };
  const Key by_model = [](const Row& r) { return calib::moe_model_of(r); };
  const std::vector<double> loso = held_out_moe(rows, start, by_source);
  const std::vector<double> lomo = held_out_moe(rows, start, by_model);
  for (size_t i = 0; i < rows.size(); ++i) in.loso_s[rows[i].id] = loso[i], in.lomo_s[rows[i].id] = lomo[i];
  double loss = 0;
  const ModelParams fitted = calib::moe_fit_where(rows, start, [](const Row&) { return true; }, &loss);
  std::vector<double> in_sample, prior;
  for (const auto& r : rows) {
    in_sample.push_back(calib::predict_row(r, in.shipped).time_s);
    prior.push_back(calib::predict_row(r, start).time_s);
  }

  md << "### Out of sample: leave one source out\n\n";
  const Stats s_src = table(md, rows, loso, by_source, "source");
  Stats with_old;
  for (size_t i = 0; i < rows.size(); ++i)
    if (!has(rows[i].f.at("notes"), "known issue")) with_old.add(throughput_error(rows[i], loso[i]));
  md << "The older releases of the same models and systems, predicted the same way (their software was slower than "
        "the current stack the model describes): " << stats_sentence(with_old) << ".\n\n";
  md << "### Out of sample: leave one model out\n\n";
  const Stats s_mod = table(md, rows, lomo, by_model, "model");
  Stats s_in, s_prior;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].rank_only) continue;
    s_in.add(throughput_error(rows[i], in_sample[i]));
    s_prior.add(throughput_error(rows[i], prior[i]));
  }
  md << "With the priors only (MoE terms unfitted; all-to-all rates from `alltoall_bw.csv`): "
     << stats_sentence(s_prior) << ". In sample (shipped parameters): " << stats_sentence(s_in) << ".\n\n";

  md << "### Ranking of expert layouts\n\n"
     << "Groups of one model on one system, GPU count, global batch and precision whose rows differ in the layout "
        "(mostly NVIDIA's best recipe at different releases, so software moves too). Predictions are the "
        "leave-one-source-out ones.\n\n";
  const RankScore rk = rank_groups(md, rows, loso);
  const double n = std::max(1, rk.groups);
  md << "Each layout is judged at its best measured release; *rule of thumb*: the expert group inside one NVLink "
        "domain, the smallest TP, then the widest EP there; *layout-blind*: a uniform pick among the group's layouts. "
        "The advised layout (the model's first) is within 5 % of the measured best in " << rk.within5 << " of "
     << rk.groups << " groups (mean share " << pct(rk.share / n, "%.1f %%") << "; rule of thumb " << rk.rule_within5
     << ", mean " << pct(rk.rule_share / n, "%.1f %%") << "; layout-blind " << rk.blind_within5 << ", mean "
     << pct(rk.blind_share / n, "%.1f %%") << "). Measured-best layout ranked first in " << rk.first << " of "
     << rk.groups << " groups; pairs of different layouts at least 2 % apart ordered as measured: "
     << f2(rk.concordant, "%.0f") << " of " << rk.pairs << ", of them measured with the same software release (the "
     << "only pairs that compare layouts alone): " << f2(rk.same_release_concordant, "%.0f") << " of "
     << rk.same_release_pairs << "."
     << (rk.same_release_pairs == 0 ? " No two layouts of a group were measured with the same release here, so every "
                                      "share and pair above mixes the layout with the software; a clean layout sweep "
                                      "(one release, several layouts) is what these files lack."
                                    : "")
     << "\n\n";

  write_moe_scaling(md, rows, loso);

  const auto spec = calib::moe_fit_spec();
  const auto x = calib::moe_extract(fitted), xs = calib::moe_extract(in.shipped);
  md << "### MoE parameters\n\n| parameter | prior | fitted on all MoE rows | shipped |\n|---|---|---|---|\n";
  for (size_t i = 0; i < x.size(); ++i)
    md << "| `" << spec.names[i] << "` | " << f2(spec.prior[i], "%.3f") << " | " << f2(x[i], "%.3f") << " | "
       << f2(xs[i], "%.3f") << " |\n";
  md << "| `a2a_nvl_eff` | (alltoall_bw.csv) | " << f2(start.a2a_nvl_eff, "%.3f") << " | "
     << f2(in.shipped.a2a_nvl_eff, "%.3f") << " |\n| `a2a_net_eff` | (alltoall_bw.csv) | "
     << f2(start.a2a_net_eff, "%.3f") << " | " << f2(in.shipped.a2a_net_eff, "%.3f") << " |\n\n";

  md << "### Every MoE row\n\n| row | layout | measured s | predicted s (LOSO) | error | model's all-to-all share |\n"
     << "|---|---|---|---|---|---|\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto best = calib::predict_row(rows[i], in.shipped);
    const advisor::Evaluator ev(rows[i].s, rows[i].fw, in.shipped);
    const auto res = ev.evaluate(best.layout);
    md << "| " << rows[i].id << " | " << expert_layout(best.layout) << " " << advisor::to_string(best.layout.dispatcher)
       << " | " << f2(rows[i].meas_time_s, "%.3f") << " | " << f2(loso[i], "%.3f") << " | "
       << pct(throughput_error(rows[i], loso[i]), "%+.1f %%") << (rows[i].rank_only ? " (not scored)" : "") << " | "
       << pct((res.br.ep_comm + res.br.moe_imbalance) / res.step_s, "%.0f %%") << " |\n";
  }
  md << "\n";
  char b[256];
  std::snprintf(b, sizeof b, "MoE out of sample: leave-one-source-out MAPE %.1f %%, leave-one-model-out %.1f %%; "
                "best layout first in %d of %d groups, advice within 5 %% of the best in %d (rule of thumb %d)\n",
                100 * s_src.mape(), 100 * s_mod.mape(), rk.first, rk.groups, rk.within5, rk.rule_within5);
  in.summary += b;
  std::fprintf(stderr, "MoE fit on all rows (loss %.5f):", loss);
  for (size_t i = 0; i < x.size(); ++i) std::fprintf(stderr, " %s %.4f", spec.names[i].c_str(), x[i]);
  std::fprintf(stderr, "; a2a_nvl_eff %.4f a2a_net_eff %.4f\n", start.a2a_nvl_eff, start.a2a_net_eff);
}

}  // namespace paratune::accuracy
