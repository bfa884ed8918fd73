// Held-out predictions and the out-of-sample tables of docs/accuracy.md.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <set>
#include <thread>

#include "accuracy_sections.h"
#include "accuracy_stats.h"

namespace paratune::accuracy {

namespace {

using Key = std::function<std::string(const Row&)>;

const Key kSource = [](const Row& r) { return r.source; };
const Key kGeneration = [](const Row& r) { return r.gen; };
const Key kStack = [](const Row& r) { return r.stack; };

// For each value of `key`: refit without the scored rows of that value, predict every row of it (rank-only rows
// too, for the ranking). Slices run on two threads: each refit is independent.
std::vector<double> held_out_by(const Report& rep, const Key& key) {
  std::vector<std::string> values;
  for (const auto& r : rep.rows)
    if (std::find(values.begin(), values.end(), key(r)) == values.end()) values.push_back(key(r));
  std::vector<double> out(rep.rows.size(), 0);
  auto work = [&](size_t first) {
    for (size_t v = first; v < values.size(); v += 2) {
      const std::string held = values[v];
      double loss = 0;
      const ModelParams p = calib::fit_where(rep.rows, rep.priors, [&](const Row& r) { return key(r) != held; }, &loss);
      for (size_t i = 0; i < rep.rows.size(); ++i)
        if (key(rep.rows[i]) == held) out[i] = calib::predict_row(rep.rows[i], p).time_s;
    }
  };
  std::thread other(work, 1);
  work(0);
  other.join();
  return out;
}

void table_by(std::ostream& md, const Report& rep, const Key& key, const std::vector<double>& pred,
              const char* what, Stats* all) {
  std::map<std::string, Stats> per;
  for (size_t i = 0; i < rep.rows.size(); ++i) {
    const Row& r = rep.rows[i];
    if (r.rank_only) continue;
    const double e = throughput_error(r, pred[i]);
    per[key(r)].add(e);
    all->add(e);
  }
  md << "| held-out " << what << " | rows | MAPE | median APE | signed median | over-predicted | max error |\n"
     << "|---|---|---|---|---|---|---|\n";
  for (const auto& [k, st] : per) md << "| " << k << " | " << stats_cells(st) << " |\n";
  md << "| **all (each row predicted without its " << what << ")** | " << stats_cells(*all, true) << " |\n\n";
}

}  // namespace

HeldOut held_out_predictions(const Report& rep) {
  HeldOut h;
  h.source = held_out_by(rep, kSource);
  h.generation = held_out_by(rep, kGeneration);
  h.stack = held_out_by(rep, kStack);
  for (const auto& r : rep.rows) {
    h.in_sample.push_back(calib::predict_row(r, rep.params).time_s);
    h.prior.push_back(calib::predict_row(r, rep.priors).time_s);
  }
  return h;
}

void write_out_of_sample(std::ostream& md, Report& rep, const HeldOut& held) {
  md << "## Out of sample\n\n"
     << "Each slice is refitted from the physical priors **without** its rows, then predicts them; a parameter only "
        "the held-out rows constrain stays at its prior (e.g. `blackwell_vs_hopper` when Blackwell is held out). "
        "Error on throughput, `measured time / predicted time - 1`: positive = the model is optimistic. "
        "*Signed median* and *over-predicted* (the share of rows the model predicts faster than measured) show "
        "the bias; MAPE alone hides it.\n\n";
  Stats src, gen, stk;
  md << "### Leave one source out\n\n";
  table_by(md, rep, kSource, held.source, "source", &src);
  md << "Sources F (NeMo, H100) and G (the Megatron-Bridge archive) are the same publisher's tables at different "
        "releases; G holds only rows F does not (data/calibration/README.md), most of them Blackwell.\n\n";
  md << "### Leave one GPU generation out\n\n";
  table_by(md, rep, kGeneration, held.generation, "generation", &gen);
  md << "### Leave one framework out\n\n";
  table_by(md, rep, kStack, held.stack, "framework", &stk);
  md << "nanotron rows run as the model's PyTorch-native stack (`torchtitan`: eager kernels, FlashAttention-2, no "
        "TP overlap); held out, the eager stacks' terms come from the Composer FSDP rows (A100) alone and "
        "`eager_hopper_eff`, which only H100 rows of an eager stack constrain, stays at its prior; and the other way "
        "round.\n\n";
  Stats prior;
  for (size_t i = 0; i < rep.rows.size(); ++i)
    if (!rep.rows[i].rank_only) prior.add(throughput_error(rep.rows[i], held.prior[i]));
  md << "With the physical priors only (no fitting at all): " << stats_sentence(prior) << ".\n\n";
  char b[256];
  std::snprintf(b, sizeof b, "out of sample: leave-one-source-out MAPE %.1f %%, generation %.1f %%, framework %.1f %%\n",
                100 * src.mape(), 100 * gen.mape(), 100 * stk.mape());
  rep.summary += b;
}

}  // namespace paratune::accuracy
