// The MoE section's scaling split: rows of one model, GPU type and layout measured at several GPU counts, so at
// several micro-batch counts per step (m = global batch / (dp x micro-batch)). A step is m micro-batches of work
// plus what a step costs once (pipeline fill and drain, the gradient reduction and parameter gather left exposed,
// the optimizer, synchronisation); t = a m + b separates the two, measured and predicted, so an error can be put on
// the per-micro-batch terms or on the per-step ones.
#include <algorithm>
#include <map>
#include <set>

#include "accuracy_sections.h"
#include "accuracy_stats.h"

namespace paratune::accuracy {

namespace {

struct Line {
  double a = 0, b = 0;  // seconds per micro-batch, seconds per step
};

// Least squares of t over m (two or more distinct m).
Line fit_line(const std::vector<double>& m, const std::vector<double>& t) {
  const double n = double(m.size());
  double sm = 0, st = 0, smm = 0, smt = 0;
  for (size_t i = 0; i < m.size(); ++i) sm += m[i], st += t[i], smm += m[i] * m[i], smt += m[i] * t[i];
  Line l;
  l.a = (n * smt - sm * st) / (n * smm - sm * sm);
  l.b = (st - l.a * sm) / n;
  return l;
}

}  // namespace

void write_moe_scaling(std::ostream& md, const std::vector<Row>& rows, const std::vector<double>& loso) {
  std::map<std::string, std::vector<size_t>> groups;  // model | GPU | layout -> scored rows
  for (size_t i = 0; i < rows.size(); ++i)
    if (!rows[i].rank_only) groups[calib::moe_model_of(rows[i]) + " | " + rows[i].s.cluster.gpu + " | " + expert_layout(rows[i].l)].push_back(i);
  md << "### Per micro-batch and per step\n\n"
     << "Rows of one model, GPU type and layout measured at several GPU counts run different numbers of "
        "micro-batches per step (m); a step is m micro-batches of work plus what it costs once (pipeline fill and "
        "drain, the exposed gradient reduction and parameter gather, the optimizer, synchronisation). A line "
        "t = a m + b through the measured times and one through the predicted ones (leave one source out) "
        "separate the two:\n\n"
     << "| model | GPU | layout | rows (GPUs: m) | measured a (ms) | predicted a (ms) | measured b (s) | predicted b "
        "(s) |\n|---|---|---|---|---|---|---|---|\n";
  int shown = 0;
  for (const auto& [key, idx] : groups) {
    std::vector<double> m, meas, pred;
    std::set<int> distinct;
    std::string list;
    for (size_t i : idx) {
      const Row& r = rows[i];
      const int micro = std::max(1, r.s.training.global_batch / std::max(1, r.l.dp * r.l.micro_batch));
      m.push_back(micro), meas.push_back(r.meas_time_s), pred.push_back(loso[i]);
      distinct.insert(micro);
      list += (list.empty() ? "" : ", ") + std::to_string(r.s.cluster.nodes * r.s.cluster.gpus_per_node) + ": " +
              std::to_string(micro);
    }
    if (distinct.size() < 2) continue;
    const Line lm = fit_line(m, meas), lp = fit_line(m, pred);
    md << "| " << key << " | " << list << " | " << formatted(1e3 * lm.a, "%.1f") << " | "
       << formatted(1e3 * lp.a, "%.1f") << " | " << formatted(lm.b, "%.2f") << " | " << formatted(lp.b, "%.2f")
       << " |\n";
    ++shown;
  }
  if (shown == 0) md << "| (no model, GPU and layout measured at two micro-batch counts) | | | | | | | |\n";
  md << "\nWhere the measured and predicted *a* agree and *b* does not, the model's per-micro-batch terms hold and "
        "what it misses is paid once a step; such a cost weighs most at the largest scale, where m is smallest.\n\n";
}

}  // namespace paratune::accuracy
