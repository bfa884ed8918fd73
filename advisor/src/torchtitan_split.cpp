// torchtitan's pipeline stages in the search and in predict (torchtitan_split.h).
#include "torchtitan_split.h"

#include <cstdlib>
#include <limits>

namespace paratune::advisor {

namespace {

bool has_split(const Layout& l) { return l.first_stage_layers > 0 || l.last_stage_layers > 0; }

}  // namespace

bool torchtitan_splits_stages(const Scenario& s, Framework f, const Layout& l) {
  return f == Framework::Torchtitan && l.pp > 1 && s.training.pipeline_split != PipelineSplit::Balanced;
}

Layout with_torchtitan_split(const Scenario& s, Framework f, Layout l) {
  if (!torchtitan_splits_stages(s, f, l) || has_split(l)) return l;
  // ZBVZeroBubble places the stages in a V (pipeline_module_split style "v": rank 0 holds the first and the last
  // stage); the rank counts below are the looped placement's, so none are claimed for it (the model keeps equal
  // counts: docs/model.md §5).
  if (schedule_of(l) == PipelineSchedule::Zbv) return l;
  const auto split = torchtitan_default_split(s.model.layers, l.pp, std::max(1, l.virtual_stages));
  if (!split) return l;
  l.first_stage_layers = split->rank_layers.front();
  l.last_stage_layers = split->rank_layers.back();
  return l;
}

std::optional<Layout> torchtitan_split_near(const Scenario& s, const Layout& l, int first, int last) {
  const TorchtitanCandidate* best = nullptr;
  int best_distance = std::numeric_limits<int>::max();
  const std::vector<TorchtitanCandidate> all = torchtitan_splits(s.model.layers, l.pp, l.virtual_stages);
  for (const TorchtitanCandidate& c : all) {
    const int d = std::abs(c.rank_layers.front() - first) + std::abs(c.rank_layers.back() - last);
    if (d < best_distance) best_distance = d, best = &c;
  }
  if (!best || (best->rank_layers.front() == l.first_stage_layers && best->rank_layers.back() == l.last_stage_layers))
    return std::nullopt;
  Layout out = l;
  out.first_stage_layers = best->rank_layers.front();
  out.last_stage_layers = best->rank_layers.back();
  return out;
}

std::string torchtitan_split_problem(const Scenario& s, const Layout& l) {
  if (l.pp < 2) return "";
  const int L = s.model.layers, v = std::max(1, l.virtual_stages);
  if (has_split(l)) {
    if (torchtitan_split_for(L, l.pp, v, l.first_stage_layers, l.last_stage_layers)) return "";
    return "torchtitan splits the stages itself (pipeline_parallel_first/last_stage_less_layers): no weights give " +
           std::to_string(l.first_stage_layers) + " layers on the first rank and " +
           std::to_string(l.last_stage_layers) + " on the last (pp " + std::to_string(l.pp) + ", " + std::to_string(v) +
           " stages a rank)";
  }
  if (torchtitan_default_split(L, l.pp, v)) return "";
  std::string why;
  torchtitan_rank_layers(L, l.pp, v, {}, &why);
  return "torchtitan cannot build " + std::to_string(l.pp * v) + " stages of " + std::to_string(L) +
         " layers with any weights of its ends (with its defaults: " + why + ")";
}

TorchtitanSplit torchtitan_split_of(const Scenario& s, const Layout& l) {
  const int L = s.model.layers, v = std::max(1, l.virtual_stages);
  std::optional<TorchtitanCandidate> c;
  if (has_split(l)) c = torchtitan_split_for(L, l.pp, v, l.first_stage_layers, l.last_stage_layers);
  if (!c) c = torchtitan_default_split(L, l.pp, v);
  return c ? c->split : TorchtitanSplit{};  // with the layers per stage those weights need
}

std::string torchtitan_split_note(const Scenario& s, const Layout& l) {
  const TorchtitanSplit split = torchtitan_split_of(s, l);
  const std::vector<int> ranks = torchtitan_rank_layers(s.model.layers, l.pp, l.virtual_stages, split, nullptr);
  std::string counts;
  for (int n : ranks) counts += (counts.empty() ? "" : ", ") + std::to_string(n);
  const bool defaults = split.first_less == 1 && split.last_less == 1;
  const int v = std::max(1, l.virtual_stages);
  const bool reachable = torchtitan_layers_per_stage(s.model.layers, l.pp, v, 1, 1, nullptr) >= 0;
  const std::string why = defaults    ? " (its defaults)"
                          : reachable ? " (moved from its defaults of 1 towards a cost balance of the embedding and "
                                        "the output layer)"
                                      : " (with its defaults of 1 no pipeline_parallel_layers_per_stage gives " +
                                            std::to_string(l.pp * v) + " stages)";
  return "pipeline stages as torchtitan splits them with pipeline_parallel_first_stage_less_layers = " +
         std::to_string(split.first_less) +
         " and pipeline_parallel_last_stage_less_layers = " + std::to_string(split.last_less) + why + ": " + counts +
         " layers on ranks 0 to " + std::to_string(l.pp - 1);
}

}  // namespace paratune::advisor
