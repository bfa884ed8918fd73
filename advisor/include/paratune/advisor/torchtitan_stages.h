// torchtitan's pipeline stage split, as its pinned versions compute it (v0.2.2 and main,
// torchtitan/distributed/pipeline_parallel.py: _get_pipeline_metadata and _generate_llm_fqn_per_model_part).
// torchtitan has no explicit layout on its command line: the embedding and the output layer count as
// `first_stage_less_layers` and `last_stage_less_layers` transformer layers (both 1 by default), the
// layers + both weights are spread evenly over the pp x v stages (the first stages take the remainder), and the
// stage count comes from the schedule (1 a rank for 1F1B, 2 for Interleaved1F1B) or from
// ceil((layers + weights) / pipeline_parallel_layers_per_stage). Stage i runs on rank i mod pp.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace paratune::advisor {

// The two weights torchtitan's split takes, and the layers-per-stage setting that gives the wanted stage count
// (0: leave it unset, the schedule's default count is the wanted one).
struct TorchtitanSplit {
  int first_less = 1, last_less = 1;
  int layers_per_stage = 0;
};

// Transformer layers of each stage for `stages` stages, or empty with torchtitan's reason in *why.
std::vector<int> torchtitan_stage_layers(int layers, int stages, int first_less, int last_less, std::string* why);

// The layers-per-stage setting for pp x v stages under these weights (v = 1: 1F1B, v >= 2: Interleaved1F1B);
// -1 with the reason when no setting gives that count.
int torchtitan_layers_per_stage(int layers, int pp, int v, int first_less, int last_less, std::string* why);

// Layers each rank holds (stage i on rank i mod pp); empty with the reason when torchtitan refuses the split.
std::vector<int> torchtitan_rank_layers(int layers, int pp, int v, const TorchtitanSplit& split, std::string* why);

// Every split torchtitan accepts for pp x v (weights 0 ... the layers a stage gets), each with its ranks' layers.
struct TorchtitanCandidate {
  TorchtitanSplit split;
  std::vector<int> rank_layers;
};
std::vector<TorchtitanCandidate> torchtitan_splits(int layers, int pp, int v);

// The weights a plan uses when nothing asks for others: torchtitan's defaults (1 and 1) where pp x v stages can be
// reached with them, else the reachable weights nearest them; none when no weights reach pp x v stages.
std::optional<TorchtitanCandidate> torchtitan_default_split(int layers, int pp, int v);

// The split whose ranks hold `first` layers on the first rank and `last` on the last (the middle ranks the rest),
// the default weights preferred; none when torchtitan cannot produce it.
std::optional<TorchtitanCandidate> torchtitan_split_for(int layers, int pp, int v, int first, int last);

}  // namespace paratune::advisor
