// torchtitan's stage split (torchtitan_stages.h): the arithmetic of its pipeline_parallel.py, with its refusals as
// reasons instead of ValueError, so the search only plans splits torchtitan builds.
#include "paratune/advisor/torchtitan_stages.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <tuple>

namespace paratune::advisor {

namespace {

int ceil_div(int a, int b) { return (a + b - 1) / b; }

// The weights the search tries: torchtitan's default (1) and the lighter or heavier ends a cost balance asks for;
// an end worth more than a few layers (DeepSeek-V3's MTP + head is about four) is not needed.
constexpr int kMaxWeight = 8;

}  // namespace

std::vector<int> torchtitan_stage_layers(int layers, int stages, int first_less, int last_less, std::string* why) {
  auto refuse = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return std::vector<int>{};
  };
  if (stages < 1) return refuse("Number of stages must be at least 1");
  if (stages == 1) return {layers};
  const int effective = layers + first_less + last_less;
  if (stages > effective)
    return refuse("Number of stages (" + std::to_string(stages) + ") cannot be greater than effective layers (" +
                  std::to_string(effective) + ")");
  const int per = effective / stages, extra = effective % stages;
  if (per == 0) return refuse("Configuration would result in empty stages");
  if (first_less > per)
    return refuse("input_weight (" + std::to_string(first_less) + ") exceeds minimum layers per stage (" +
                  std::to_string(per) + ")");
  if (last_less > per)
    return refuse("output_weight (" + std::to_string(last_less) + ") exceeds minimum layers per stage (" +
                  std::to_string(per) + ")");
  std::vector<int> out(stages, 0);
  int left = layers;
  for (int i = 0; i < stages; ++i) {
    int take = per + (i < extra ? 1 : 0);
    if (i == 0) take -= first_less;
    else if (i == stages - 1) take -= last_less;
    out[i] = std::clamp(take, 0, left);
    left -= out[i];
  }
  return out;
}

int torchtitan_layers_per_stage(int layers, int pp, int v, int first_less, int last_less, std::string* why) {
  if (v <= 2) return 0;  // the schedule's default: 1 stage a rank for 1F1B, 2 for Interleaved1F1B
  const int effective = layers + first_less + last_less, want = pp * v;
  for (int per_stage = 1; per_stage <= effective; ++per_stage)
    if (ceil_div(effective, per_stage) == want) return per_stage;
  if (why)
    *why = "no pipeline_parallel_layers_per_stage n gives ceil((" + std::to_string(layers) + " + " +
           std::to_string(first_less) + " + " + std::to_string(last_less) + ") / n) = " + std::to_string(want) +
           " stages (pp " + std::to_string(pp) + " x " + std::to_string(v) + " a rank)";
  return -1;
}

std::vector<int> torchtitan_rank_layers(int layers, int pp, int v, const TorchtitanSplit& split, std::string* why) {
  pp = std::max(1, pp);
  v = std::max(1, v);
  if (torchtitan_layers_per_stage(layers, pp, v, split.first_less, split.last_less, why) < 0) return {};
  const std::vector<int> stages = torchtitan_stage_layers(layers, pp * v, split.first_less, split.last_less, why);
  if (stages.empty()) return {};
  std::vector<int> ranks(pp, 0);
  for (size_t i = 0; i < stages.size(); ++i) ranks[i % pp] += stages[i];
  return ranks;
}

namespace {

std::vector<TorchtitanCandidate> enumerate_splits(int layers, int pp, int v) {
  std::vector<TorchtitanCandidate> out;
  for (int a = 0; a <= kMaxWeight; ++a)
    for (int b = 0; b <= kMaxWeight; ++b) {
      TorchtitanSplit split{a, b, 0};
      split.layers_per_stage = torchtitan_layers_per_stage(layers, pp, v, a, b, nullptr);
      std::vector<int> ranks = torchtitan_rank_layers(layers, pp, v, split, nullptr);
      if (ranks.empty() || *std::min_element(ranks.begin(), ranks.end()) < 1) continue;
      out.push_back({split, std::move(ranks)});
    }
  return out;
}

}  // namespace

// The search asks for the same (layers, pp, v) for every layout it evaluates: remembered per thread (a pure
// function of its arguments; bounded).
std::vector<TorchtitanCandidate> torchtitan_splits(int layers, int pp, int v) {
  thread_local std::map<std::tuple<int, int, int>, std::vector<TorchtitanCandidate>> seen;
  const auto key = std::make_tuple(layers, pp, v);
  if (auto it = seen.find(key); it != seen.end()) return it->second;
  if (seen.size() > 4096) seen.clear();
  return seen.emplace(key, enumerate_splits(layers, pp, v)).first->second;
}

namespace {

// Of the splits torchtitan accepts that `wanted` admits, the one whose weights are nearest its defaults of 1 (the
// least surprising arguments).
template <class Wanted>
std::optional<TorchtitanCandidate> nearest_defaults(int layers, int pp, int v, Wanted wanted) {
  std::optional<TorchtitanCandidate> best;
  int best_distance = std::numeric_limits<int>::max();
  for (const TorchtitanCandidate& c : torchtitan_splits(layers, pp, v)) {
    const int distance = std::abs(c.split.first_less - 1) + std::abs(c.split.last_less - 1);
    if (wanted(c) && distance < best_distance) best_distance = distance, best = c;
  }
  return best;
}

}  // namespace

std::optional<TorchtitanCandidate> torchtitan_default_split(int layers, int pp, int v) {
  return nearest_defaults(layers, pp, v, [](const TorchtitanCandidate&) { return true; });
}

std::optional<TorchtitanCandidate> torchtitan_split_for(int layers, int pp, int v, int first, int last) {
  return nearest_defaults(layers, pp, v, [&](const TorchtitanCandidate& c) {
    return c.rank_layers.front() == first && c.rank_layers.back() == last;
  });
}

}  // namespace paratune::advisor
