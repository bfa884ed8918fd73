// torchtitan's pipeline stages in the search and in predict (torchtitan_stages.h has its arithmetic): a torchtitan
// layout carries the layers torchtitan's own split gives its first and last ranks, so the model prices what the
// job will run, and the search may move torchtitan's two weights towards a cost balance.
#pragma once

#include <optional>
#include <string>

#include "paratune/advisor/plan.h"
#include "paratune/advisor/scenario.h"
#include "paratune/advisor/torchtitan_stages.h"

namespace paratune::advisor {

// torchtitan splits this layout's stages itself: torchtitan, pp > 1, and no cost-balanced split asked of the model
// (pipeline_split = balanced describes other stacks' runs).
bool torchtitan_splits_stages(const Scenario& s, Framework f, const Layout& l);

// The layout with the first and last ranks' layers of torchtitan's own split (its default weights where they reach
// the layout's stage count, else the nearest weights that do); unchanged where torchtitan does not split it, the
// layout already carries a split, or no weights reach its stage count.
Layout with_torchtitan_split(const Scenario& s, Framework f, Layout l);

// The torchtitan split whose first and last ranks come nearest `first` and `last` (a cost balance), if it differs
// from the layout's.
std::optional<Layout> torchtitan_split_near(const Scenario& s, const Layout& l, int first, int last);

// Why torchtitan cannot build the layout's stages ("" when it can): first/last ranks' layers no weights give, or a
// stage count no pipeline_parallel_layers_per_stage gives.
std::string torchtitan_split_problem(const Scenario& s, const Layout& l);

// The weights and the layers-per-stage setting torchtitan needs for the layout's split (its defaults where the
// layout carries none).
TorchtitanSplit torchtitan_split_of(const Scenario& s, const Layout& l);

// What the plan notes say: the weights, and the layers each rank holds with them.
std::string torchtitan_split_note(const Scenario& s, const Layout& l);

}  // namespace paratune::advisor
