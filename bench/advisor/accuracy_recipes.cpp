// The recipe check (docs/accuracy.md): NVIDIA's Megatron-Bridge rows are layouts a vendor tuned by measurement.
// For each (the newest release per model, system, GPU count and precision), the recipe's layout as predicted, its
// rank among the layouts `advise` considers best on the same scenario, and advised/recipe (predicted speed). A
// claimed win above 5 % is a red flag until measured, so the table names the terms it comes from.
#include <algorithm>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "accuracy_sections.h"
#include "accuracy_stats.h"
#include "paratune/advisor/advisor.h"
#include "paratune/advisor/breakdown_terms.h"
#include "paratune/advisor/framework_traits.h"

namespace paratune::accuracy {

namespace {

using advisor::Layout;
using calib::Row;

constexpr double kRedFlag = 1.05;  // advised/recipe above this must be explained by its terms

bool megatron_bridge(const Row& r) {
  return r.source.find("Megatron-Bridge") != std::string::npos && !r.rank_only;
}

// "NVIDIA Megatron-Bridge performance summary (NeMo 26.04.01 container)" -> "26.04.01"; MoE rows carry theirs in id.
std::string recipe_release(const Row& r) {
  const auto at = r.source.find("NeMo ");
  if (at == std::string::npos) return r.id;
  return r.source.substr(at + 5, r.source.find(' ', at + 5) - at - 5);
}

std::string recipe_key(const Row& r) {
  return r.s.model.name + "|" + r.s.cluster.gpu + "|" + std::to_string(r.s.total_gpus()) + "|" +
         advisor::to_string(r.s.training.precision);
}

// The newest release of each recipe.
std::vector<const Row*> newest_recipes(const std::vector<Row>& rows) {
  std::map<std::string, const Row*> newest;
  for (const auto& r : rows) {
    if (!megatron_bridge(r)) continue;
    auto& slot = newest[recipe_key(r)];
    if (!slot || recipe_release(*slot) < recipe_release(r)) slot = &r;
  }
  std::vector<const Row*> out;
  for (const auto& [key, r] : newest) out.push_back(r);
  return out;
}

std::string short_layout(const Layout& l) {
  std::string s = "tp" + std::to_string(l.tp) + " pp" + std::to_string(l.pp) + " dp" + std::to_string(l.dp);
  if (l.cp > 1) s += " cp" + std::to_string(l.cp);
  if (l.ep > 1) s += " ep" + std::to_string(l.ep) + " " + advisor::to_string(l.dispatcher);
  if (l.virtual_stages > 1) s += " v" + std::to_string(l.virtual_stages);
  if (l.first_stage_layers > 0) s += " split " + std::to_string(l.first_stage_layers) + "/" +
                                     std::to_string(l.last_stage_layers);
  s += " mb" + std::to_string(l.micro_batch) + " z" + std::to_string(l.zero_stage) + " " +
       advisor::to_string(l.recompute);
  if (l.recompute == advisor::Recompute::Selective && l.recompute_modules != 0)
    s += " (" + advisor::recompute_modules_to_string(l.recompute_modules) + ")";
  if (l.precision_aware_optimizer()) s += std::string(" moments ") + advisor::to_string(l.optimizer_moments);
  if (l.main_params != advisor::StateDtype::Fp32) s += std::string(" main ") + advisor::to_string(l.main_params);
  if (l.offload_layers > 0) s += " offload " + std::to_string(l.offload_layers);
  return s;
}

// Where the advised plan's predicted gain comes from: the terms the recipe pays more for, largest first.
std::string gain_terms(const advisor::Breakdown& recipe, const advisor::Breakdown& advised, double recipe_s) {
  std::vector<std::pair<double, std::string>> d;
  for (const auto& t : advisor::kBreakdownTerms)
    if (recipe.*t.field - advised.*t.field > 0.01 * recipe_s) d.push_back({recipe.*t.field - advised.*t.field, t.name});
  std::sort(d.rbegin(), d.rend());
  std::string out;
  for (size_t i = 0; i < d.size() && i < 3; ++i)
    out += (i ? ", " : "") + d[i].second + " " + formatted(100 * d[i].first / recipe_s, "%+.0f %%");
  return out.empty() ? "no single term" : out;
}

// The memory features the recipe's own source sets beyond what the summary's table states (the recompute modules
// come with the row: moe_data.cpp). Every Megatron-Bridge DeepSeek-V3 recipe builds on deepseek_v3_pretrain_config,
// which turns on the precision-aware optimizer with bf16 moments and fp32 main parameters:
// NVIDIA-NeMo/Megatron-Bridge v0.4.2 (c8101293) src/megatron/bridge/recipes/deepseek/deepseek_v3.py lines 160-165,
// v0.6.0 src/megatron/bridge/recipes/deepseek/h100/deepseek_v3.py lines 206-210 (the 26.04.01 and 26.08 releases).
calib::Row with_recipe_features(const calib::Row& r) {
  calib::Row out = r;
  if (r.s.model.name == "deepseek-v3" && megatron_bridge(r)) {
    out.l.optimizer_moments = advisor::StateDtype::Bf16;
    out.l.main_params = advisor::StateDtype::Fp32;
  }
  return out;
}

// The recipe's price: what the model says of the recipe's layout (step time, its terms, its memory and the GPU's).
struct Priced {
  double step_s = 0, mem_gib = 0, capacity_gib = 0;
  advisor::Breakdown br;
};

// The recipe's layout priced as the tables price rows (unknown knobs at their fastest, as the row loader does), with
// the stage split advise would give a Megatron pipeline where that is faster: the recipes set their own layouts.
// Priced by the model directly, not through predict(): a recipe may hold a state no plan may (NeMo 1.0's Apex
// optimizer without master weights), which predict() refuses.
Priced recipe_prediction(const Row& r, const advisor::ModelParams& p, Layout* layout, bool* fits) {
  const calib::RowPrediction rp = calib::predict_row(r, p);
  *layout = rp.layout;
  *fits = rp.fits;
  const advisor::Evaluator ev(r.s, r.fw, p);
  auto price = [&](const Layout& l) {
    const advisor::Evaluator::Result res = ev.evaluate(l);
    return Priced{res.step_s, res.mem_gib, ev.capacity_gib(), res.br};
  };
  Priced best = price(*layout);
  // Every framework that takes a per-stage layout (Megatron, NeMo: the Megatron-Bridge recipes run as NeMo rows).
  if (advisor::traits(r.fw).stage_layout && layout->pp > 1) {
    const Layout planned = ev.with_planned_stages(*layout);
    if (planned.first_stage_layers > 0) {
      const Priced q = price(planned);
      if (q.step_s < best.step_s) best = q, *layout = planned;
    }
  }
  return best;
}

struct Check {
  const Row* row = nullptr;
  bool moe = false;
  // The recipe's measured time against its own predictions (dense: leave one source out / in sample; MoE: leave one
  // source out / leave one model out), and whether both predict the recipe faster than measured.
  std::string own_time;
  bool own_optimistic = false;
  double mem_gib = 0, capacity_gib = 0;  // the recipe layout's memory and the GPU's
  Layout recipe, advised;
  bool recipe_fits = true, advised_ok = true;
  int rank = 0, considered = 0;
  double ratio = 0;  // advised/recipe, predicted speed
  std::string terms;
  // The fastest measured run of the same model, system, GPU count and precision (any release, layout, batch), over
  // the recipe's own measurement: > 1 means NVIDIA measured something faster than its newest recipe.
  double measured_best = 1;
  const Row* best_run = nullptr;
};

// Tokens a GPU trains per second in a measured row.
double measured_rate(const Row& r) {
  return double(r.s.training.global_batch) * r.s.model.seq_len / (r.meas_time_s * r.s.total_gpus());
}

// What NVIDIA itself measured of the recipe's model on the same system and GPU count: the evidence a claimed win
// needs before it is more than a red flag.
void set_measured_support(Check* c, const std::vector<Row>& pool) {
  const Row& r = *c->row;
  for (const Row& o : pool) {
    if (!megatron_bridge(o) || recipe_key(o) != recipe_key(r) || o.meas_time_s <= 0) continue;
    const double ratio = measured_rate(o) / measured_rate(r);
    if (ratio > c->measured_best) c->measured_best = ratio, c->best_run = &o;
  }
}

Check check_recipe(const Row& r, const advisor::ModelParams& p) {
  Check c;
  c.row = &r;
  const Row featured = with_recipe_features(r);
  const Priced rec = recipe_prediction(featured, p, &c.recipe, &c.recipe_fits);
  c.mem_gib = rec.mem_gib;
  c.capacity_gib = rec.capacity_gib;
  advisor::Scenario free = r.s;
  free.parallel = {};
  free.training.framework = r.fw;
  advisor::SearchLimits lim;
  lim.params = p;
  lim.top_n = 30;
  lim.time_budget_s = 20;
  try {
    const advisor::Plan plan = advisor::advise(free, lim);
    c.advised = plan.layout;
    c.ratio = rec.step_s / plan.prediction.step_time_s;
    c.considered = 1 + int(plan.alternatives.size());
    c.rank = 1 + (plan.prediction.step_time_s < rec.step_s * 0.999);
    for (const auto& a : plan.alternatives) c.rank += a.prediction.step_time_s < rec.step_s * 0.999;
    c.terms = c.ratio > kRedFlag ? gain_terms(rec.br, plan.prediction.breakdown, rec.step_s) : "";
  } catch (const advisor::NothingFits&) {
    c.advised_ok = false;
  }
  return c;
}

// "+3 % / -2 %": measured time over two predictions of the row, minus 1 (positive: the model is optimistic about the
// recipe itself); both positive marks the check optimistic.
void set_own_time(Check* c, double first_s, double second_s) {
  const double a = throughput_error(*c->row, first_s), b = throughput_error(*c->row, second_s);
  c->own_time = formatted(100 * a, "%+.0f %%") + " / " + formatted(100 * b, "%+.0f %%");
  c->own_optimistic = a > 0 && b > 0;
}

// The MoE recipes: predicted without the row's source and without its model.
void moe_own_time(Check* c, const MoeInputs& moe) {
  const auto so = moe.loso_s.find(c->row->id), mo = moe.lomo_s.find(c->row->id);
  if (so != moe.loso_s.end() && mo != moe.lomo_s.end()) set_own_time(c, so->second, mo->second);
}

// The dense recipes are scored rows of the dense report: predicted without the row's source, and in sample.
void dense_own_time(Check* c, const std::vector<Row>& dense, const HeldOut& held) {
  const size_t i = size_t(c->row - dense.data());
  if (i < held.source.size() && i < held.in_sample.size()) set_own_time(c, held.source[i], held.in_sample[i]);
}

// What the recipe table adds up to: the ratios, the claims above the red flag (dense [0] and MoE [1], and how many
// of them are over recipes both own-time figures predict too fast), their largest terms.
struct Tally {
  int flagged = 0, unfit = 0, scored = 0;
  int supported = 0;  // claims beside a measured run faster than the recipe by more than the red flag
  int claims[2] = {0, 0}, optimistic[2] = {0, 0};
  std::vector<double> ratios;
  std::map<std::string, int> leading;  // the largest term of each claimed win
};

void write_check_row(std::ostream& md, const Check& c, Tally* t) {
  const Row& r = *c.row;
  md << "| " << r.s.model.name << " | " << r.s.cluster.gpu << " | " << r.s.total_gpus() << " | "
     << advisor::to_string(r.s.training.precision) << " | " << short_layout(c.recipe) << " | " << c.own_time << " | "
     << (c.recipe_fits ? "yes" : "**no** (" + formatted(c.mem_gib, "%.1f") + " of " +
                                     formatted(c.capacity_gib, "%.1f") + " GiB)") << " | ";
  if (!c.advised_ok) {
    md << " | nothing fits | | | |\n";
  } else {
    md << (c.rank > c.considered ? "> " + std::to_string(c.considered) : std::to_string(c.rank)) << " | "
       << short_layout(c.advised) << " | " << formatted(c.ratio, "%.3f") << " | " << c.terms << " | "
       << (c.best_run ? formatted(c.measured_best, "%.3f") + " (" + c.best_run->id + ")" : "") << " |\n";
    t->ratios.push_back(c.ratio);
    if (c.ratio > kRedFlag) {
      ++t->flagged;
      ++t->leading[c.terms.substr(0, c.terms.find(' '))];
      if (!c.own_time.empty()) ++t->claims[c.moe], t->optimistic[c.moe] += c.own_optimistic;
      t->supported += c.measured_best > kRedFlag;
    }
  }
  t->unfit += !c.recipe_fits;
  ++t->scored;
}

void write_summary(std::ostream& md, Tally* t) {
  std::sort(t->ratios.begin(), t->ratios.end());
  const double median = t->ratios.empty() ? 0 : t->ratios[t->ratios.size() / 2];
  md << "\n" << t->scored << " recipes: median advised/recipe " << formatted(median, "%.3f") << "; " << t->flagged
     << " claim a win above " << formatted(100 * (kRedFlag - 1), "%.0f") << " %; " << t->unfit
     << " recipe layouts the memory model rejects (the fits column gives a rejected layout's memory and the GPU's). Of "
     << t->claims[0] << " dense claims, " << t->optimistic[0] << ", and of " << t->claims[1] << " MoE claims, "
     << t->optimistic[1]
     << ", are over recipes whose own time the model already predicts too fast (both own-time figures positive): "
        "those rest on the advised plan's price, not on over-pricing the recipe; a claim beside a negative own-time "
        "figure may rest on over-pricing the recipe. "
     << t->supported << " of the " << t->flagged << " claims have a measured run of the same model, system, GPU count "
        "and precision faster than the recipe by more than "
     << formatted(100 * (kRedFlag - 1), "%.0f")
     << " % (the *measured* column): there NVIDIA's own measurement says the recipe is not the fastest known "
        "layout. The largest term of each claim:";
  for (const auto& [term, n] : t->leading) md << " " << term << " " << n << ";";
  if (t->leading.count("pp_imbalance"))
    md << " `pp_imbalance` is what the recipe's slowest pipeline rank carries beyond an even share (the embedding, "
          "the LM head and loss, MTP) after the stage split `advise` would plan, in whole layers with at least one "
          "a rank: a layout without a pipeline, or with fewer stages, avoids it;";
  if (t->leading.count("ep_comm"))
    md << " `ep_comm` rests on the dispatcher prices no same-release row can check (the MoE ranking above);";
  md << "\n";
}

}  // namespace

void write_recipes(std::ostream& md, const std::vector<Row>& dense, const HeldOut& held, const MoeInputs& moe,
                   const advisor::ModelParams& dense_params) {
  std::vector<Check> checks;
  for (const Row* r : newest_recipes(dense)) {
    checks.push_back(check_recipe(*r, dense_params));
    dense_own_time(&checks.back(), dense, held);
    set_measured_support(&checks.back(), dense);
  }
  for (const Row* r : newest_recipes(moe.rows)) {
    checks.push_back(check_recipe(*r, moe.shipped));
    checks.back().moe = true;
    moe_own_time(&checks.back(), moe);
    set_measured_support(&checks.back(), moe.rows);
  }
  md << "\n## Recipe check: advise against NVIDIA's tuned recipes\n\n"
     << "The Megatron-Bridge rows are layouts NVIDIA tuned by measurement. For the newest release of each (model, "
        "system, GPU count, precision): the recipe's layout as predicted (unknown knobs at their fastest; a Megatron "
        "pipeline with the stage split `advise` would plan, since the recipes set their own layouts; the memory features "
        "the recipe's source sets: its recompute modules, and for DeepSeek-V3 the precision-aware optimizer with bf16 "
        "moments and fp32 main parameters, NVIDIA-NeMo/Megatron-Bridge `recipes/deepseek/deepseek_v3.py`; NeMo 1.0's "
        "Apex optimizer with bf16 moments and no master copy where the row ran it, `main bf16`, which no plan may "
        "hold, data/calibration/README.md), its rank among "
        "the 31 best layouts `advise` finds on the same scenario left free, and advised/recipe, the predicted speed "
        "of the advised plan over the recipe's. *Own time* is the recipe's measured time over its own prediction "
        "(`measured / predicted - 1`, positive = the model is optimistic about the recipe itself): for the dense "
        "recipes, scored rows of the tables above, predicted out of sample (leave one source out) / in sample, with "
        "Megatron's own stage split as the rows are scored (where the table plans a faster split, it prices the "
        "recipe faster still); for the MoE recipes, out of sample twice (leave one "
        "source out / leave one model out). Above "
     << formatted(kRedFlag, "%.2f")
     << " the model claims a win over the vendor: the last column names the terms the recipe pays more for "
        "(share of the recipe's step); such a claim is a red flag for the model until measured. *Measured* is the "
        "fastest run NVIDIA measured of the same model, system, GPU count and precision in any release of the "
        "tables, at its own global batch (tokens per second per GPU, over the recipe's own; blank where none is "
        "faster).\n\n"
     << "| model | system | GPUs | precision | recipe layout | own time | fits | rank | advised | advised/recipe | "
        "claimed win from | measured |\n"
     << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  Tally t;
  for (const auto& c : checks) write_check_row(md, c, &t);
  write_summary(md, &t);
}

}  // namespace paratune::accuracy
