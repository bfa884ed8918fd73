// The mixture-of-experts section of docs/accuracy.md: the all-to-all efficiencies read from alltoall_bw.csv, the MoE
// terms fitted on the MoE rows only (the dense parameters as shipped), out of sample by source and by model, the
// ranking of expert layouts in layout-varying groups, every row.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

#include "accuracy_sections.h"
#include "accuracy_stats.h"
#include "moe_data.h"

namespace paratune::accuracy {

namespace {

using advisor::Layout;
using calib::has;
using Key = std::function<std::string(const Row&)>;

std::string f2(double v, const char* fmt = "%.2f") { return formatted(v, fmt); }

std::string expert_layout(const Layout& l) {
  std::string s = "tp" + std::to_string(l.tp) + " pp" + std::to_string(l.pp) + " ep" + std::to_string(l.ep);
  if (l.etp > 1) s += " etp" + std::to_string(l.etp);
  if (l.cp > 1) s += " cp" + std::to_string(l.cp);
  if (l.virtual_stages > 1) s += " v" + std::to_string(l.virtual_stages);
  return s + " mb" + std::to_string(l.micro_batch);
}

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

// Groups of one model on one system, GPU count, batch and precision whose rows differ in the expert layout: is the
// measured fastest layout the one the model ranks first (among the group's measured layouts)?
struct RankScore {
  int groups = 0, first = 0, pairs = 0;
  double concordant = 0;
};
RankScore rank_groups(std::ostream& md, const std::vector<Row>& rows, const std::vector<double>& pred) {
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const std::string k = r.s.model.name + " | " + r.s.cluster.gpu + " | " + std::to_string(r.s.total_gpus()) +
                          " GPUs | GBS " + std::to_string(r.s.training.global_batch) + " | " + r.f.at("precision");
    groups[k].push_back(i);
  }
  RankScore sc;
  md << "| group | layouts | measured best | model's first | |\n|---|---|---|---|---|\n";
  for (const auto& [k, idx] : groups) {
    std::set<std::string> layouts;
    for (size_t i : idx) layouts.insert(expert_layout(rows[i].l));
    if (layouts.size() < 2) continue;
    size_t mbest = idx[0], pbest = idx[0];
    for (size_t i : idx) {
      if (rows[i].meas_time_s < rows[mbest].meas_time_s) mbest = i;
      if (pred[i] < pred[pbest]) pbest = i;
    }
    const bool hit = expert_layout(rows[mbest].l) == expert_layout(rows[pbest].l);
    ++sc.groups;
    sc.first += hit;
    for (size_t a = 0; a < idx.size(); ++a)
      for (size_t b = a + 1; b < idx.size(); ++b) {
        const Row &ra = rows[idx[a]], &rb = rows[idx[b]];
        if (expert_layout(ra.l) == expert_layout(rb.l) || std::fabs(ra.meas_time_s / rb.meas_time_s - 1) < 0.02)
          continue;
        ++sc.pairs;
        sc.concordant += (ra.meas_time_s < rb.meas_time_s) == (pred[idx[a]] < pred[idx[b]]);
      }
    md << "| " << k << " | " << layouts.size() << " | " << expert_layout(rows[mbest].l) << " | "
       << expert_layout(rows[pbest].l) << " | " << (hit ? "yes" : "no") << " |\n";
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
  md << "Measured-best layout ranked first in " << rk.first << " of " << rk.groups << " groups; pairs of different "
     << "layouts at least 2 % apart ordered as measured: " << f2(rk.concordant, "%.0f") << " of " << rk.pairs
     << ".\n\n";

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
                "best layout first in %d of %d groups\n", 100 * s_src.mape(), 100 * s_mod.mape(), rk.first, rk.groups);
  in.summary += b;
  std::fprintf(stderr, "MoE fit on all rows (loss %.5f):", loss);
  for (size_t i = 0; i < x.size(); ++i) std::fprintf(stderr, " %s %.4f", spec.names[i].c_str(), x[i]);
  std::fprintf(stderr, "; a2a_nvl_eff %.4f a2a_net_eff %.4f\n", start.a2a_nvl_eff, start.a2a_net_eff);
}

}  // namespace paratune::accuracy
